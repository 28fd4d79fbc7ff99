// The approval window's page script (approve.html, served at /approve on the frame origin; decision
// 1505): the frame opens it when the visitor asks to approve a request (approvalPage.ts).

import { serveApprovalWindow } from "./approvalPage";

serveApprovalWindow(window, document);

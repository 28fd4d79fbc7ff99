// What the frame shows while a request waits for the visitor, and the approval window it opens for
// the decision (decision 1505). The frame sits in the host page, and a host page can hide it from
// the visitor without the browser reporting it (a mask or an inward outline on its iframe,
// decision 1504), then have the visitor click blind. So nothing in the frame approves: it shows
// what is asked, Reject, and a button that opens a window of the frame origin (approve.html,
// approvalPage.ts) where the visitor approves or rejects. A blind click can only open that window,
// in front of the host page and outside its reach.
//
// The frame and the window talk only to each other: the frame takes messages from the window it
// opened (its WindowProxy) on its own origin, the window from its opener on its own origin, and
// every decision names the request's nonce. The window's name is random and the window clears it,
// so the host page (which shares the browsing context group) cannot navigate it by name.
//
// Kept from the page it replaces: a request that arrives while another waits for the visitor is
// refused (-32002, as wallets answer a request while one is pending), never queued or swapped in; a
// request still being read (an eth_sendTransaction being filled from the chain) when the host hid
// the page (HIDE_APPROVAL) is rejected without being shown (`ticket`).

import { requestRows } from "./approvalPage";
import { APPROVAL_WINDOW_VERSION, isApprovalWindowText, newMessageId, readApprovalWindowMessage, type ApprovalShowMessage, type Theme } from "./protocol";
import { WalletRefusal } from "./refusal";
import type { ApprovalText } from "./wallet";

export const APPROVAL_PENDING = -32002;
const INVALID_PARAMS = -32602;

/** The approval window's page on the frame origin (embedded/src/routes.rs). */
export const APPROVAL_WINDOW_PATH = "/approve";
export const APPROVAL_WINDOW_FEATURES = "popup,width=440,height=680";

/** The approval window's first row: the origin of the page that embeds the frame. */
export const SITE_ROW = "Site";

export const OPEN_WINDOW_LABEL = "Approve in a new window";
export const WINDOW_OPEN_HINT = "Approve or reject in the Vestibule window.";
export const WINDOW_BLOCKED_HINT = "The browser blocked the approval window. Allow pop-ups for this site, then try again.";

/** How often the frame looks whether the visitor closed the window without deciding. */
export const WINDOW_POLL_MS = 500;

export type OpenWindow = (url: string, name: string) => Window | null;

export function createApprovalRequester(
  doc: Document,
  root: HTMLElement,
  {
    origin = doc.location.origin,
    openWindow = (url, name) => doc.defaultView?.open(url, name, APPROVAL_WINDOW_FEATURES) ?? null,
    newNonce = newMessageId,
    site = null,
  }: { origin?: string; openWindow?: OpenWindow; newNonce?: () => string; site?: string | null } = {},
) {
  type Pending = { resolve: (approved: boolean) => void; nonce: string; text: ApprovalText; hint: HTMLElement; window: Window | null; poll?: ReturnType<typeof setInterval> };
  let pending: Pending | null = null;
  // Bumped by `cancel` (the host hid the page): requests started before then are not shown.
  let epoch = 0;
  let theme: Theme = "light";

  const closeWindow = (p: Pending) => {
    clearInterval(p.poll);
    p.window?.close();
    p.window = null;
  };

  const settle = (approved: boolean) => {
    const p = pending;
    if (!p) return;
    pending = null;
    closeWindow(p);
    root.replaceChildren();
    root.hidden = true;
    p.resolve(approved);
  };

  const openApprovalWindow = () => {
    const p = pending;
    if (!p) return;
    if (p.window && !p.window.closed) return p.window.focus();
    const opened = openWindow(`${origin}${APPROVAL_WINDOW_PATH}`, `vestibule-approval-${p.nonce}`);
    if (!opened) {
      p.hint.textContent = WINDOW_BLOCKED_HINT;
      return;
    }
    p.window = opened;
    p.hint.textContent = WINDOW_OPEN_HINT;
    clearInterval(p.poll);
    // Closed without a decision: the request still waits, and the button opens a new window.
    p.poll = setInterval(() => {
      if (pending !== p || !opened.closed) return;
      closeWindow(p);
      p.hint.textContent = "";
    }, WINDOW_POLL_MS);
  };

  doc.defaultView?.addEventListener("message", (event) => {
    const p = pending;
    if (!p?.window || event.source !== p.window || event.origin !== origin) return;
    const message = readApprovalWindowMessage(event.data);
    if (!message) return;
    if (message.type === "APPROVAL_WINDOW_READY") {
      // The window stands apart from the page that asked: it names that page's origin (the browser's
      // word for it, not the page's) above what is asked.
      const text: ApprovalText = site ? { title: p.text.title, rows: [[SITE_ROW, site], ...p.text.rows] } : p.text;
      const show: ApprovalShowMessage = { vestibuleApproval: APPROVAL_WINDOW_VERSION, type: "APPROVAL_SHOW", nonce: p.nonce, theme, text };
      p.window.postMessage(show, origin);
    } else if (message.nonce === p.nonce) {
      settle(message.approved);
    }
  });
  // The frame goes away (the host removed it, or reloads): its window has nobody to answer.
  doc.defaultView?.addEventListener("pagehide", () => pending && closeWindow(pending));

  return {
    setTheme(next: Theme) {
      theme = next;
      doc.documentElement.dataset.theme = next;
    },
    /** Taken when a request arrives; `ask` with a ticket from before the last `cancel` answers no. */
    ticket: () => epoch,
    ask(text: ApprovalText, ticket = epoch): Promise<boolean> {
      if (ticket !== epoch) return Promise.resolve(false);
      if (pending) return Promise.reject(new WalletRefusal(APPROVAL_PENDING, "Another request is waiting for approval in the embedded wallet"));
      // With the site's row, as the window will get it: what the window would refuse to show is
      // refused here, never left waiting on a window that cannot show it.
      if (!isApprovalWindowText(site ? { title: text.title, rows: [[SITE_ROW, site], ...text.rows] } : text)) {
        return Promise.reject(new WalletRefusal(INVALID_PARAMS, "The request has more to show than the approval window can"));
      }
      const section = doc.createElement("section");
      section.setAttribute("aria-label", "Request waiting for approval");
      const title = doc.createElement("h1");
      title.textContent = text.title;
      const actions = doc.createElement("div");
      actions.className = "actions";
      const reject = doc.createElement("button");
      reject.type = "button";
      reject.textContent = "Reject";
      const open = doc.createElement("button");
      open.type = "button";
      open.textContent = OPEN_WINDOW_LABEL;
      open.className = "primary";
      actions.append(reject, open);
      const hint = doc.createElement("p");
      hint.className = "hint";
      hint.setAttribute("role", "status");
      section.append(title, requestRows(doc, text), actions, hint);
      root.replaceChildren(section);
      root.hidden = false;
      return new Promise<boolean>((resolve) => {
        pending = { resolve, nonce: newNonce(), text, hint, window: null };
        reject.addEventListener("click", () => settle(false), { once: true });
        open.addEventListener("click", openApprovalWindow);
      });
    },
    /** The host hid the frame (the request was cancelled): an open question is a rejection (its
     * window closes), and a request still being read is not shown. */
    cancel() {
      epoch += 1;
      settle(false);
    },
  };
}

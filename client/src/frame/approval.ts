// The approval page the frame draws over the ApproveTransaction view (the host places the frame
// there): what is asked, and "Approve" / "Reject". It is drawn here, on the frame's origin, so a
// script of the host page cannot press Approve for the visitor: the host can only show or hide it.

import type { ApprovalText } from "./wallet";
import type { Theme } from "./protocol";

/** Shows `text` in `root` until the visitor decides; resolves true for Approve. A newer call
 * replaces (and rejects) the older one. */
export function createApprovalPage(doc: Document, root: HTMLElement) {
  let pending: ((approved: boolean) => void) | null = null;
  const settle = (approved: boolean) => {
    const resolve = pending;
    pending = null;
    root.replaceChildren();
    root.hidden = true;
    resolve?.(approved);
  };
  return {
    setTheme(theme: Theme) {
      doc.documentElement.dataset.theme = theme;
    },
    ask(text: ApprovalText): Promise<boolean> {
      if (pending) settle(false);
      const section = doc.createElement("section");
      section.setAttribute("aria-label", "Approve request");
      const title = doc.createElement("h1");
      title.textContent = text.title;
      const list = doc.createElement("dl");
      for (const [label, value] of text.rows) {
        const row = doc.createElement("div");
        const dt = doc.createElement("dt");
        dt.textContent = label;
        const dd = doc.createElement("dd");
        dd.textContent = value;
        dd.dataset.field = label;
        row.append(dt, dd);
        list.append(row);
      }
      const actions = doc.createElement("div");
      actions.className = "actions";
      const reject = doc.createElement("button");
      reject.type = "button";
      reject.textContent = "Reject";
      const approve = doc.createElement("button");
      approve.type = "button";
      approve.textContent = "Approve";
      approve.className = "primary";
      actions.append(reject, approve);
      section.append(title, list, actions);
      root.replaceChildren(section);
      root.hidden = false;
      return new Promise<boolean>((resolve) => {
        pending = resolve;
        reject.addEventListener("click", () => settle(false), { once: true });
        approve.addEventListener("click", () => settle(true), { once: true });
      });
    },
    /** The host hid the frame (the request was cancelled): an open question is a rejection. */
    cancel() {
      if (pending) settle(false);
    },
  };
}

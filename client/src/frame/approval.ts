// The approval page the frame draws over the ApproveTransaction view (the host places the frame
// there): what is asked, and "Approve" / "Reject". It is drawn here, on the frame's origin, so a
// script of the host page cannot press Approve for the visitor: the host can only show or hide it.
//
// Against clickjacking (a host page can place the frame under the visitor's cursor at any moment,
// and post requests whenever it likes):
// * Approve is armed only ARM_DELAY_MS after the page was shown, and again after anything that may
//   have changed what the visitor sees (SHOW_APPROVAL or a theme, the frame resized, the page made
//   visible again). A click whose press began before Approve was armed does not approve either.
//   Reject works at once: rejecting is always safe.
// * A request that arrives while another waits for the visitor is refused (-32002, as wallets
//   answer a request while one is pending), never queued behind it or swapped in under the cursor:
//   the page's content does not change between the visitor reading it and clicking. (The session
//   sends signing requests one at a time; a queue would also keep stale requests the session has
//   given up on.)
// * A request that was still being read (an eth_sendTransaction being filled from the chain) when
//   the host hid the page (HIDE_APPROVAL) is rejected without being shown (`ticket`).

import type { Theme } from "./protocol";
import { WalletRefusal } from "./refusal";
import type { ApprovalText } from "./wallet";

/** How long Approve stays disabled after the page (or its look) is shown. */
export const ARM_DELAY_MS = 1000;

export const APPROVAL_PENDING = -32002;

/** The approval page in `root`: `ask` shows a request until the visitor decides. */
export function createApprovalPage(doc: Document, root: HTMLElement, armDelayMs = ARM_DELAY_MS) {
  let pending: { resolve: (approved: boolean) => void; approve: HTMLButtonElement } | null = null;
  // Bumped by `cancel` (the host hid the page): requests started before then are not shown.
  let epoch = 0;
  let armed = false;
  // Whether Approve was armed when the latest press (pointerdown) began.
  let pressArmed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  /** Disables Approve and arms it again `armDelayMs` from now. */
  const disarm = () => {
    clearTimeout(timer);
    armed = false;
    pressArmed = false;
    if (!pending) return;
    const { approve } = pending;
    approve.disabled = true;
    timer = setTimeout(() => {
      if (pending?.approve !== approve) return;
      armed = true;
      approve.disabled = false;
    }, armDelayMs);
  };

  const settle = (approved: boolean) => {
    const resolve = pending?.resolve;
    pending = null;
    clearTimeout(timer);
    armed = false;
    root.replaceChildren();
    root.hidden = true;
    resolve?.(approved);
  };

  doc.addEventListener("pointerdown", () => void (pressArmed = armed), true);
  doc.addEventListener("visibilitychange", () => doc.visibilityState === "visible" && disarm());
  doc.defaultView?.addEventListener("resize", disarm);

  return {
    setTheme(theme: Theme) {
      doc.documentElement.dataset.theme = theme;
      disarm();
    },
    /** Taken when a request arrives; `ask` with a ticket from before the last `cancel` answers no. */
    ticket: () => epoch,
    ask(text: ApprovalText, ticket = epoch): Promise<boolean> {
      if (ticket !== epoch) return Promise.resolve(false);
      if (pending) return Promise.reject(new WalletRefusal(APPROVAL_PENDING, "Another request is waiting for approval in the embedded wallet"));
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
      approve.disabled = true;
      actions.append(reject, approve);
      section.append(title, list, actions);
      root.replaceChildren(section);
      root.hidden = false;
      return new Promise<boolean>((resolve) => {
        pending = { resolve, approve };
        disarm();
        reject.addEventListener("click", () => settle(false), { once: true });
        approve.addEventListener("click", (event) => {
          // A keyboard activation has detail 0 and no press; a pointer's press must have begun armed.
          if (!armed || (event.detail !== 0 && !pressArmed)) return;
          settle(true);
        });
      });
    },
    /** The host hid the frame (the request was cancelled): an open question is a rejection, and a
     * request still being read is not shown. */
    cancel() {
      epoch += 1;
      if (pending) settle(false);
    },
  };
}

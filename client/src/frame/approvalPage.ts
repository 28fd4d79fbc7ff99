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
// * Where the browser has IntersectionObserver v2 (Chromium: `trackVisibility`, `isVisible`), Approve
//   is armed only while the browser says the page is seen as drawn: not covered by anything of the
//   host's (even with pointer-events: none), not faded (opacity < 1 on the host's iframe or any of
//   its ancestors), not transformed (but moved or enlarged) or filtered. It is disarmed as soon as
//   the browser reports otherwise, and armed ARM_DELAY_MS after it reports it visible again;
//   meanwhile the page says why (NOT_VISIBLE_HINT). Elsewhere (Firefox, Safari today) only the
//   delay guards Approve. The host can still crop the frame or move an armed one (decision 1501),
//   and hide it with a mask or an inward outline on its iframe, which Chromium reports visible
//   (decision 1504): nothing in this page can see those.
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

/** IntersectionObserver v2's `delay`: how often the browser may recompute visibility (at least 100). */
export const VISIBILITY_DELAY_MS = 100;

/** Shown (and announced) while the browser reports the page not fully visible. */
export const NOT_VISIBLE_HINT = "Make this window fully visible to approve";

/** What the page uses of an IntersectionObserver v2 (a fake in the tests). */
export interface VisibilityObserver {
  observe(target: Element): void;
  disconnect(): void;
}
export type VisibilityEntry = { readonly isIntersecting: boolean; readonly isVisible?: boolean };
export type VisibilityObserverFactory = (
  callback: (entries: readonly VisibilityEntry[]) => void,
  options: IntersectionObserverInit & { trackVisibility: true; delay: number },
) => VisibilityObserver;

/** The browser's IntersectionObserver when it reports `isVisible` (v2, Chromium); null when it does
 * not (Firefox, Safari today): Approve then waits for the arming delay alone. */
export function visibilityObserverFactory(win: Window | null): VisibilityObserverFactory | null {
  const w = win as (Window & typeof globalThis) | null;
  if (!w?.IntersectionObserver || !w.IntersectionObserverEntry || !("isVisible" in w.IntersectionObserverEntry.prototype)) return null;
  return (callback, options) => new w.IntersectionObserver(callback, options);
}

/** The approval page in `root`: `ask` shows a request until the visitor decides. */
export function createApprovalPage(
  doc: Document,
  root: HTMLElement,
  { armDelayMs = ARM_DELAY_MS, observeVisibility = visibilityObserverFactory(doc.defaultView) }: { armDelayMs?: number; observeVisibility?: VisibilityObserverFactory | null } = {},
) {
  let pending: { resolve: (approved: boolean) => void; approve: HTMLButtonElement; hint: HTMLElement; observer?: VisibilityObserver } | null = null;
  // Bumped by `cancel` (the host hid the page): requests started before then are not shown.
  let epoch = 0;
  let armed = false;
  // Whether Approve was armed when the latest press (pointerdown) began.
  let pressArmed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  // Whether the browser reports the shown page visible: null until its first report on this page;
  // always true without IntersectionObserver v2 (nothing to wait for but the delay).
  let visible: boolean | null = true;

  /** Disables Approve and arms it again `armDelayMs` from now (from when the page is next reported
   * visible, while it is not). */
  const disarm = () => {
    clearTimeout(timer);
    armed = false;
    pressArmed = false;
    if (!pending) return;
    const { approve } = pending;
    approve.disabled = true;
    if (!visible) return;
    timer = setTimeout(() => {
      if (pending?.approve !== approve) return;
      armed = true;
      approve.disabled = false;
    }, armDelayMs);
  };

  const settle = (approved: boolean) => {
    const resolve = pending?.resolve;
    pending?.observer?.disconnect();
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
      // Why Approve stays disabled while the page is not seen as drawn (empty otherwise).
      const hint = doc.createElement("p");
      hint.id = "approve-hint";
      hint.className = "hint";
      hint.setAttribute("aria-live", "polite");
      approve.setAttribute("aria-describedby", hint.id);
      section.append(title, list, actions, hint);
      root.replaceChildren(section);
      root.hidden = false;
      return new Promise<boolean>((resolve) => {
        pending = { resolve, approve, hint };
        // A new observation of a new element: the browser reports its state once, then each change.
        visible = observeVisibility ? null : true;
        if (observeVisibility) {
          pending.observer = observeVisibility(
            (entries) => {
              const last = entries[entries.length - 1];
              const now = last?.isVisible === true;
              if (!last || pending?.approve !== approve || now === visible) return;
              visible = now;
              hint.textContent = now ? "" : NOT_VISIBLE_HINT;
              // Not visible: disarmed at once. Visible (again): the delay starts now.
              disarm();
            },
            { trackVisibility: true, delay: VISIBILITY_DELAY_MS },
          );
          // The whole page, not the button alone: a cover over the amount misleads as much (and
          // the disabled button's own opacity would count as fading it).
          pending.observer.observe(section);
        }
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

// The page where the visitor approves or rejects a request: drawn in the approval window
// (approve.html, a window of the frame origin that the frame opens: approvalWindow.ts, decision
// 1505), never inside the host page. The host page cannot paint over a window of its own, nor press
// its buttons. What it still can do is open windows of its own, or have the visitor's double click
// land on this one as it appears. So:
// * Approve is armed only ARM_DELAY_MS after the window came to the front (shown, focused), and
//   again after anything that may have changed what the visitor sees (a theme, the window resized,
//   hidden, or in the background: another window in front). While the window is not in front,
//   Approve stays disabled and the page says why (NOT_IN_FRONT_HINT).
// * A click whose press began before Approve was armed does not approve either, and a press while it
//   is not armed starts the delay again (clicks every second or so, lured by the host, never find
//   it armed). A keyboard activation needs no press: only the visitor's keyboard reaches a window in
//   front.
// * Reject works at once: rejecting is always safe.

import { APPROVAL_WINDOW_VERSION, readApprovalShow, type ApprovalWindowMessage, type Theme } from "./protocol";
import type { ApprovalText } from "./wallet";

/** How long Approve stays disabled after the window (or its look) is shown. */
export const ARM_DELAY_MS = 1000;

/** Shown (and announced) while the window is not in front. */
export const NOT_IN_FRONT_HINT = "Bring this window to the front to approve";

/** The approval page in `root`: `ask` shows a request until the visitor decides. `hasFocus` is the
 * document's (a stand-in in the tests). */
export function createApprovalPage(
  doc: Document,
  root: HTMLElement,
  { armDelayMs = ARM_DELAY_MS, hasFocus = () => doc.hasFocus() }: { armDelayMs?: number; hasFocus?: () => boolean } = {},
) {
  let pending: { resolve: (approved: boolean) => void; approve: HTMLButtonElement; hint: HTMLElement } | null = null;
  let armed = false;
  // Whether Approve was armed when the latest press (pointerdown) began.
  let pressArmed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  // Kept from the focus and blur events (hasFocus() only for the start): during a blur event the
  // document may still report focus.
  let focused = hasFocus();
  const inFront = () => focused && doc.visibilityState === "visible";

  /** Disables Approve and arms it again `armDelayMs` from now (from when the window is next in
   * front, while it is not). */
  const disarm = () => {
    clearTimeout(timer);
    armed = false;
    pressArmed = false;
    if (!pending) return;
    const { approve, hint } = pending;
    approve.disabled = true;
    hint.textContent = inFront() ? "" : NOT_IN_FRONT_HINT;
    if (!inFront()) return;
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

  const view = doc.defaultView;
  doc.addEventListener(
    "pointerdown",
    () => {
      pressArmed = armed;
      // A press while Approve is not armed starts the delay again: a visitor lured into clicking
      // over and over (a game) cannot have one click land just after it arms. The press also says
      // the window is in front, should its focus event have been missed.
      if (!armed) {
        focused = focused || hasFocus();
        disarm();
      }
    },
    true,
  );
  doc.addEventListener("visibilitychange", disarm);
  view?.addEventListener("focus", () => ((focused = true), disarm()));
  view?.addEventListener("blur", () => ((focused = false), disarm()));
  view?.addEventListener("resize", disarm);

  return {
    setTheme(theme: Theme) {
      doc.documentElement.dataset.theme = theme;
      disarm();
    },
    /** Shows `text` until the visitor decides: true approved, false rejected. One at a time. */
    ask(text: ApprovalText): Promise<boolean> {
      if (pending) return Promise.reject(new Error("the approval page already shows a request"));
      const section = doc.createElement("section");
      section.setAttribute("aria-label", "Approve request");
      const title = doc.createElement("h1");
      title.textContent = text.title;
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
      // Why Approve stays disabled while the window is not in front (empty otherwise).
      const hint = doc.createElement("p");
      hint.id = "approve-hint";
      hint.className = "hint";
      hint.setAttribute("aria-live", "polite");
      approve.setAttribute("aria-describedby", hint.id);
      section.append(title, requestRows(doc, text), actions, hint);
      root.replaceChildren(section);
      root.hidden = false;
      return new Promise<boolean>((resolve) => {
        pending = { resolve, approve, hint };
        disarm();
        reject.addEventListener("click", () => settle(false), { once: true });
        approve.addEventListener("click", (event) => {
          // A keyboard activation has detail 0 and no press; a pointer's press must have begun armed.
          if (!armed || (event.detail !== 0 && !pressArmed)) return;
          settle(true);
        });
      });
    },
    /** The request is no longer asked (the frame gave up on it): the page is taken down. */
    cancel() {
      if (pending) settle(false);
    },
  };
}

/** The request's rows (what is asked, as the frame read it), as text only. */
export function requestRows(doc: Document, text: ApprovalText): HTMLDListElement {
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
  return list;
}

export const UNREADABLE_REQUEST = "This request cannot be shown here. Close this window and reject it in the wallet.";

export const NOT_OPENED_BY_FRAME = "This window opens from the Vestibule wallet when a request waits for your approval. You can close it.";

/** The approval window (approve.html in `view`): tells its opener, the frame, that it is ready, shows
 * the one request the frame sends, answers the visitor's decision and closes. It takes messages only
 * from its opener on its own origin; opened any other way it says so and does nothing. */
export function serveApprovalWindow(view: Window, doc: Document, options: { armDelayMs?: number; hasFocus?: () => boolean } = {}) {
  const status = doc.getElementById("status");
  const opener = view.opener as Window | null;
  const origin = view.location.origin;
  // The name the frame gave the window is all a page of the browsing context group (the host page)
  // could target it by; from now on nothing can.
  view.name = "";
  if (!opener) {
    if (status) status.textContent = NOT_OPENED_BY_FRAME;
    return;
  }
  const send = (message: ApprovalWindowMessage) => opener.postMessage(message, origin);
  const page = createApprovalPage(doc, doc.getElementById("approval") ?? doc.body, options);
  let shown = false;
  view.addEventListener("message", (event) => {
    if (shown || event.source !== opener || event.origin !== origin) return;
    const show = readApprovalShow(event.data);
    shown = true;
    if (!show) {
      // The frame checks what it sends; should it ever send what this page cannot read, say so
      // rather than wait for ever. Nothing is answered: Reject is in the frame.
      if (status) status.textContent = UNREADABLE_REQUEST;
      return;
    }
    if (status) status.textContent = "";
    page.setTheme(show.theme);
    void page.ask(show.text).then((approved) => {
      send({ vestibuleApproval: APPROVAL_WINDOW_VERSION, type: "APPROVAL_DECIDED", nonce: show.nonce, approved });
      view.close();
    });
  });
  send({ vestibuleApproval: APPROVAL_WINDOW_VERSION, type: "APPROVAL_WINDOW_READY" });
}

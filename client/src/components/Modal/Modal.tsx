// The modal: an overlay at the spec's z-index with a 360 px dialog (or, embedded, drawn in place
// inside the host's element). Open and closed, and which view it shows, are the mirrored modal and
// router charts' states. An overlaid modal takes focus when it opens and gives it back when it
// closes, keeps Tab inside, and closes on Escape (when closing is allowed). Per instance: two
// widgets on a page each handle only their own dialog.

import { useEffect, useId, useRef, type ReactNode } from "react";
import { useModalOpen, useRoute, useSessionSelector, useWidget } from "../../context/widgetContext";
import { VIEW_TITLES } from "../../views/titles";
import { AnimatedHeight } from "../AnimatedHeight/AnimatedHeight";
import { CloseIcon } from "../CloseIcon/CloseIcon";
import { Stylesheet } from "../Stylesheet/Stylesheet";
import css from "./Modal.css?inline";

const FOCUSABLE = "button:not([disabled]), [href], input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex='-1'])";

function focusables(dialog: HTMLElement): HTMLElement[] {
  return Array.from(dialog.querySelectorAll<HTMLElement>(FOCUSABLE));
}

/** Where focus goes when the dialog opens: its first control other than Close, else the dialog. */
function focusInside(dialog: HTMLElement) {
  const controls = focusables(dialog);
  (controls.find((c) => !c.hasAttribute("data-vestibule-close")) ?? controls[0] ?? dialog).focus();
}

/** Focus that another widget's dialog or this widget's toasts hold is theirs to keep. */
function ownedElsewhere(target: EventTarget | null, dialog: HTMLElement): boolean {
  if (!(target instanceof Element)) return false;
  const other = target.closest("[data-vestibule-dialog]");
  return (other !== null && other !== dialog) || target.closest("[data-vestibule-toasts]") !== null;
}

export function Modal({ children, embedded = false }: { children: ReactNode; embedded?: boolean }) {
  const widget = useWidget();
  const open = useModalOpen();
  const route = useRoute();
  const closable = useSessionSelector((s) => s.modal.closable) ?? true;
  const dialog = useRef<HTMLDivElement>(null);
  const titleId = useId();
  const close = () => {
    if (closable) widget.send({ type: "CloseModal" });
  };

  // Focus in when opened, back to where it was when closed.
  useEffect(() => {
    const element = dialog.current;
    if (!open || embedded || !element) return;
    const before = element.ownerDocument.activeElement;
    focusInside(element);
    return () => {
      if (before instanceof HTMLElement && before.isConnected) before.focus();
    };
  }, [open, embedded]);

  // A new view replaced the control that had focus (it is gone with the old view): focus moves to
  // the new view's first control rather than falling back to the page.
  useEffect(() => {
    const element = dialog.current;
    if (!open || embedded || !element) return;
    const active = element.ownerDocument.activeElement;
    if (!active || active === element.ownerDocument.body) focusInside(element);
  }, [open, embedded, route]);

  // Escape closes; focus that wanders out of the open dialog comes back.
  useEffect(() => {
    const element = dialog.current;
    if (!open || embedded || !element) return;
    const doc = element.ownerDocument;
    const abort = new AbortController();
    doc.addEventListener(
      "keydown",
      (e) => {
        if (e.key !== "Escape" || e.defaultPrevented || ownedElsewhere(e.target, element)) return;
        e.preventDefault();
        if (closable) widget.send({ type: "CloseModal" });
      },
      { signal: abort.signal },
    );
    doc.addEventListener(
      "focusin",
      (e) => {
        if (!element.contains(e.target instanceof Node ? e.target : null) && !ownedElsewhere(e.target, element)) focusInside(element);
      },
      { signal: abort.signal },
    );
    return () => abort.abort();
  }, [open, embedded, closable, widget]);

  if (!open) return null;

  const onKeyDown = (e: React.KeyboardEvent) => {
    const element = dialog.current;
    if (!element) return;
    if (e.key === "Escape" && embedded) {
      e.preventDefault();
      close();
    }
    if (e.key !== "Tab" || embedded) return;
    // Tab cycles through the dialog's controls.
    const controls = focusables(element);
    if (controls.length === 0) return;
    const [first, last] = [controls[0], controls[controls.length - 1]];
    const active = element.ownerDocument.activeElement;
    if (e.shiftKey && (active === first || active === element)) {
      last.focus();
      e.preventDefault();
    } else if (!e.shiftKey && active === last) {
      first.focus();
      e.preventDefault();
    }
  };

  return (
    <div
      className="vst-modal"
      data-embedded={embedded}
      onClick={(e) => {
        if (!embedded && e.target === e.currentTarget) close();
      }}
    >
      <Stylesheet id="modal" css={css} />
      <div
        ref={dialog}
        className="vst-modal__dialog"
        tabIndex={-1}
        role="dialog"
        aria-modal={!embedded}
        aria-labelledby={titleId}
        data-vestibule-dialog=""
        onKeyDown={onKeyDown}
      >
        <header className="vst-modal__header">
          {/* Keyed by the view, so a new title fades in (spec: 120 ms). */}
          <h2 key={route} id={titleId} className="vst-modal__title" data-route={route}>
            {VIEW_TITLES[route]}
          </h2>
          <button type="button" className="vst-modal__close" aria-label="Close" data-vestibule-close="" disabled={!closable} onClick={close}>
            <CloseIcon />
          </button>
        </header>
        <AnimatedHeight>
          {/* Keyed by the view, so a new view fades in (spec: 150 ms). */}
          <div key={route} className="vst-modal__view">
            {children}
          </div>
        </AnimatedHeight>
      </div>
    </div>
  );
}

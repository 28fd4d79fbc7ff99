// The toasts: bottom-right, 356 px wide, 14 px apart, at most three shown (the server decides which;
// spec section 4). Drawn while the mirrored toast-queue chart is active. Hovering, or focus inside,
// pauses them (the server keeps the timers); a swipe is reported and the server applies the spec's
// thresholds (20 px, or 0.11 px/ms). Alt+T moves focus to this widget's toasts.

import { useEffect, useRef } from "react";
import type { Toast } from "../../generated/Toast";
import { useRegion, useSessionSelector, useWidget } from "../../context/widgetContext";
import { CloseIcon } from "../CloseIcon/CloseIcon";
import { Spinner } from "../Spinner/Spinner";
import { Stylesheet } from "../Stylesheet/Stylesheet";
import css from "./Toasts.css?inline";

const sameToasts = (a: Toast[] | undefined, b: Toast[] | undefined) =>
  a === b || (!!a && !!b && a.length === b.length && a.every((t, i) => t === b[i]));

function VariantMark({ variant }: { variant: Toast["variant"] }) {
  if (variant === "loading") return <Spinner />;
  return (
    <svg className="vst-toast__mark" viewBox="0 0 12 12" aria-hidden="true" focusable="false">
      {variant === "error" ? (
        <path d="M6 2.5v4.2M6 8.8v.2" stroke="currentColor" strokeWidth="1.8" strokeLinecap="round" />
      ) : (
        <path d="M2.5 6.3l2.3 2.3 4.7-5" fill="none" stroke="currentColor" strokeWidth="1.8" strokeLinecap="round" strokeLinejoin="round" />
      )}
    </svg>
  );
}

export function Toasts() {
  const widget = useWidget();
  const active = useRegion("toasts/queue") === "active";
  const paused = useRegion("toasts/timers") === "paused";
  const visible = useSessionSelector((s) => s.toasts.order.flatMap((id) => {
    const t = s.toasts.items[id];
    return t?.visible ? [t] : [];
  }), sameToasts) ?? [];
  const list = useRef<HTMLOListElement>(null);
  const swipe = useRef<{ id: string; x: number; t: number } | null>(null);
  const shown = active && visible.length > 0;

  // Alt+T: the first widget with toasts showing takes it.
  useEffect(() => {
    const element = list.current;
    if (!shown || !element) return;
    const abort = new AbortController();
    element.ownerDocument.addEventListener(
      "keydown",
      (e) => {
        if (!e.altKey || (e.code !== "KeyT" && e.key.toLowerCase() !== "t") || e.defaultPrevented) return;
        e.preventDefault();
        element.focus();
      },
      { signal: abort.signal },
    );
    return () => abort.abort();
  }, [shown]);

  if (!shown) return null;
  return (
    <ol
      ref={list}
      className="vst-toasts"
      aria-label="Notifications"
      tabIndex={-1}
      data-vestibule-toasts=""
      data-paused={paused}
      onMouseEnter={() => widget.send({ type: "SetToastHover", hovered: true })}
      onMouseLeave={() => widget.send({ type: "SetToastHover", hovered: false })}
      onFocus={(e) => {
        if (!e.currentTarget.contains(e.relatedTarget instanceof Node ? e.relatedTarget : null)) widget.send({ type: "SetToastInteraction", active: true });
      }}
      onBlur={(e) => {
        if (!e.currentTarget.contains(e.relatedTarget instanceof Node ? e.relatedTarget : null)) widget.send({ type: "SetToastInteraction", active: false });
      }}
    >
      <Stylesheet id="toasts" css={css} />
      {visible.map((t) => (
        // A list item holding a live status (a role on the <li> itself would take it out of the list).
        <li key={t.id} className="vst-toasts__item">
          <div
            className="vst-toast"
            role="status"
            data-variant={t.variant}
            onPointerDown={(e) => {
              swipe.current = { id: t.id, x: e.clientX, t: e.timeStamp };
            }}
            onPointerUp={(e) => {
              const start = swipe.current;
              swipe.current = null;
              if (start && start.id === t.id && Math.abs(e.clientX - start.x) > 2) {
                widget.send({ type: "SwipeToast", id: t.id, distancePx: e.clientX - start.x, elapsedMs: Math.max(1, e.timeStamp - start.t) });
              }
            }}
          >
            <VariantMark variant={t.variant} />
            <span className="vst-toast__message">{t.message}</span>
            <button type="button" className="vst-toast__dismiss" aria-label="Dismiss notification" onClick={() => widget.send({ type: "DismissToast", id: t.id })}>
              <CloseIcon />
            </button>
          </div>
        </li>
      ))}
    </ol>
  );
}

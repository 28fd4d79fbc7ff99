// Everything the widget draws for one session: the configuration alert when the gateway refused
// the page, else the modal (current view) and the toasts. Alt+T moves focus to the toasts; Tab
// stays inside the open modal.

import { useEffect, useSyncExternalStore } from "react";
import type { Widget } from "../widget";
import type { ThemeMode } from "../generated/ThemeMode";
import { CurrentView, Modal, themeStyle, Toasts } from "./views";

/** Drawn without a session (the gateway refused the page), so in the theme the host asked for. */
export function ConfigurationAlert({ title, themeMode }: { title: string; themeMode?: ThemeMode }) {
  return (
    <div role="alertdialog" aria-label={title} style={{ ...themeStyle(themeMode), position: "fixed", left: 16, bottom: 16, zIndex: 999, padding: "12px 16px", borderRadius: 12, background: "var(--vst-surface)", color: "var(--vst-text)", border: "1px solid #d33", font: "14px system-ui, sans-serif", maxWidth: 356 }}>
      <strong>{title}</strong>
      <p style={{ margin: "4px 0 0" }}>The widget cannot start on this page. Check the project id and the allowed origins in the gateway's configuration.</p>
    </div>
  );
}

export function useWidgetVersion(widget: Widget): number {
  return useSyncExternalStore(
    (f) => widget.subscribe(f),
    () => widget.transport.mirror.seq * 2 + (widget.transport.refusal ? 1 : 0),
  );
}

export function WidgetRoot({ widget, embedded = false }: { widget: Widget; embedded?: boolean }) {
  useWidgetVersion(widget);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.altKey && (e.key === "t" || e.key === "T")) document.getElementById("vestibule-toasts")?.focus();
      if (e.key === "Tab") {
        // Focus trap: Tab cycles through the open modal's controls.
        const dialog = document.querySelector<HTMLElement>('[data-vestibule-dialog="true"]');
        if (!dialog) return;
        const controls = Array.from(dialog.querySelectorAll<HTMLElement>("button:not([disabled]), [href], input, select, [tabindex]:not([tabindex='-1'])"));
        if (controls.length === 0) return;
        const [first, last] = [controls[0], controls[controls.length - 1]];
        if (e.shiftKey && document.activeElement === first) {
          last.focus();
          e.preventDefault();
        } else if (!e.shiftKey && document.activeElement === last) {
          first.focus();
          e.preventDefault();
        } else if (!dialog.contains(document.activeElement)) {
          first.focus();
          e.preventDefault();
        }
      }
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, []);
  const refusal = widget.transport.refusal;
  if (refusal) return <ConfigurationAlert title={refusal.message} themeMode={widget.requested.themeMode} />;
  const state = widget.state();
  if (!state) return null;
  return (
    <>
      <Modal state={state} send={widget.send} embedded={embedded}>
        <CurrentView state={state} send={widget.send} />
      </Modal>
      <Toasts state={state} send={widget.send} />
    </>
  );
}

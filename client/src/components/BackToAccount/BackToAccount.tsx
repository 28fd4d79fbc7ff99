// The Back button of the Account's wallet features (Send, Receive): back to where the visitor came
// from, or to Account when the feature was the first view the modal showed.

import { useSessionSelector, useWidget } from "../../context/widgetContext";

export function BackToAccount() {
  const widget = useWidget();
  const canGoBack = useSessionSelector((s) => s.router.stack.length > 1) ?? false;
  return (
    <button
      type="button"
      className="vst-button"
      data-variant="quiet"
      onClick={() => widget.send(canGoBack ? { type: "GoBack" } : { type: "Navigate", view: "Account" })}
    >
      Back
    </button>
  );
}

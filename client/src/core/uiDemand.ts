// When the modal's code is needed: the first time there is something to draw (the modal opens, a
// toast shows, the gateway refused the page), or when the page is idle, whichever comes first.
// The embeddable script and the React entry both load their modal chunk through this.

import type { Widget } from "./widget";

export type Preload = "idle" | "open";

export function whenUiNeeded(widget: Widget, load: () => void, preload: Preload = "idle"): void {
  const page = widget.page;
  let done = false;
  const fire = () => {
    if (done || widget.signal.aborted) return;
    done = true;
    unsubscribe();
    load();
  };
  const unsubscribe = widget.subscribe(() => {
    const state = widget.state();
    if (widget.refusal() || state?.modal.status === "open" || (state?.toasts.order.length ?? 0) > 0) fire();
  });
  widget.signal.addEventListener("abort", unsubscribe);
  if (preload !== "idle") return;
  if (typeof page.requestIdleCallback === "function") {
    const handle = page.requestIdleCallback(fire, { timeout: 5000 });
    widget.signal.addEventListener("abort", () => page.cancelIdleCallback(handle));
  } else {
    const handle = page.setTimeout(fire, 1000);
    widget.signal.addEventListener("abort", () => page.clearTimeout(handle));
  }
}

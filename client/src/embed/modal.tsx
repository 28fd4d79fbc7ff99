// The modal chunk: React, React DOM and the views. Loaded by the core chunk the first time there is
// something to draw (or when the page is idle).

import { createRoot } from "react-dom/client";
import { WidgetRoot } from "../components/WidgetRoot/WidgetRoot";
import type { Widget } from "../core/widget";

export function mount(widget: Widget, target: HTMLElement, { embedded }: { embedded: boolean }): { unmount(): void } {
  const root = createRoot(target);
  root.render(<WidgetRoot widget={widget} embedded={embedded} />);
  return { unmount: () => root.unmount() };
}

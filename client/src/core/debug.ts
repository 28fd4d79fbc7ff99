// Debug mode (`debug: true`): the handle `window.__vestibule` (the widget, its counters, the charts'
// states) and XState inspection. Inspection events are kept (the last 2,000) until an inspector is
// attached; `inspect()` loads @statelyai/inspect only when asked and replays them into it.

import type { InspectionEvent } from "xstate";
import type { Widget } from "./widget";

export const KEPT_INSPECTION_EVENTS = 2000;

export interface Inspection {
  /** Pass to `createWidget({ inspect })`. */
  inspect(event: InspectionEvent): void;
  attach(next: (event: InspectionEvent) => void): void;
  /** Events kept while no inspector is attached. */
  readonly kept: readonly InspectionEvent[];
}

export function createInspection(): Inspection {
  const kept: InspectionEvent[] = [];
  let sink: ((event: InspectionEvent) => void) | null = null;
  return {
    inspect(event) {
      if (sink) return sink(event);
      kept.push(event);
      if (kept.length > KEPT_INSPECTION_EVENTS) kept.shift();
    },
    attach(next) {
      sink = next;
      for (const e of kept.splice(0)) next(e);
    },
    kept,
  };
}

type InspectorFactory = () => Promise<{ inspect: { next?: (event: InspectionEvent) => void } }>;

const statelyInspector: InspectorFactory = async () => {
  const { createBrowserInspector } = await import("@statelyai/inspect");
  return createBrowserInspector({ autoStart: true });
};

export function debugHandle(widget: Widget, inspection: Inspection | null) {
  return {
    ...widget,
    /** Each mirrored chart region's state. */
    charts: widget.charts,
    chartValues: () => widget.charts.values(),
    /** Opens the Stately inspector on the transport and the charts. */
    async inspect(factory: InspectorFactory = statelyInspector) {
      if (!inspection) throw new Error("inspection needs debug: true when the widget is created");
      const inspector = await factory();
      inspection.attach((event) => inspector.inspect.next?.(event));
      return inspector;
    },
  };
}

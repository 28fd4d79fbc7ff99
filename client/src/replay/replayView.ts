// The widget's own views fed with recorded states (the replay timeline): a view model whose state
// is set from outside, and charts seeded from each state, so the timeline draws exactly what the
// widget draws for that state.

import { createActor, fromTransition } from "xstate";
import type { SessionState } from "../generated/SessionState";
import { createChartMirror } from "../core/charts/chartMirror";
import type { ViewModel } from "../context/widgetContext";
import type { Refusal } from "../core/refusal";

interface Shown {
  mirror: { state: SessionState | null };
  refusal: Refusal | null;
}

export function createReplayView(): { model: ViewModel; show(state: SessionState | null): void; stop(): void } {
  const store = createActor(
    fromTransition((_: Shown, event: { type: "show"; state: SessionState | null }): Shown => ({ mirror: { state: event.state }, refusal: null }), {
      mirror: { state: null },
      refusal: null,
    }),
  );
  store.start();
  const charts = createChartMirror();
  return {
    model: { transport: store, charts, requested: {}, send: () => {}, reportError: () => {} },
    show(state) {
      if (state) charts.seed(state);
      store.send({ type: "show", state });
    },
    stop() {
      store.stop();
      charts.stop();
    },
  };
}

// XState machines built from the server's statecharts (generated/charts.ts, exported by the Rust
// machines; never written by hand), one actor per region, driven by the server's events. Views read
// these actors (`useSelector`), so a view can only show a state the server's chart declares.
// After every diff each region must be where the server's state says (the state at the region's
// `statePath`); a region that is not is a disagreement: the widget asks for the whole state again,
// counts it and reports it to the server.
//
// The actors live as long as the widget: a whole state (a welcome) moves them with a seed event
// that can only target a declared state, so views never have to subscribe to new actors.

import { createActor, setup, type ActorRefFrom, type InspectionEvent } from "xstate";
import { charts as generatedCharts } from "../../generated/charts";
import type { Region } from "../../generated/Region";
import type { Statechart } from "../../generated/Statechart";
import type { WireEvent } from "../../generated/WireEvent";
import { pointer } from "../patch";

const ANY_STATE = "*";
/** Moves a region to a declared state (a whole state arrived); not an event of any chart. */
export const SEED_EVENT = "vestibule.seed";

export type ChartEvent = { type: string; payload?: unknown; to?: string };

const chartSetup = setup({ types: { events: {} as ChartEvent } });
type ChartConfig = Parameters<typeof chartSetup.createMachine>[0];
type Transitions = NonNullable<ChartConfig["on"]>;

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** One machine per region (a parallel chart is several regions). */
export function regionMachine(chartId: string, region: Region) {
  const stateOn: Record<string, Record<string, Array<{ target: string; guard?: (a: { event: ChartEvent }) => boolean }>>> = {};
  for (const s of region.states) stateOn[s] = {};
  const rootOn: Record<string, Array<{ target: string; guard?: (a: { event: ChartEvent }) => boolean }>> = {
    [SEED_EVENT]: region.states.map((s) => ({ target: `.${s}`, guard: ({ event }: { event: ChartEvent }) => event.to === s })),
  };
  for (const t of region.transitions) {
    const fromRoot = t.from === ANY_STATE;
    const on = fromRoot ? rootOn : stateOn[t.from];
    if (!on) continue;
    const guard = t.guard;
    // Root-level (`*`) transitions target a child (`.to`); a state's own transitions a sibling.
    (on[t.event] ??= []).push({
      target: fromRoot ? `.${t.to}` : t.to,
      ...(guard ? { guard: ({ event }: { event: ChartEvent }) => sameJson(pointer(event.payload, guard.path), guard.equals) } : {}),
    });
  }
  // Transitions from a specific state win over `*` ones: XState tries the state's own `on` first.
  const states: NonNullable<ChartConfig["states"]> = Object.fromEntries(region.states.map((s) => [s, { on: stateOn[s] satisfies Transitions }]));
  return chartSetup.createMachine({ id: `${chartId}.${region.id}`, initial: region.initial, on: rootOn satisfies Transitions, states });
}

export type RegionActor = ActorRefFrom<ReturnType<typeof regionMachine>>;

export interface MirroredRegion {
  /** `machine/region`, e.g. `connection/eip155`. */
  key: string;
  chart: string;
  region: Region;
  actor: RegionActor;
}

export interface ChartMirror {
  readonly regions: readonly MirroredRegion[];
  /** The actor of `machine/region` (a one-region machine: `machine`). */
  actor(key: string): RegionActor;
  /** Moves every region to the state `state` names; returns the regions whose named state the chart
   * does not declare (they stay where they were). */
  seed(state: unknown): string[];
  /** Sends a diff's events to every region; returns the regions that disagree with `state` after. */
  apply(events: readonly WireEvent[], state: unknown): string[];
  /** Each region's state, e.g. `{ "connection/eip155": "connected" }`. */
  values(): Record<string, string>;
  stop(): void;
}

const keyOf = (chart: Statechart, region: Region) => (chart.id === region.id ? chart.id : `${chart.id}/${region.id}`);

export function createChartMirror(charts: readonly Statechart[] = generatedCharts, inspect?: (event: InspectionEvent) => void): ChartMirror {
  const regions: MirroredRegion[] = charts.flatMap((chart) =>
    chart.regions.map((region) => {
      const actor = createActor(regionMachine(chart.id, region), { inspect });
      actor.start();
      return { key: keyOf(chart, region), chart: chart.id, region, actor };
    }),
  );
  const byKey = new Map(regions.map((r) => [r.key, r]));
  const valueOf = (r: MirroredRegion) => String(r.actor.getSnapshot().value);
  const disagreements = (state: unknown) =>
    regions.filter((r) => {
      const at = pointer(state, r.region.statePath);
      return typeof at === "string" && valueOf(r) !== at;
    });
  return {
    regions,
    actor(key) {
      const r = byKey.get(key);
      if (!r) throw new Error(`no chart region ${key}`);
      return r.actor;
    },
    seed(state) {
      const undeclared: string[] = [];
      for (const r of regions) {
        const at = pointer(state, r.region.statePath);
        if (typeof at === "string" && r.region.states.includes(at)) r.actor.send({ type: SEED_EVENT, to: at });
        else if (at !== undefined) undeclared.push(`${r.key}: ${JSON.stringify(at)} is not a state of the chart`);
      }
      return undeclared;
    },
    apply(events, state) {
      for (const e of events) for (const r of regions) r.actor.send({ type: e.type, payload: e.payload });
      return disagreements(state).map((r) => `${r.key}: the chart is in ${valueOf(r)}, the state says ${JSON.stringify(pointer(state, r.region.statePath))}`);
    },
    values: () => Object.fromEntries(regions.map((r) => [r.key, valueOf(r)])),
    stop() {
      for (const r of regions) r.actor.stop();
    },
  };
}

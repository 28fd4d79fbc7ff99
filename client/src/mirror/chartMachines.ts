// XState machines built from the server's exported statecharts (client/src/generated/charts.ts,
// generated from the Rust machines; never written by hand). They are driven by the server's events:
// after every diff each region's machine is where the server's state says it is, which the mirror
// checks against the state at the region's `statePath`.

import { createActor, createMachine, type AnyActorRef, type AnyStateMachine } from "xstate";
import { charts } from "../generated/charts";
import type { Region } from "../generated/Region";
import type { Transition } from "../generated/Transition";
import type { WireEvent } from "../generated/WireEvent";

const ANY_STATE = "*";

/** Reads a JSON pointer (RFC 6901). */
export function pointer(doc: unknown, path: string): unknown {
  if (path === "") return doc;
  return path
    .slice(1)
    .split("/")
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce<unknown>((node, key) => (node !== null && typeof node === "object" ? (node as Record<string, unknown>)[key] : undefined), doc);
}

type ChartEvent = { type: string; payload: unknown };

// Root-level (`*`) transitions target a child (`.to`); a state's own transitions target a sibling.
function transitionConfig(t: Transition, fromRoot: boolean) {
  const target = fromRoot ? `.${t.to}` : t.to;
  const guard = t.guard;
  return guard
    ? { target, guard: ({ event }: { event: ChartEvent }) => JSON.stringify(pointer(event.payload, guard.path)) === JSON.stringify(guard.equals) }
    : { target };
}

/** One machine per region (a parallel chart is several regions). */
export function regionMachine(machineId: string, region: Region): AnyStateMachine {
  const states: Record<string, { on: Record<string, unknown[]> }> = {};
  for (const s of region.states) states[s] = { on: {} };
  const anyOn: Record<string, unknown[]> = {};
  for (const t of region.transitions) {
    const on = t.from === ANY_STATE ? anyOn : states[t.from]?.on;
    if (!on) continue;
    (on[t.event] ??= []).push(transitionConfig(t, t.from === ANY_STATE));
  }
  // Transitions from a specific state win over `*` ones: XState tries the state's own `on` first.
  return createMachine({ id: `${machineId}.${region.id}`, initial: region.initial, on: anyOn as never, states: states as never });
}

export interface RegionMirror {
  machine: string;
  region: Region;
  actor: AnyActorRef;
}

/** The chart actors for a session, seeded from a state (a welcome may arrive mid-session). */
export class ChartMirror {
  regions: RegionMirror[] = [];

  seed(state: unknown) {
    for (const r of this.regions) r.actor.stop();
    this.regions = charts.flatMap((chart) =>
      chart.regions.map((region) => {
        const machine = regionMachine(chart.id, region);
        const at = pointer(state, region.statePath);
        const value = typeof at === "string" && region.states.includes(at) ? at : region.initial;
        const actor = createActor(machine, { snapshot: machine.resolveState({ value, context: undefined }) });
        actor.start();
        return { machine: chart.id, region, actor };
      }),
    );
  }

  /** Sends the diff's events; returns the regions that disagree with `state` afterwards. */
  apply(events: WireEvent[], state: unknown): string[] {
    for (const e of events) {
      const event = { type: e.type, payload: (e as unknown as ChartEvent).payload };
      for (const r of this.regions) r.actor.send(event);
    }
    return this.disagreements(state);
  }

  disagreements(state: unknown): string[] {
    return this.regions
      .filter((r) => {
        const at = pointer(state, r.region.statePath);
        return typeof at === "string" && r.actor.getSnapshot().value !== at;
      })
      .map((r) => `${r.machine}/${r.region.id}`);
  }

  /** Each region's current state, e.g. `{ "connection/eip155": "connected" }`. */
  values(): Record<string, string> {
    return Object.fromEntries(this.regions.map((r) => [`${r.machine}/${r.region.id}`, String(r.actor.getSnapshot().value)]));
  }
}

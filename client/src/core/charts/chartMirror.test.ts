// The charts the server exports, as XState machines driven by the server's events (the frames the
// Rust side produced): every region follows the state through whole sessions; a region the events
// do not move where the state says is caught; a whole state seeds every region.

import { describe, expect, it } from "vitest";
import { connectMethodsFrames, fixtureFrames, signInFrames } from "../../generated/fixtureFrames";
import type { ServerMessage } from "../../generated/ServerMessage";
import type { SessionState } from "../../generated/SessionState";
import { applyDiff, applyWelcome, EMPTY_MIRROR, type Diff, type Mirror, type Welcome } from "../mirror";
import { createChartMirror } from "./chartMirror";

const isWelcome = (f: ServerMessage): f is Welcome => f.type === "welcome";
const isDiff = (f: ServerMessage): f is Diff => f.type === "diff";

function welcomed(frames: ServerMessage[]): Mirror {
  const r = applyWelcome(EMPTY_MIRROR, frames.find(isWelcome)!);
  if (r.kind !== "applied") throw new Error(r.kind);
  return r.mirror;
}

describe("chart mirror", () => {
  it.each([
    ["connect", fixtureFrames, ["modal=open", "connection/eip155=connected", "toasts/queue=active", "toasts/timers=paused"]],
    ["sign-in", signInFrames, ["router=SIWXSignMessage", "siwx=signing", "siwx=ready", "siwx=idle"]],
    ["connect methods", connectMethodsFrames, ["toasts/queue=active"]],
  ])("given the %s session, when its diffs' events drive the charts, then every region is where the state says after each", (_, frames, expected) => {
    let mirror = welcomed(frames);
    const charts = createChartMirror();
    expect(charts.seed(mirror.state)).toEqual([]);
    const visited = new Set<string>();
    for (const d of frames.filter(isDiff)) {
      const r = applyDiff(mirror, d);
      if (r.kind !== "applied") throw new Error(`diff ${d.seq}: ${r.kind}`);
      mirror = r.mirror;
      expect(charts.apply(r.events, mirror.state), `after diff ${d.seq}`).toEqual([]);
      for (const [k, v] of Object.entries(charts.values())) visited.add(`${k}=${v}`);
    }
    // The fixture sessions move real machines, not just the initial states.
    for (const e of expected) expect(visited).toContain(e);
    charts.stop();
  });

  it("given charts that miss an event, when the next diff's state disagrees, then the region is named", () => {
    let mirror = welcomed(fixtureFrames);
    const charts = createChartMirror();
    charts.seed(mirror.state);
    const [first, second] = fixtureFrames.filter(isDiff);
    for (const d of [first, second]) {
      const r = applyDiff(mirror, d);
      if (r.kind !== "applied") throw new Error(r.kind);
      mirror = r.mirror;
    }
    // The second diff opens the modal: its events are withheld from the charts.
    expect(mirror.state?.modal.status).toBe("open");
    expect(charts.apply([], mirror.state)).toEqual([expect.stringMatching(/^modal: the chart is in closed, the state says "open"/)]);
    // A whole state puts every region right again.
    expect(charts.seed(mirror.state)).toEqual([]);
    expect(charts.apply([], mirror.state)).toEqual([]);
    expect(charts.values().modal).toBe("open");
  });

  it("given a state naming a state the chart does not declare, when it seeds, then it is reported and the region stays", () => {
    const state: SessionState | null = welcomed(fixtureFrames).state;
    const charts = createChartMirror();
    const odd = state && { ...state, modal: { ...state.modal, status: "ajar" } };
    expect(charts.seed(odd)).toEqual(['modal: "ajar" is not a state of the chart']);
    expect(charts.values().modal).toBe("closed");
  });

  it("the actors are the same for the widget's whole life (views subscribe once)", () => {
    const charts = createChartMirror();
    const before = charts.actor("router");
    charts.seed(welcomed(signInFrames).state);
    expect(charts.actor("router")).toBe(before);
    expect(() => charts.actor("nope")).toThrow(/no chart region/);
  });
});

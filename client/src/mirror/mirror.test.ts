// The mirror fed with frames the Rust side produced (generated fixtureFrames): every welcome and
// diff applies with the server's hash, the chart machines follow the events to where the state
// says they are, and a gap, a repeat or a tampered patch is caught.

import { describe, expect, it } from "vitest";
import { fixtureFrames } from "../generated/fixtureFrames";
import type { ServerMessage } from "../generated/ServerMessage";
import { canonicalJson, stateHash } from "./canonical";
import { ChartMirror } from "./chartMachines";
import { SessionMirror } from "./sessionMirror";

type Diff = Extract<ServerMessage, { type: "diff" }>;
const welcome = fixtureFrames.find((f) => f.type === "welcome") as Extract<ServerMessage, { type: "welcome" }>;
const diffs = fixtureFrames.filter((f): f is Diff => f.type === "diff");

describe("canonical JSON", () => {
  it("sorts keys at every depth and drops whitespace, like serde_json", () => {
    expect(canonicalJson({ b: 1, a: [{ d: true, c: null }], "é": "x" })).toBe('{"a":[{"c":null,"d":true}],"b":1,"é":"x"}');
  });

  it("hashes the welcome's state to the server's hash", async () => {
    expect(await stateHash(welcome.state)).toBe(welcome.stateHash);
  });
});

describe("SessionMirror", () => {
  it("applies every diff of the fixture session with matching hashes", async () => {
    expect(diffs.length).toBeGreaterThan(5);
    const mirror = new SessionMirror();
    expect((await mirror.welcome(welcome)).kind).toBe("applied");
    for (const d of diffs) {
      const r = await mirror.diff(d);
      expect(r, `diff ${d.seq}`).toMatchObject({ kind: "applied", seq: d.seq });
    }
    expect(mirror.seq).toBe(diffs[diffs.length - 1].seq);
  });

  it("reports a gap and a repeat, and leaves the state untouched", async () => {
    const mirror = new SessionMirror();
    await mirror.welcome(welcome);
    expect(await mirror.diff(diffs[1])).toMatchObject({ kind: "gap", expected: welcome.seq });
    await mirror.diff(diffs[0]);
    const before = structuredClone(mirror.state);
    expect(await mirror.diff(diffs[0])).toMatchObject({ kind: "gap" });
    expect(mirror.state).toEqual(before);
  });

  it("catches a tampered patch by its hash", async () => {
    const mirror = new SessionMirror();
    await mirror.welcome(welcome);
    const tampered = { ...diffs[0], patch: [...diffs[0].patch, { op: "add" as const, path: "/project", value: "evil" }] };
    expect(await mirror.diff(tampered)).toMatchObject({ kind: "hashMismatch", seq: diffs[0].seq });
    expect(mirror.seq).toBe(welcome.seq);
  });
});

describe("ChartMirror", () => {
  it("follows the server's events to the states the server's state names, for every region", async () => {
    const mirror = new SessionMirror();
    await mirror.welcome(welcome);
    const charts = new ChartMirror();
    charts.seed(mirror.state);
    expect(charts.disagreements(mirror.state)).toEqual([]);
    const visited = new Set<string>();
    for (const d of diffs) {
      const r = await mirror.diff(d);
      if (r.kind !== "applied") throw new Error(`diff ${d.seq}: ${r.kind}`);
      expect(charts.apply(r.events, mirror.state), `after diff ${d.seq}`).toEqual([]);
      for (const [k, v] of Object.entries(charts.values())) visited.add(`${k}=${v}`);
    }
    // The fixture session moves real machines, not just the initial states.
    expect(visited.has("modal/modal=open")).toBe(true);
    expect(visited.has("connection/eip155=connected")).toBe(true);
  });
});

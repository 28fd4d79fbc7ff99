// The mirror fed with the frames the Rust side produced: every diff applies and hashes like the
// server's state; gaps, repeats and tampered patches are caught and leave the mirror as it was.

import { describe, expect, it } from "vitest";
import { canonicalJson, memberHashes, stateHash } from "./canonical";
import { PROTOCOL_VERSION } from "../generated/constants";
import { connectMethodsFrames, fixtureFrames, signInFrames } from "../generated/fixtureFrames";
import type { ServerMessage } from "../generated/ServerMessage";
import { applyDiff, applyWelcome, EMPTY_MIRROR, type Diff, type Mirror, type Welcome } from "./mirror";

const isWelcome = (f: ServerMessage): f is Welcome => f.type === "welcome";
const isDiff = (f: ServerMessage): f is Diff => f.type === "diff";

function welcomed(frames: ServerMessage[]): Mirror {
  const r = applyWelcome(EMPTY_MIRROR, frames.find(isWelcome)!);
  if (r.kind !== "applied") throw new Error(r.kind);
  return r.mirror;
}

describe("canonical JSON and the state hash", () => {
  it("sorts keys by code point and drops undefined members, as serde_json does", () => {
    expect(canonicalJson({ b: 1, a: [true, null, "é"], c: undefined, "😀": 1, "￿": 2 })).toBe('{"a":[true,null,"é"],"b":1,"￿":2,"😀":1}');
  });

  it("hashes every fixture state as the server did", () => {
    for (const frame of [...fixtureFrames, ...signInFrames, ...connectMethodsFrames].filter(isWelcome)) {
      expect(stateHash(frame.state)).toBe(frame.stateHash);
    }
  });
});

describe("mirror", () => {
  it.each([
    ["connect", fixtureFrames],
    ["sign-in", signInFrames],
    ["connect methods", connectMethodsFrames],
  ])("applies every diff of the %s session, each hashing like the server's state", (_, frames) => {
    let mirror = welcomed(frames);
    for (const d of frames.filter(isDiff)) {
      const r = applyDiff(mirror, d);
      if (r.kind !== "applied") throw new Error(`diff ${d.seq}: ${r.kind}`);
      expect(r.events).toBe(d.events);
      mirror = r.mirror;
    }
    expect(mirror.seq).toBe(frames.filter(isDiff).at(-1)!.seq);
  });

  it("keeps its members' hashes, and hashes again only the members a diff replaced", () => {
    let mirror = welcomed(fixtureFrames);
    for (const d of fixtureFrames.filter(isDiff)) {
      const r = applyDiff(mirror, d);
      if (r.kind !== "applied") throw new Error(`diff ${d.seq}: ${r.kind}`);
      expect(r.mirror.hashes).toEqual(memberHashes(r.mirror.state!));
      mirror = r.mirror;
    }
    // A member the next diff does not replace is not hashed again: a wrong hash kept for it shows.
    const [first] = fixtureFrames.filter(isDiff);
    const start = welcomed(fixtureFrames);
    const untouched = Object.keys(start.hashes).find((k) => !first.patch.some((op) => op.path.split("/")[1] === k))!;
    const stale: Mirror = { ...start, hashes: { ...start.hashes, [untouched]: "0".repeat(64) } };
    expect(applyDiff(stale, first)).toMatchObject({ kind: "hashMismatch", seq: first.seq });
  });

  it("refuses a gap and a repeat, and stays where it was", () => {
    const diffs = fixtureFrames.filter(isDiff);
    const mirror = welcomed(fixtureFrames);
    expect(applyDiff(mirror, diffs[1])).toEqual({ kind: "gap", expected: mirror.seq, got: diffs[1].prevSeq });
    const r = applyDiff(mirror, diffs[0]);
    if (r.kind !== "applied") throw new Error(r.kind);
    expect(applyDiff(r.mirror, diffs[0])).toMatchObject({ kind: "gap" });
  });

  it("catches a tampered patch by its hash, and a patch that cannot apply", () => {
    const diffs = fixtureFrames.filter(isDiff);
    const mirror = welcomed(fixtureFrames);
    const tampered = { ...diffs[0], patch: [...diffs[0].patch, { op: "add" as const, path: "/project", value: "evil" }] };
    expect(applyDiff(mirror, tampered)).toMatchObject({ kind: "hashMismatch", seq: diffs[0].seq });
    const broken = { ...diffs[0], patch: [{ op: "remove" as const, path: "/no/such/member" }] };
    expect(applyDiff(mirror, broken)).toMatchObject({ kind: "hashMismatch", actual: expect.stringContaining("unappliable") });
  });

  it("a resumed welcome continues the mirror; without a mirror it is a gap", () => {
    const resumed: Welcome = { type: "welcome", protocol: PROTOCOL_VERSION, sessionId: "s", seq: 9, resumed: true, stateHash: "x" };
    expect(applyWelcome(welcomed(fixtureFrames), resumed)).toEqual({ kind: "resumed" });
    expect(applyWelcome(EMPTY_MIRROR, resumed)).toMatchObject({ kind: "gap" });
  });

  it("a resumed welcome at the mirror's own seq must carry the mirror's hash: no diff follows to prove it", () => {
    // An outside review: the gateway lost the tab's last event (buffered durability), another tab
    // moved the session to the same seq, and the resumed tab kept a state the server never had.
    const mirror = welcomed(fixtureFrames);
    const at = (stateHash: string): Welcome => ({ type: "welcome", protocol: PROTOCOL_VERSION, sessionId: "s", seq: mirror.seq, resumed: true, stateHash });
    expect(applyWelcome(mirror, at(mirror.hash))).toEqual({ kind: "resumed" });
    expect(applyWelcome(mirror, at("another state"))).toEqual({ kind: "hashMismatch", seq: mirror.seq, expected: "another state", actual: mirror.hash });
  });
});

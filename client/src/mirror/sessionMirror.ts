// The browser's copy of the server's session: the state after the welcome, then after every diff.
// It holds no authority: it applies what the server sends and checks, on every frame, that the
// sequence continues and that its state hashes like the server's. Anything else means "resync".

import { applyPatch, type Operation } from "fast-json-patch";
import type { ServerMessage } from "../generated/ServerMessage";
import type { SessionState } from "../generated/SessionState";
import type { WireEvent } from "../generated/WireEvent";
import { stateHash } from "./canonical";

type Welcome = Extract<ServerMessage, { type: "welcome" }>;
type Diff = Extract<ServerMessage, { type: "diff" }>;

export type Applied =
  | { kind: "applied"; seq: number; events: WireEvent[] }
  /** The welcome resumed: the diffs after the mirror's seq follow. */
  | { kind: "resumed"; seq: number }
  /** A diff that does not follow on from the mirror's seq (a gap or a repeat). */
  | { kind: "gap"; expected: number; got: number }
  | { kind: "hashMismatch"; seq: number; expected: string; actual: string };

export class SessionMirror {
  state: SessionState | null = null;
  seq = 0;
  hash = "";

  async welcome(frame: Welcome): Promise<Applied> {
    if (frame.resumed && this.state) return { kind: "resumed", seq: this.seq };
    const state = structuredClone(frame.state ?? null) as SessionState | null;
    const actual = await stateHash(state);
    if (actual !== frame.stateHash) return { kind: "hashMismatch", seq: frame.seq, expected: frame.stateHash, actual };
    this.state = state;
    this.seq = frame.seq;
    this.hash = actual;
    return { kind: "applied", seq: frame.seq, events: [] };
  }

  async diff(frame: Diff): Promise<Applied> {
    if (!this.state || frame.prevSeq !== this.seq) return { kind: "gap", expected: this.seq, got: frame.prevSeq };
    // Applied to a copy: a diff that fails its hash check leaves the mirror as it was.
    const next = applyPatch(structuredClone(this.state), frame.patch as Operation[], true, false).newDocument;
    const actual = await stateHash(next);
    if (actual !== frame.stateHash) return { kind: "hashMismatch", seq: frame.seq, expected: frame.stateHash, actual };
    this.state = next;
    this.seq = frame.seq;
    this.hash = actual;
    return { kind: "applied", seq: frame.seq, events: frame.events };
  }
}

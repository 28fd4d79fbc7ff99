// The browser's copy of the server's session, as pure functions: the state after the welcome, then
// after every diff. It holds no authority: it applies what the server sends and checks, on every
// frame, that the sequence continues and that its state hashes like the server's. Anything else
// means "resync". A mirror is never changed in place; each frame gives a new one.

import type { ServerMessage } from "../generated/ServerMessage";
import type { SessionState } from "../generated/SessionState";
import type { WireEvent } from "../generated/WireEvent";
import { stateHash } from "./canonical";
import { applyPatch, PatchError } from "./patch";

export type Welcome = Extract<ServerMessage, { type: "welcome" }>;
export type Diff = Extract<ServerMessage, { type: "diff" }>;

export interface Mirror {
  readonly state: SessionState | null;
  readonly seq: number;
  readonly hash: string;
}

export const EMPTY_MIRROR: Mirror = { state: null, seq: 0, hash: "" };

export type Applied =
  /** A new state: the welcome's whole state (`events` empty) or a diff's. */
  | { kind: "applied"; mirror: Mirror; events: WireEvent[]; whole: boolean }
  /** The welcome resumed: the diffs after the mirror's seq follow. */
  | { kind: "resumed" }
  /** A diff that does not follow on from the mirror's seq (a gap or a repeat). */
  | { kind: "gap"; expected: number; got: number }
  /** The result does not hash like the server's state (or the patch did not apply). */
  | { kind: "hashMismatch"; seq: number; expected: string; actual: string };

/** The server's state hash proves that a document is the server's state: a type guard, not a cast. */
function isServerState(doc: unknown, expected: string): doc is SessionState {
  return doc !== null && typeof doc === "object" && stateHash(doc) === expected;
}

export function applyWelcome(mirror: Mirror, frame: Welcome): Applied {
  if (frame.resumed) return mirror.state ? { kind: "resumed" } : { kind: "gap", expected: mirror.seq, got: frame.seq };
  const state: unknown = frame.state ?? null;
  if (!isServerState(state, frame.stateHash)) return { kind: "hashMismatch", seq: frame.seq, expected: frame.stateHash, actual: stateHash(state) };
  return { kind: "applied", mirror: { state, seq: frame.seq, hash: frame.stateHash }, events: [], whole: true };
}

export function applyDiff(mirror: Mirror, frame: Diff): Applied {
  if (!mirror.state || frame.prevSeq !== mirror.seq) return { kind: "gap", expected: mirror.seq, got: frame.prevSeq };
  let next: unknown;
  try {
    next = applyPatch(mirror.state, frame.patch);
  } catch (e) {
    if (!(e instanceof PatchError)) throw e;
    return { kind: "hashMismatch", seq: frame.seq, expected: frame.stateHash, actual: `unappliable patch: ${e.message}` };
  }
  if (!isServerState(next, frame.stateHash)) return { kind: "hashMismatch", seq: frame.seq, expected: frame.stateHash, actual: stateHash(next) };
  return { kind: "applied", mirror: { state: next, seq: frame.seq, hash: frame.stateHash }, events: frame.events, whole: false };
}

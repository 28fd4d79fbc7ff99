// The browser's copy of the server's session, as pure functions: the state after the welcome, then
// after every diff. It holds no authority: it applies what the server sends and checks, on every
// frame, that the sequence continues and that its state hashes like the server's. Anything else
// means "resync". A mirror is never changed in place; each frame gives a new one.

import type { ServerMessage } from "../generated/ServerMessage";
import type { SessionState } from "../generated/SessionState";
import type { WireEvent } from "../generated/WireEvent";
import { memberHashes, stateHashOf, type MemberHashes } from "./canonical";
import { applyPatch, PatchError } from "./patch";

export type Welcome = Extract<ServerMessage, { type: "welcome" }>;
export type Diff = Extract<ServerMessage, { type: "diff" }>;

export interface Mirror {
  readonly state: SessionState | null;
  readonly seq: number;
  readonly hash: string;
  /** The hashes of the state's top-level members (see canonical.ts), kept so that a diff's check
   *  hashes only the members it replaced. */
  readonly hashes: MemberHashes;
}

export const EMPTY_MIRROR: Mirror = { state: null, seq: 0, hash: "", hashes: {} };

export type Applied =
  /** A new state: the welcome's whole state (`events` empty) or a diff's. */
  | { kind: "applied"; mirror: Mirror; events: WireEvent[]; whole: boolean }
  /** The welcome resumed: the diffs after the mirror's seq follow. */
  | { kind: "resumed" }
  /** A diff that does not follow on from the mirror's seq (a gap or a repeat). */
  | { kind: "gap"; expected: number; got: number }
  /** The result does not hash like the server's state (or the patch did not apply). */
  | { kind: "hashMismatch"; seq: number; expected: string; actual: string };

/** The server's state hash proves that a document (whose members hash to `hashes`) is the
 *  server's state: a type guard, not a cast. */
function isServerState(_doc: object, hashes: MemberHashes, expected: string): _doc is SessionState {
  return stateHashOf(hashes) === expected;
}

const isObject = (v: unknown): v is object => v !== null && typeof v === "object" && !Array.isArray(v);

export function applyWelcome(mirror: Mirror, frame: Welcome): Applied {
  if (frame.resumed) {
    if (!mirror.state) return { kind: "gap", expected: mirror.seq, got: frame.seq };
    // At the mirror's own seq no diff follows to prove the state: a server that lost the mirror's
    // last events (buffered durability) and moved on to the same seq has another state (an outside
    // review). Later seqs are proved by their diffs' hashes.
    return frame.seq !== mirror.seq || frame.stateHash === mirror.hash ? { kind: "resumed" } : { kind: "hashMismatch", seq: frame.seq, expected: frame.stateHash, actual: mirror.hash };
  }
  const state: unknown = frame.state ?? null;
  if (!isObject(state)) return { kind: "hashMismatch", seq: frame.seq, expected: frame.stateHash, actual: "not a state object" };
  const hashes = memberHashes(state);
  if (!isServerState(state, hashes, frame.stateHash)) return { kind: "hashMismatch", seq: frame.seq, expected: frame.stateHash, actual: stateHashOf(hashes) };
  return { kind: "applied", mirror: { state, seq: frame.seq, hash: frame.stateHash, hashes }, events: [], whole: true };
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
  if (!isObject(next)) return { kind: "hashMismatch", seq: frame.seq, expected: frame.stateHash, actual: "not a state object" };
  // Only the members the patch replaced are hashed again (it shares the others with the state before).
  const hashes = memberHashes(next, { state: mirror.state, hashes: mirror.hashes });
  if (!isServerState(next, hashes, frame.stateHash)) return { kind: "hashMismatch", seq: frame.seq, expected: frame.stateHash, actual: stateHashOf(hashes) };
  return { kind: "applied", mirror: { state: next, seq: frame.seq, hash: frame.stateHash, hashes }, events: frame.events, whole: false };
}

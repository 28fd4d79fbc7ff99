// The state's canonical JSON and hash, byte for byte as the server computes them
// (actors/src/session/wire/mod.rs): object keys sorted, no whitespace. The state hash is two-level
// (protocol 2, decision 0311): each top-level member's canonical JSON is hashed on its own, and the
// state hash is the first 16 hex digits of SHA-256 over the canonical JSON of the object mapping
// each key to its member's hash. The mirror keeps the members' hashes and computes again only those
// of members a diff replaced, so checking a diff costs what it changed.
// The state holds no floating-point numbers, so JSON.stringify prints every number as serde_json does.
// SHA-256 is computed synchronously (@noble/hashes), so applying a frame is a pure function.

import { sha256 } from "@noble/hashes/sha2";

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => compareUtf8(a, b))
    .map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`);
  return `{${entries.join(",")}}`;
}

// serde_json's BTreeMap orders keys by their UTF-8 bytes; JavaScript compares UTF-16 code units.
// They differ only outside the Basic Multilingual Plane, so compare code points.
function compareUtf8(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0) ?? 0);
  const y = Array.from(b, (c) => c.codePointAt(0) ?? 0);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/** The bytes in lowercase hex (also the widget's and the provider's random ids). */
export const hex = (bytes: Uint8Array): string => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
const sha256Hex = (text: string): string => hex(sha256(new TextEncoder().encode(text)));

/** A top-level member's hash, as the state hash's object holds it. */
export type MemberHashes = Readonly<Record<string, string>>;

/**
 * The hashes of `state`'s top-level members; a member that is the very object it was in
 * `previous` (a patch shares what it did not change) keeps its hash.
 */
export function memberHashes(state: object, previous?: { state: object; hashes: MemberHashes }): MemberHashes {
  const hashes: Record<string, string> = {};
  for (const [key, value] of Object.entries(state)) {
    if (value === undefined) continue;
    const before = previous && Object.hasOwn(previous.state, key) ? (previous.state as Record<string, unknown>)[key] : undefined;
    const kept = before !== undefined && before === value ? previous?.hashes[key] : undefined;
    hashes[key] = kept ?? sha256Hex(canonicalJson(value));
  }
  return hashes;
}

/** The state hash from its members' hashes. */
export function stateHashOf(hashes: MemberHashes): string {
  return sha256Hex(canonicalJson(hashes)).slice(0, 16);
}

/** The state hash of a state (an object); any other value hashes as its canonical JSON. */
export function stateHash(value: unknown): string {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return sha256Hex(canonicalJson(value)).slice(0, 16);
  return stateHashOf(memberHashes(value));
}

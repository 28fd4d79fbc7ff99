// The state's canonical JSON and hash, byte for byte as the server computes them
// (actors/src/session/wire.rs): object keys sorted, no whitespace, SHA-256, first 16 hex digits.
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

export function stateHash(value: unknown): string {
  const digest = sha256(new TextEncoder().encode(canonicalJson(value)));
  return Array.from(digest.slice(0, 8), (b) => b.toString(16).padStart(2, "0")).join("");
}

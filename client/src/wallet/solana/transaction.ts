// Solana's wire transaction, as much as a wallet needs to sign one: the compact-u16 signature count,
// the signatures, and the message (legacy or v0), whose header says how many keys must sign and
// whose first keys are those signers. Written from the documented layout; no Solana SDK.

import { base58 } from "@scure/base";

/** Reads a compact-u16 ("shortvec") at `offset`: [value, bytes read]. */
export function readLength(bytes: Uint8Array, offset: number): [number, number] {
  let value = 0;
  for (let i = 0; i < 3; i++) {
    const byte = bytes[offset + i];
    if (byte === undefined) throw new Error("truncated transaction");
    value |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) === 0) return [value, i + 1];
  }
  throw new Error("a length longer than three bytes");
}

export function writeLength(n: number): number[] {
  const out: number[] = [];
  for (let rest = n; ; ) {
    const byte = rest & 0x7f;
    rest >>= 7;
    if (rest === 0) return [...out, byte];
    out.push(byte | 0x80);
  }
}

export interface ParsedTransaction {
  signatures: Uint8Array[];
  message: Uint8Array;
  /** `legacy` or 0 (the message's version). */
  version: "legacy" | 0;
  /** Keys that must sign, in signature order (base58). */
  signers: string[];
}

export function parseTransaction(wire: Uint8Array): ParsedTransaction {
  const [count, read] = readLength(wire, 0);
  const signatures: Uint8Array[] = [];
  for (let i = 0; i < count; i++) signatures.push(wire.slice(read + 64 * i, read + 64 * (i + 1)));
  const message = wire.slice(read + 64 * count);
  const versioned = (message[0] & 0x80) !== 0;
  if (versioned && (message[0] & 0x7f) !== 0) throw new Error(`unsupported transaction version ${message[0] & 0x7f}`);
  let at = versioned ? 1 : 0;
  const required = message[at];
  at += 3;
  const [keys, keysRead] = readLength(message, at);
  at += keysRead;
  if (required > keys || required !== count || message.length < at + 32 * keys) throw new Error("malformed transaction");
  const signers: string[] = [];
  for (let i = 0; i < required; i++) signers.push(base58.encode(message.slice(at + 32 * i, at + 32 * (i + 1))));
  return { signatures, message, version: versioned ? 0 : "legacy", signers };
}

export function serializeTransaction(signatures: Uint8Array[], message: Uint8Array): Uint8Array {
  const prefix = writeLength(signatures.length);
  const out = new Uint8Array(prefix.length + 64 * signatures.length + message.length);
  out.set(prefix);
  signatures.forEach((s, i) => out.set(s, prefix.length + 64 * i));
  out.set(message, prefix.length + 64 * signatures.length);
  return out;
}

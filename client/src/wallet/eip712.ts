// EIP-712 typed-data hashing, for the dev wallet's `eth_signTypedData_v4`.

import { keccak_256 } from "@noble/hashes/sha3";
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from "@noble/hashes/utils";

export type TypedField = { name: string; type: string };
export interface TypedData {
  types: Record<string, TypedField[]>;
  primaryType: string;
  domain: Record<string, unknown>;
  message: Record<string, unknown>;
}

function dependencies(types: Record<string, TypedField[]>, primary: string, found = new Set<string>()): Set<string> {
  const base = primary.replace(/\[.*\]$/, "");
  if (found.has(base) || !types[base]) return found;
  found.add(base);
  for (const f of types[base]) dependencies(types, f.type.replace(/(\[\d*\])+$/, ""), found);
  return found;
}

export function encodeType(types: Record<string, TypedField[]>, primary: string): string {
  const deps = [...dependencies(types, primary)].filter((t) => t !== primary).sort();
  return [primary, ...deps].map((t) => `${t}(${types[t].map((f) => `${f.type} ${f.name}`).join(",")})`).join("");
}

export const typeHash = (types: Record<string, TypedField[]>, primary: string) => keccak_256(utf8ToBytes(encodeType(types, primary)));

function word(n: bigint): Uint8Array {
  const hex = (n < 0n ? (1n << 256n) + n : n).toString(16).padStart(64, "0");
  return hexToBytes(hex);
}

function encodeValue(types: Record<string, TypedField[]>, type: string, value: unknown): Uint8Array {
  const array = type.match(/^(.*)\[(\d*)\]$/);
  if (array) return keccak_256(concatBytes(...(value as unknown[]).map((v) => encodeValue(types, array[1], v))));
  if (types[type]) return hashStruct(types, type, value as Record<string, unknown>);
  if (type === "string") return keccak_256(utf8ToBytes(String(value)));
  if (type === "bytes") return keccak_256(hexToBytes(String(value).replace(/^0x/, "")));
  if (type === "bool") return word(value ? 1n : 0n);
  if (type === "address") return word(BigInt(String(value)));
  if (/^u?int\d*$/.test(type)) return word(BigInt(value as string | number));
  if (/^bytes\d+$/.test(type)) {
    const out = new Uint8Array(32);
    out.set(hexToBytes(String(value).replace(/^0x/, "")));
    return out;
  }
  throw new Error(`unsupported EIP-712 type ${type}`);
}

export function hashStruct(types: Record<string, TypedField[]>, primary: string, data: Record<string, unknown>): Uint8Array {
  return keccak_256(concatBytes(typeHash(types, primary), ...types[primary].map((f) => encodeValue(types, f.type, data[f.name]))));
}

/** The digest a wallet signs: keccak256(0x1901 ‖ domainSeparator ‖ hashStruct(message)). */
export function typedDataDigest(data: TypedData): Uint8Array {
  const domain = hashStruct(data.types, "EIP712Domain", data.domain);
  const message = hashStruct(data.types, data.primaryType, data.message);
  return keccak_256(concatBytes(new Uint8Array([0x19, 0x01]), domain, message));
}

export const hex = (b: Uint8Array) => "0x" + bytesToHex(b);

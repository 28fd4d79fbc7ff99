// The embedded wallet's key material, as pure functions (docs/embedded-wallet.md, "Key and shares"):
// one 32-byte seed, an EVM secp256k1 key and a Solana ed25519 seed derived from it with HKDF-SHA256,
// and the seed Shamir-split 2-of-3 (device, server, recovery). Callers wipe what they get back
// (`wipe`) as soon as a signature is made: nothing here keeps a copy.

import { ed25519 } from "@noble/curves/ed25519";
import { secp256k1 } from "@noble/curves/secp256k1";
import { hkdf } from "@noble/hashes/hkdf";
import { sha256 } from "@noble/hashes/sha2";
import { base58 } from "@scure/base";
import { combine, split } from "shamir-secret-sharing";
import { addressOf, personalSign } from "../wallet/devWallet";

export const SEED_BYTES = 32;
const EMPTY_SALT = new Uint8Array(0);
const EVM_INFO = "vestibule/eip155/v1";
const SOLANA_INFO = "vestibule/solana/v1";

export function newSeed(): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(SEED_BYTES));
}

/** The EVM private key: HKDF(seed, info "vestibule/eip155/v1"), re-derived with "/{n}" appended in
 * the (2^-128) case the bytes are not a valid secp256k1 scalar. */
export function deriveEvmKey(seed: Uint8Array): Uint8Array {
  for (let n = 0; ; n++) {
    const key = hkdf(sha256, seed, EMPTY_SALT, n === 0 ? EVM_INFO : `${EVM_INFO}/${n}`, 32);
    if (secp256k1.utils.isValidPrivateKey(key)) return key;
    wipe(key);
  }
}

/** The Solana ed25519 secret seed: HKDF(seed, info "vestibule/solana/v1"). */
export function deriveSolanaSeed(seed: Uint8Array): Uint8Array {
  return hkdf(sha256, seed, EMPTY_SALT, SOLANA_INFO, 32);
}

export interface Addresses {
  eip155Address: string;
  solanaAddress: string;
}

/** The two addresses of a seed (EIP-55 checksummed; Solana base58 public key). */
export function addressesOf(seed: Uint8Array): Addresses {
  const evm = deriveEvmKey(seed);
  const sol = deriveSolanaSeed(seed);
  try {
    return { eip155Address: addressOf(evm), solanaAddress: base58.encode(ed25519.getPublicKey(sol)) };
  } finally {
    wipe(evm, sol);
  }
}

/** Shamir 2-of-3 over the seed: [device, server, recovery]. */
export async function splitSeed(seed: Uint8Array): Promise<{ device: Uint8Array; server: Uint8Array; recovery: Uint8Array }> {
  const [device, server, recovery] = await split(seed, 3, 2);
  return { device, server, recovery };
}

/** The seed from any two of its shares. */
export function combineShares(a: Uint8Array, b: Uint8Array): Promise<Uint8Array> {
  return combine([a, b]);
}

/** The text a new wallet signs with both keys to prove the frame holds them. */
export function bindingText(frameId: string, userId: string): string {
  return `Vestibule embedded wallet\nframe: ${frameId}\nuser: ${userId}`;
}

/** EIP-191 personal_sign (hex, 65 bytes) and ed25519 (base58) signatures of the binding text. */
export function signBinding(seed: Uint8Array, frameId: string, userId: string): { eip155Signature: string; solanaSignature: string } {
  const message = new TextEncoder().encode(bindingText(frameId, userId));
  const evm = deriveEvmKey(seed);
  const sol = deriveSolanaSeed(seed);
  try {
    return { eip155Signature: personalSign(evm, message), solanaSignature: base58.encode(ed25519.sign(message, sol)) };
  } finally {
    wipe(evm, sol);
  }
}

/** Overwrites key material with zeros (JS cannot promise no copy exists elsewhere, but the buffers
 * this code holds do not outlive the signature). */
export function wipe(...buffers: Array<Uint8Array | undefined | null>): void {
  for (const b of buffers) b?.fill(0);
}

export function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

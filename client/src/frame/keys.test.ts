// The key derivation, the 2-of-3 split and the binding signatures, against fixed vectors.

import { ed25519 } from "@noble/curves/ed25519";
import { base58 } from "@scure/base";
import { describe, expect, it } from "vitest";
import { recoverPersonalSign } from "../wallet/devWallet";
import { addressesOf, bindingText, combineShares, deriveEvmKey, deriveSolanaSeed, signBinding, splitSeed, wipe } from "./keys";

const SEED = Uint8Array.from({ length: 32 }, (_, i) => i + 1);
const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

describe("key derivation", () => {
  it("is deterministic and matches the fixed vector (HKDF-SHA256, empty salt, the contract's infos)", () => {
    expect(hex(deriveEvmKey(SEED))).toBe(hex(deriveEvmKey(Uint8Array.from(SEED))));
    expect(hex(deriveEvmKey(SEED))).toBe("0180fb8687509372090218a5f94ec361824a55a0dbc86805bb74ad58f5e2f5cc");
    expect(hex(deriveSolanaSeed(SEED))).toBe("7fd71024104d4856c5e511b4113f7a47e61b0beddbb838b6dd17f256bedd4ffb");
    // Computed once outside this code (Python's hmac for HKDF, @noble for the points).
    const { eip155Address, solanaAddress } = addressesOf(SEED);
    expect(eip155Address.toLowerCase()).toBe("0x46703f93c14ee13e7c24a0f06b30ca8b1f46ed8f");
    expect(solanaAddress).toBe("233UV7LLezRXgGSGddGL4sdBhvGr7E5FnYnhtqhvevzP");
  });

  it("gives different keys for different seeds and for the two chains", () => {
    const other = Uint8Array.from(SEED).reverse();
    expect(hex(deriveEvmKey(other))).not.toBe(hex(deriveEvmKey(SEED)));
    expect(hex(deriveEvmKey(SEED))).not.toBe(hex(deriveSolanaSeed(SEED)));
  });
});

describe("2-of-3 split", () => {
  it("any two of the three 33-byte shares give back the seed and the same address; one alone does not", async () => {
    const { device, server, recovery } = await splitSeed(SEED);
    for (const share of [device, server, recovery]) expect(share.length).toBe(33);
    for (const [a, b] of [[device, server], [server, recovery], [device, recovery], [recovery, device]]) {
      const seed = await combineShares(a, b);
      expect(addressesOf(seed)).toEqual(addressesOf(SEED));
    }
    await expect(combineShares(device, device)).rejects.toThrow();
  });
});

describe("binding", () => {
  it("signs the binding text with both keys; the signatures verify for the wallet's addresses", () => {
    const text = bindingText("frame-1", "user-1");
    expect(text).toBe("Vestibule embedded wallet\nframe: frame-1\nuser: user-1");
    const { eip155Signature, solanaSignature } = signBinding(SEED, "frame-1", "user-1");
    const message = new TextEncoder().encode(text);
    const { eip155Address, solanaAddress } = addressesOf(SEED);
    expect(eip155Signature).toMatch(/^0x[0-9a-f]{130}$/);
    expect(recoverPersonalSign(message, eip155Signature)).toBe(eip155Address);
    expect(ed25519.verify(base58.decode(solanaSignature), message, base58.decode(solanaAddress))).toBe(true);
    expect(ed25519.verify(base58.decode(solanaSignature), new TextEncoder().encode(bindingText("frame-2", "user-1")), base58.decode(solanaAddress))).toBe(false);
  });

  it("wipe zeroes the buffers it is given", () => {
    const key = deriveEvmKey(SEED);
    wipe(key, undefined);
    expect(key.every((b) => b === 0)).toBe(true);
  });
});

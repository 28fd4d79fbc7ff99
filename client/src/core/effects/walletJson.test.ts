// Wallet answers as the plain JSON the server reads: what JSON.stringify would write, except that a
// bigint is a 0x-hex QUANTITY (EIP-1474, what the server parses as a chain id), and what JSON cannot
// carry (functions, symbols, cycles, getters that throw) fails the request with a reason, never
// throws.

import { describe, expect, it } from "vitest";
import { WALLET_ANSWER_MAX_BYTES, WALLET_ERROR_MAX_CHARS } from "../../generated/constants";
import { plainOutcome } from "./walletJson";

const ok = (result: unknown) => plainOutcome({ status: "ok", result });

describe("plainOutcome", () => {
  it("given JSON values, when read, then they are the same values", () => {
    for (const value of [null, true, 0, -1.5, "text", [], {}, [1, "a", null], { a: { b: [true] } }]) {
      expect(ok(value)).toEqual({ status: "ok", result: value });
    }
  });

  it("given bigints, when read, then they are 0x-hex strings (negative ones decimal: no QUANTITY for them)", () => {
    expect(ok(1n)).toEqual({ status: "ok", result: "0x1" });
    expect(ok(0n)).toEqual({ status: "ok", result: "0x0" });
    expect(ok({ chainId: 31337n, values: [2n ** 64n] })).toEqual({ status: "ok", result: { chainId: "0x7a69", values: ["0x10000000000000000"] } });
    expect(ok(-5n)).toEqual({ status: "ok", result: "-5" });
  });

  it("given what JSON.stringify leaves out or rewrites, when read, then it does the same (undefined at the top is null)", () => {
    expect(ok(undefined)).toEqual({ status: "ok", result: null });
    expect(ok({ a: undefined, b: 1 })).toEqual({ status: "ok", result: { b: 1 } });
    expect(ok([undefined, NaN])).toEqual({ status: "ok", result: [null, null] });
    expect(ok(new Date(0))).toEqual({ status: "ok", result: "1970-01-01T00:00:00.000Z" });
    expect(ok(Uint8Array.of(7, 8))).toEqual({ status: "ok", result: { 0: 7, 1: 8 } });
  });

  it("given a value shared twice (not a cycle), when read, then both copies are kept", () => {
    const shared = { x: 1 };
    expect(ok({ a: shared, b: [shared] })).toEqual({ status: "ok", result: { a: { x: 1 }, b: [{ x: 1 }] } });
  });

  it.each([
    ["a function", () => ({ f: () => 1 }), /function/],
    ["a symbol", () => [Symbol("s")], /symbol/],
    ["a cycle", () => {
      const o: Record<string, unknown> = {};
      o.inner = { o };
      return o;
    }, /circular|cyclic/],
    ["a throwing getter", () => ({ get boom(): never { throw new Error("trap"); } }), /trap/],
    ["a throwing toJSON", () => ({ toJSON: () => { throw new Error("nope"); } }), /nope/],
    ["a getter that throws what cannot be printed", () => ({ get boom(): never { throw Object.create(null); } }), /cannot be read/],
  ])("given %s, when read, then the request fails with -32603 and says why", (_name, value, reason) => {
    expect(ok(value())).toEqual({ status: "error", code: -32603, message: expect.stringMatching(/^The wallet's answer cannot be sent: /) });
    const outcome = ok(value());
    if (outcome.status === "error") expect(outcome.message).toMatch(reason);
  });

  it("given an error outcome, when read, then it is passed on as it is", () => {
    expect(plainOutcome({ status: "error", code: 4001, message: "User rejected" })).toEqual({ status: "error", code: 4001, message: "User rejected" });
  });

  // The command carrying the answer must fit the gateway's frame (outside review: 5,000 accounts,
  // or a 70 kB message, closed the socket 1009 and the connect waited for ever).
  it("given an answer whose JSON is over the bound in UTF-8 bytes, when read, then the request fails and says so", () => {
    const addresses = Array.from({ length: 5000 }, (_, i) => `0x${(i + 1).toString(16).padStart(40, "0")}`);
    expect(ok(addresses)).toEqual({ status: "error", code: -32603, message: "The wallet's answer cannot be sent: it is too large" });
    // Two bytes each in UTF-8: under the bound in UTF-16 units, over it in bytes.
    expect(ok("é".repeat(WALLET_ANSWER_MAX_BYTES / 2))).toMatchObject({ status: "error", code: -32603 });
    // The positive probe: an answer at the bound (its JSON quotes included) goes out as it is.
    const fits = "a".repeat(WALLET_ANSWER_MAX_BYTES - 2);
    expect(ok(fits)).toEqual({ status: "ok", result: fits });
  });

  it("given an error whose message is longer than the session keeps, when read, then it is cut there, between code points", () => {
    const cut = plainOutcome({ status: "error", code: -32000, message: "A".repeat(70_000) });
    expect(cut).toEqual({ status: "error", code: -32000, message: "A".repeat(WALLET_ERROR_MAX_CHARS) });
    // An emoji is two UTF-16 units and one character (as Rust counts): never cut in half.
    const emoji = plainOutcome({ status: "error", code: -32000, message: "😀".repeat(WALLET_ERROR_MAX_CHARS + 1) });
    expect(emoji).toEqual({ status: "error", code: -32000, message: "😀".repeat(WALLET_ERROR_MAX_CHARS) });
  });
});

// The host ⇄ frame message schemas: what each side accepts and refuses.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { newMessageId, readFrameMessage, readHostMessage, readSocialResult, SOCIAL_RESULT } from "./protocol";

const id = "0123456789abcdef0123456789abcdef";
const msg = (type: string, payload: unknown, extra: Record<string, unknown> = {}) => ({ vestibule: 1, id, type, payload, ...extra });

describe("host messages (read by the frame)", () => {
  it("accepts each request type with its exact payload", () => {
    const good = [
      msg("CONNECT_OTP", { challengeId: "c1", otp: "123456" }),
      msg("CONNECT_SOCIAL", { resultUri: "https://frame.example/oauth/callback?code=a&state=b" }),
      msg("UPDATE_EMAIL_OTP", { step: "secondary", otp: "000000" }),
      msg("CONNECT_FARCASTER", {}),
      msg("RPC_REQUEST", { requestId: "r1", connectorId: "auth", namespace: "eip155", chainId: "eip155:1", kind: { type: "rpc", method: "personal_sign", params: ["0x68", "0xabc"] } }),
      msg("RPC_REQUEST", { requestId: "r2", connectorId: "auth", namespace: "solana", chainId: "solana:x", kind: { type: "connect" } }),
      msg("SHOW_APPROVAL", { theme: "dark" }),
      msg("HIDE_APPROVAL", {}),
      msg("SIGN_OUT", {}),
      msg("SYNC_THEME", { themeMode: "light", themeVariables: { "--vst-accent": "#000" } }),
    ];
    for (const m of good) expect(readHostMessage(m), m.type).toEqual(m);
  });

  it("refuses unknown types, unknown or missing fields, wrong types, a bad id or version, and OTPs that are not 6 digits", () => {
    const bad = [
      msg("STEAL_KEYS", {}),
      msg("FRAME_READY", { frameId: "f" }),
      msg("CONNECT_OTP", { challengeId: "c1", otp: "12345" }),
      msg("CONNECT_OTP", { challengeId: "c1", otp: "12345a" }),
      msg("CONNECT_OTP", { challengeId: "c1" }),
      msg("CONNECT_OTP", { challengeId: "c1", otp: "123456", extra: true }),
      msg("CONNECT_OTP", { challengeId: 7, otp: "123456" }),
      msg("SIGN_OUT", {}, { extra: 1 }),
      { ...msg("SIGN_OUT", {}), id: "short" },
      { ...msg("SIGN_OUT", {}), vestibule: 2 },
      msg("SHOW_APPROVAL", { theme: "pink" }),
      msg("RPC_REQUEST", { requestId: "r1", connectorId: "metamask", namespace: "eip155", chainId: "eip155:1", kind: { type: "connect" } }),
      msg("RPC_REQUEST", { requestId: "r1", connectorId: "auth", namespace: "eip155", chainId: "eip155:1", kind: { type: "connect", more: 1 } }),
      msg("RPC_REQUEST", { requestId: "r1", connectorId: "auth", namespace: "eip155", chainId: "eip155:1", kind: { type: "exportKey" } }),
      msg("HIDE_APPROVAL", []),
      msg("CONNECT_FARCASTER", { channelToken: "t" }),
      null,
      "CONNECT_OTP",
      [msg("SIGN_OUT", {})],
    ];
    for (const m of bad) expect(readHostMessage(m), JSON.stringify(m)).toBeNull();
  });
});

describe("fields named like Object.prototype's (browser-side review, decision 1504)", () => {
  it("given a payload with an extra key constructor, toString, hasOwnProperty or an own __proto__ (`in` found them on the prototype), then it is refused as any unknown field is", () => {
    const extras = [{ constructor: "x" }, { toString: "x" }, { hasOwnProperty: 1 }, JSON.parse('{"__proto__": {"otp": "000000"}}')];
    for (const extra of extras) {
      expect(readHostMessage(msg("CONNECT_OTP", { challengeId: "c1", otp: "123456", ...extra })), JSON.stringify(extra)).toBeNull();
      expect(readFrameMessage(msg("CONNECT_OTP_SUCCESS", { address: "0xabc", ...extra })), JSON.stringify(extra)).toBeNull();
      expect(readSocialResult({ type: SOCIAL_RESULT, resultUri: "https://f/oauth/callback?x", ...extra }), JSON.stringify(extra)).toBeNull();
    }
    expect(readHostMessage({ ...msg("SIGN_OUT", {}), valueOf: 1 })).toBeNull();
  });
});

describe("frame messages (read by the host)", () => {
  it("accepts FRAME_READY and the answers of each request type, and refuses what does not fit", () => {
    expect(readFrameMessage(msg("FRAME_READY", { frameId: "f1" }))).not.toBeNull();
    expect(readFrameMessage(msg("CONNECT_OTP_SUCCESS", { address: "0xabc" }))).not.toBeNull();
    expect(readFrameMessage(msg("CONNECT_OTP_ERROR", { message: "Invalid code" }))).not.toBeNull();
    expect(readFrameMessage(msg("RPC_REQUEST_SUCCESS", { outcome: { status: "error", code: 4001, message: "User rejected the request." } }))).not.toBeNull();
    expect(readFrameMessage(msg("RPC_REQUEST_SUCCESS", { outcome: { status: "ok", result: "0x12" } }))).not.toBeNull();
    expect(readFrameMessage(msg("FRAME_READY", { frameId: "f1", key: "x" }))).toBeNull();
    expect(readFrameMessage(msg("CONNECT_OTP_SUCCESS", { address: "0xabc", seed: "00" }))).toBeNull();
    expect(readFrameMessage(msg("CONNECT_FARCASTER_SUCCESS", { address: "0xabc" }))).not.toBeNull();
    expect(readFrameMessage(msg("CONNECT_FARCASTER_ERROR", { message: "Failed to connect to farcaster" }))).not.toBeNull();
    expect(readFrameMessage(msg("CONNECT_FARCASTER_SUCCESS", { address: "0xabc", fid: 1 }))).toBeNull();
    expect(readFrameMessage(msg("RPC_REQUEST_SUCCESS", { outcome: { status: "maybe" } }))).toBeNull();
    expect(readFrameMessage(msg("NOPE_SUCCESS", {}))).toBeNull();
    expect(readFrameMessage(msg("CONNECT_OTP_ERROR", {}))).toBeNull();
  });
});

describe("the popup's result and ids", () => {
  it("reads only { type, resultUri }", () => {
    expect(readSocialResult({ type: SOCIAL_RESULT, resultUri: "https://f/oauth/callback?x" })).not.toBeNull();
    expect(readSocialResult({ type: SOCIAL_RESULT, resultUri: "https://f", more: 1 })).toBeNull();
    expect(readSocialResult({ type: "OTHER", resultUri: "https://f" })).toBeNull();
  });

  it("the callback script posts the same type string, to the written host origin only", () => {
    const callback = readFileSync(join(import.meta.dirname, "callback.ts"), "utf8");
    expect(callback).toContain(`type: "${SOCIAL_RESULT}"`);
    expect(callback).toContain("postMessage({ type: \"VESTIBULE_SOCIAL_RESULT\", resultUri: location.href }, hostOrigin)");
    expect(callback).not.toContain('"*"');
  });

  it("message ids are 16 random bytes in hex", () => {
    const a = newMessageId();
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect(newMessageId()).not.toBe(a);
  });
});

// The host bridge to the secure frame: one iframe on the frame origin, FRAME_READY reported to the
// session, answers matched by id, messages from another origin or another window ignored, every
// post addressed to the frame origin, the 120 s timeout, and the frame shown over the approval slot
// only while a signing request waits.

import { afterEach, describe, expect, it, vi } from "vitest";
import type { ClientCommand } from "../../generated/ClientCommand";
import { createSecureFrameBridge, TIMED_OUT } from "./secureFrame";

const ORIGIN = "https://frame.example";

function fakePage() {
  const posts: Array<{ message: { id: string; type: string; payload: unknown }; target: string }> = [];
  const frameWindow = { postMessage: (message: { id: string; type: string; payload: unknown }, target: string) => void posts.push({ message, target }) };
  const iframe = { src: "", title: "", dataset: {}, style: {} as Record<string, string>, attrs: new Map<string, string>(), contentWindow: frameWindow, removed: false,
    setAttribute(k: string, v: string) { this.attrs.set(k, v); }, removeAttribute(k: string) { this.attrs.delete(k); }, remove() { this.removed = true; } };
  const appended: unknown[] = [];
  const page = Object.assign(new EventTarget(), { document: { createElement: () => iframe, body: { append: (e: unknown) => void appended.push(e) } } });
  const deliver = (data: unknown, origin = ORIGIN, source: unknown = frameWindow) => page.dispatchEvent(Object.assign(new Event("message"), { data, origin, source }));
  return { page, iframe, posts, appended, deliver, frameWindow };
}

function start(timeoutMs?: number) {
  const f = fakePage();
  const commands: ClientCommand[] = [];
  const abort = new AbortController();
  const bridge = createSecureFrameBridge({
    page: f.page as unknown as Window,
    frameOrigin: ORIGIN,
    query: { projectId: "demo", chainId: "eip155:1", version: "1", enableLogger: "false", sessionId: "s1" },
    send: (c) => void commands.push(c),
    theme: () => "dark",
    signal: abort.signal,
    timeoutMs,
  });
  return { ...f, bridge, commands, abort };
}

const READY = { vestibule: 1, id: "0123456789abcdef0123456789abcdef", type: "FRAME_READY", payload: { frameId: "f1" } };

afterEach(() => vi.useRealTimers());

/** The frame said FRAME_READY: requests go out from then on (a microtask later). */
async function readyFrame(t: ReturnType<typeof start>) {
  t.deliver(READY);
  await flush();
}
const flush = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe("secure frame bridge", () => {
  it("mounts one iframe on the frame origin with the spec's query, hidden, fixed at z-index 999999", () => {
    const t = start();
    expect(t.appended).toEqual([t.iframe]);
    expect(t.iframe.src).toBe(`${ORIGIN}/frame?projectId=demo&chainId=eip155%3A1&version=1&enableLogger=false&sessionId=s1`);
    expect(t.iframe.style).toMatchObject({ position: "fixed", zIndex: "999999", visibility: "hidden" });
    t.abort.abort();
    expect(t.iframe.removed).toBe(true);
  });

  it("reports FRAME_READY from the frame as EmbeddedFrameReady; ignores it from a foreign origin, from another window, or off-schema", () => {
    const t = start();
    t.deliver(READY, "https://evil.example");
    t.deliver(READY, ORIGIN, {});
    t.deliver({ ...READY, payload: { frameId: "f1", extra: 1 } });
    expect(t.commands).toEqual([]);
    t.deliver(READY);
    expect(t.commands).toEqual([{ type: "EmbeddedFrameReady", frameId: "f1" }]);
  });

  it("holds requests until the frame says FRAME_READY (a message posted before its page listens is lost)", async () => {
    const t = start();
    void t.bridge.request("SIGN_OUT", {}).catch(() => undefined);
    await flush();
    expect(t.posts).toEqual([]);
    await readyFrame(t);
    expect(t.posts.map((p) => p.message.type)).toEqual(["SIGN_OUT"]);
  });

  it("posts requests to the frame origin only, with a 16-byte hex id, and resolves with the answer of the same id", async () => {
    const t = start();
    await readyFrame(t);
    const answer = t.bridge.request("CONNECT_OTP", { challengeId: "c1", otp: "123456" });
    await flush();
    const [{ message, target }] = t.posts;
    expect(target).toBe(ORIGIN);
    expect(message).toMatchObject({ vestibule: 1, type: "CONNECT_OTP", payload: { challengeId: "c1", otp: "123456" } });
    expect(message.id).toMatch(/^[0-9a-f]{32}$/);
    t.deliver({ vestibule: 1, id: "ffffffffffffffffffffffffffffffff", type: "CONNECT_OTP_SUCCESS", payload: { address: "0xwrong" } });
    t.deliver({ vestibule: 1, id: message.id, type: "CONNECT_OTP_SUCCESS", payload: { address: "0xforeign" } }, "https://evil.example");
    t.deliver({ vestibule: 1, id: message.id, type: "CONNECT_OTP_SUCCESS", payload: { address: "0xother-window" } }, ORIGIN, {});
    t.deliver({ vestibule: 1, id: message.id, type: "CONNECT_OTP_SUCCESS", payload: { address: "0xabc" } });
    await expect(answer).resolves.toEqual({ address: "0xabc" });
  });

  it("an _ERROR answer rejects with its message", async () => {
    const t = start();
    await readyFrame(t);
    const answer = t.bridge.request("CONNECT_OTP", { challengeId: "c1", otp: "123456" });
    await flush();
    t.deliver({ vestibule: 1, id: t.posts[0].message.id, type: "CONNECT_OTP_ERROR", payload: { message: "Invalid code" } });
    await expect(answer).rejects.toThrow("Invalid code");
  });

  it("a request without an answer in time fails with EmbeddedRequestFailed 'Embedded Wallet Request Timed Out'", async () => {
    vi.useFakeTimers();
    const t = start();
    await readyFrame(t);
    const answer = t.bridge.request("SIGN_OUT", {});
    vi.advanceTimersByTime(120_000);
    await expect(answer).rejects.toThrow(TIMED_OUT);
    expect(t.commands).toEqual([{ type: "EmbeddedFrameReady", frameId: "f1" }, { type: "EmbeddedRequestFailed", message: TIMED_OUT }]);
  });

  it("a signing request shows the frame over the approval slot (SHOW_APPROVAL with the theme) and hides it after", async () => {
    const t = start();
    await readyFrame(t);
    t.bridge.place({ getBoundingClientRect: () => ({ top: 10, left: 20, width: 300, height: 400 }) } as unknown as Element);
    const outcome = t.bridge.perform({ requestId: "r1", connectorId: "auth", namespace: "eip155", chainId: "eip155:1", kind: { type: "rpc", method: "personal_sign", params: ["0x68", "0xabc"] } });
    expect(t.iframe.style).toMatchObject({ visibility: "visible", top: "10px", left: "20px", width: "300px", height: "400px" });
    await flush();
    expect(t.posts.map((p) => p.message.type)).toEqual(["SHOW_APPROVAL", "RPC_REQUEST"]);
    expect(t.posts[0].message.payload).toEqual({ theme: "dark" });
    const rpc = t.posts[1].message;
    t.deliver({ vestibule: 1, id: rpc.id, type: "RPC_REQUEST_SUCCESS", payload: { outcome: { status: "error", code: 4001, message: "User rejected the request." } } });
    await expect(outcome).resolves.toEqual({ status: "error", code: 4001, message: "User rejected the request." });
    expect(t.iframe.style.visibility).toBe("hidden");
    await flush();
    expect(t.posts.at(-1)?.message.type).toBe("HIDE_APPROVAL");
  });

  it("a connect request does not show the frame", async () => {
    const t = start();
    await readyFrame(t);
    void t.bridge.perform({ requestId: "r1", connectorId: "auth", namespace: "eip155", chainId: "eip155:1", kind: { type: "connect" } });
    await flush();
    expect(t.iframe.style.visibility).toBe("hidden");
    expect(t.posts.map((p) => p.message.type)).toEqual(["RPC_REQUEST"]);
  });
});

// The transport's shell: real XState timers under vitest's fake clock, a scripted socket that speaks
// with the frames the Rust side produced, command promises, storage, and stop() leaving nothing.

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { fixtureFrames } from "../../generated/fixtureFrames";
import type { ServerMessage } from "../../generated/ServerMessage";
import { openBrowserSocket } from "./browserSocket";
import { backoffDelay } from "./machine";
import { CommandDropped, createTransport, storageKeys, type KeyValueStore, type SocketLike } from "./transport";

type Welcome = Extract<ServerMessage, { type: "welcome" }>;
type Diff = Extract<ServerMessage, { type: "diff" }>;
const welcome = fixtureFrames.find((f): f is Welcome => f.type === "welcome")!;
const diffs = fixtureFrames.filter((f): f is Diff => f.type === "diff");

class MemoryStore implements KeyValueStore {
  map = new Map<string, string>();
  getItem = (k: string) => this.map.get(k) ?? null;
  setItem = (k: string, v: string) => void this.map.set(k, v);
  removeItem = (k: string) => void this.map.delete(k);
}

class FakeSocket implements SocketLike {
  sent: Array<{ type: string; [k: string]: unknown }> = [];
  closed: number | null = null;
  onopen: (() => void) | null = null;
  onmessage: ((e: { data: unknown }) => void) | null = null;
  onclose: ((e: { code: number }) => void) | null = null;
  constructor(readonly url: string) {}
  send(data: string) {
    this.sent.push(JSON.parse(data));
  }
  close(code = 1000) {
    this.closed = code;
  }
  serve(frame: unknown) {
    this.onmessage?.({ data: typeof frame === "string" ? frame : JSON.stringify(frame) });
  }
  of(type: string) {
    return this.sent.filter((m) => m.type === type);
  }
}

const DEMO = storageKeys("ws://gateway/ws?projectId=demo");

function setup(storage = new MemoryStore(), gatewayUrl = "ws://gateway/ws") {
  const sockets: FakeSocket[] = [];
  let n = 0;
  const transport = createTransport({
    gatewayUrl,
    projectId: "demo",
    storage,
    createSocket: (url) => {
      const s = new FakeSocket(url);
      sockets.push(s);
      return s;
    },
    newCommandId: () => `id${n++}`,
  });
  transport.actor.start();
  return { transport, sockets, storage };
}

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe("transport shell", () => {
  it("opens the session, keeps its id and token, resolves commands with their results", async () => {
    const { transport, sockets, storage } = setup();
    expect(sockets[0].url).toBe("ws://gateway/ws?projectId=demo");
    sockets[0].onopen?.();
    sockets[0].serve(welcome);
    expect(storage.getItem(DEMO.session)).toBe(welcome.sessionId);
    expect(storage.getItem(DEMO.token)).toBe(welcome.resumeToken);
    const result = transport.command({ type: "OpenModal" });
    const sent = sockets[0].of("command")[0];
    expect(sent).toEqual({ type: "command", id: "id0", command: { type: "OpenModal" } });
    sockets[0].serve({ type: "result", commandId: "id0", status: "refused", error: { code: "close_disabled", message: "no" } });
    await expect(result).resolves.toMatchObject({ status: "refused", error: { code: "close_disabled" } });
  });

  it("resumes a stored session after a reload, and forgets it when the gateway says it is not ours", () => {
    const storage = new MemoryStore();
    storage.setItem(DEMO.session, welcome.sessionId);
    storage.setItem(DEMO.token, "fixture-token");
    const { sockets } = setup(storage);
    sockets[0].onopen?.();
    expect(sockets[0].of("hello")[0]).toMatchObject({ sessionId: welcome.sessionId, resumeToken: "fixture-token" });
    sockets[0].serve({ type: "error", code: "unauthorized", message: "unauthorized" });
    sockets[0].onclose?.({ code: 4001 });
    expect(storage.map.size).toBe(0);
  });

  it("sends a stored resume token only to the gateway that gave it", () => {
    // An outside review: a page of the same origin pointed at another gateway with the same
    // project id, and the widget sent that gateway the first one's session id and resume token.
    const storage = new MemoryStore();
    storage.setItem(DEMO.session, welcome.sessionId);
    storage.setItem(DEMO.token, "fixture-token");
    const elsewhere = setup(storage, "wss://other.example/ws");
    elsewhere.sockets[0].onopen?.();
    expect(elsewhere.sockets[0].of("hello")[0]).not.toHaveProperty("resumeToken");
    elsewhere.transport.stop();
    // The gateway that gave it gets it back (the positive path of the same check).
    const { sockets } = setup(storage);
    sockets[0].onopen?.();
    expect(sockets[0].of("hello")[0]).toMatchObject({ sessionId: welcome.sessionId, resumeToken: "fixture-token" });
  });

  it("counts frames it cannot read and goes on", () => {
    const { transport, sockets } = setup();
    sockets[0].onopen?.();
    sockets[0].serve("not json");
    sockets[0].serve({ type: "surprise" });
    sockets[0].serve(welcome);
    expect(transport.actor.getSnapshot().context.stats.malformed).toBe(2);
    expect(transport.actor.getSnapshot().matches({ live: "ready" })).toBe(true);
  });

  it("reconnects after a drop on XState's own timers (fake clock), and re-sends the unanswered command with its id", async () => {
    const { transport, sockets } = setup();
    sockets[0].onopen?.();
    sockets[0].serve(welcome);
    sockets[0].serve(diffs[0]);
    const pending = transport.command({ type: "CloseModal" });
    sockets[0].onclose?.({ code: 1006 });
    expect(sockets).toHaveLength(1);
    vi.advanceTimersByTime(backoffDelay(1));
    expect(sockets).toHaveLength(2);
    sockets[1].onopen?.();
    sockets[1].serve({ ...welcome, resumed: true, state: undefined, resumeToken: undefined, seq: diffs[0].seq, stateHash: diffs[0].stateHash });
    expect(sockets[1].of("command")).toEqual([{ type: "command", id: "id0", command: { type: "CloseModal" } }]);
    sockets[1].serve({ type: "result", commandId: "id0", status: "accepted", seq: 9 });
    await expect(pending).resolves.toMatchObject({ status: "accepted" });
  });

  it("stop() closes the socket, rejects what is pending and leaves no timer behind", async () => {
    const { transport, sockets } = setup();
    sockets[0].onopen?.();
    sockets[0].serve(welcome);
    const pending = transport.command({ type: "OpenModal" });
    expect(vi.getTimerCount()).toBe(1); // the silence timer of a ready socket
    transport.stop();
    await expect(pending).rejects.toBeInstanceOf(CommandDropped);
    expect(sockets[0].closed).toBe(1000);
    expect(vi.getTimerCount()).toBe(0);
    await expect(transport.command({ type: "OpenModal" })).rejects.toBeInstanceOf(CommandDropped);
    vi.advanceTimersByTime(60_000);
    expect(sockets).toHaveLength(1);
  });
});

describe("browser socket", () => {
  class ScriptedWebSocket {
    static last: ScriptedWebSocket;
    onopen: ((e: unknown) => void) | null = null;
    onmessage: ((e: { data: unknown }) => void) | null = null;
    onclose: ((e: { code: number }) => void) | null = null;
    sent: string[] = [];
    constructor(readonly url: string) {
      ScriptedWebSocket.last = this;
    }
    send(d: string) {
      this.sent.push(d);
    }
    close() {}
  }

  it("keeps what happens before the transport adopts it and delivers it in order", () => {
    // A test double for the browser's WebSocket (the DOM type's handlers take DOM events).
    const socket = openBrowserSocket(ScriptedWebSocket as unknown as typeof WebSocket, "ws://x/ws");
    const ws = ScriptedWebSocket.last;
    ws.onopen?.({});
    ws.onmessage?.({ data: "a" });
    const seen: string[] = [];
    socket.onopen = () => seen.push("open");
    socket.onmessage = (e) => seen.push(`message ${String(e.data)}`);
    expect(seen).toEqual([]); // not before every handler is attached
    socket.onclose = (e) => seen.push(`close ${e.code}`);
    expect(seen).toEqual(["open", "message a"]);
    ws.onclose?.({ code: 4005 });
    expect(seen).toEqual(["open", "message a", "close 4005"]);
  });
});

describe("host options", () => {
  it("given options that cannot be written as JSON (a bigint), when the transport is created, then the host's call throws, instead of the hello ending the transport later", () => {
    const options = { themeMode: "light", themeVariables: { "--vst-z-index": 10n } };
    const create = () =>
      createTransport({
        gatewayUrl: "ws://gateway/ws",
        projectId: "demo",
        options: options as unknown as Record<string, never>,
        storage: new MemoryStore(),
        createSocket: (url) => new FakeSocket(url),
        newCommandId: () => "c",
      });
    expect(create).toThrow(/BigInt/i);
  });
});

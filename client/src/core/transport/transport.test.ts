// The transport against a scripted server that speaks with the frames the Rust side produced:
// storage of the session, acks, resume with lastSeq after a drop, resync on a gap and on a hash
// mismatch, and command results.

import { describe, expect, it } from "vitest";
import { fixtureFrames } from "../generated/fixtureFrames";
import type { ServerMessage } from "../generated/ServerMessage";
import { defaultBackoff, OFFLINE_RETRY_MS, Transport, type KeyValueStore, type SocketLike } from "./transport";

type Diff = Extract<ServerMessage, { type: "diff" }>;
type Welcome = Extract<ServerMessage, { type: "welcome" }>;
const welcome = fixtureFrames.find((f) => f.type === "welcome") as Welcome;
const diffs = fixtureFrames.filter((f): f is Diff => f.type === "diff");

class MemoryStore implements KeyValueStore {
  map = new Map<string, string>();
  getItem(k: string) {
    return this.map.get(k) ?? null;
  }
  setItem(k: string, v: string) {
    this.map.set(k, v);
  }
  removeItem(k: string) {
    this.map.delete(k);
  }
}

class FakeSocket implements SocketLike {
  sent: any[] = [];
  closed = false;
  onopen: (() => void) | null = null;
  onmessage: ((e: { data: unknown }) => void) | null = null;
  onclose: ((e: { code: number }) => void) | null = null;
  constructor(readonly url: string) {}
  send(data: string) {
    this.sent.push(JSON.parse(data));
  }
  close() {
    this.closed = true;
  }
  serve(frame: unknown) {
    this.onmessage?.({ data: JSON.stringify(frame) });
  }
}

function setup() {
  const sockets: FakeSocket[] = [];
  const timers: Array<() => void> = [];
  const delays: number[] = [];
  const storage = new MemoryStore();
  const transport = new Transport({
    url: "ws://gateway/ws",
    projectId: "demo",
    storage,
    createSocket: (url) => {
      const s = new FakeSocket(url);
      sockets.push(s);
      queueMicrotask(() => s.onopen?.());
      return s;
    },
    setTimer: (f, ms) => {
      timers.push(f);
      delays.push(ms);
    },
  });
  return { transport, sockets, timers, delays, storage };
}

const settle = () => new Promise((r) => setTimeout(r, 20));

async function until(condition: () => boolean, ms = 3000) {
  const end = Date.now() + ms;
  while (!condition() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
}

describe("Transport", () => {
  it("opens a session, stores its id and token, applies and acks every diff", async () => {
    const { transport, sockets, storage } = setup();
    transport.connect();
    await settle();
    expect(sockets[0].url).toBe("ws://gateway/ws?projectId=demo");
    expect(sockets[0].sent[0]).toMatchObject({ type: "hello", protocol: 1, projectId: "demo" });
    sockets[0].serve(welcome);
    for (const d of diffs) sockets[0].serve(d);
    await until(() => transport.mirror.seq === diffs[diffs.length - 1].seq);
    expect(transport.mirror.seq).toBe(diffs[diffs.length - 1].seq);
    expect(storage.getItem("vestibule:demo:session")).toBe(welcome.sessionId);
    expect(storage.getItem("vestibule:demo:token")).toBe(welcome.resumeToken);
    const acks = sockets[0].sent.filter((m) => m.type === "ack").map((m) => m.seq);
    expect(acks).toEqual(diffs.map((d) => d.seq));
  });

  it("resumes with its last seq after a drop, with backoff", async () => {
    const { transport, sockets, timers } = setup();
    transport.connect();
    await settle();
    sockets[0].serve(welcome);
    sockets[0].serve(diffs[0]);
    await settle();
    sockets[0].onclose?.({ code: 1006 });
    expect(timers.length).toBe(1);
    timers[0]();
    await settle();
    expect(sockets[1].sent[0]).toMatchObject({ type: "hello", sessionId: welcome.sessionId, resumeToken: welcome.resumeToken, lastSeq: diffs[0].seq });
    sockets[1].serve({ ...welcome, resumed: true, state: undefined, resumeToken: undefined, seq: diffs[1].seq });
    sockets[1].serve(diffs[1]);
    await settle();
    expect(transport.mirror.seq).toBe(diffs[1].seq);
    expect([0, 1, 2, 3, 10].map(defaultBackoff)).toEqual([10, 20, 40, 80, 3000]);
  });

  it("resyncs: a gap resumes from the mirror's seq, a hash mismatch asks for the whole state", async () => {
    const { transport, sockets } = setup();
    transport.connect();
    await settle();
    sockets[0].serve(welcome);
    sockets[0].serve(diffs[1]); // skips diffs[0]
    await settle();
    expect(transport.stats.gaps).toBe(1);
    expect(sockets[0].closed).toBe(true);
    await settle();
    expect(sockets[1].sent[0]).toMatchObject({ type: "hello", lastSeq: welcome.seq });
    sockets[1].serve({ ...welcome, resumed: true, state: undefined, resumeToken: undefined });
    sockets[1].serve({ ...diffs[0], stateHash: "0000000000000000" });
    await settle();
    expect(transport.stats.hashMismatches).toBe(1);
    await settle();
    expect(sockets[2].sent[0].lastSeq).toBeUndefined();
    expect(sockets[2].sent[0].sessionId).toBe(welcome.sessionId);
  });

  it("resolves a command with its result", async () => {
    const { transport, sockets } = setup();
    transport.connect();
    await settle();
    sockets[0].serve(welcome);
    await settle();
    const pending = transport.command({ type: "OpenModal" } as never);
    const sent = sockets[0].sent.find((m) => m.type === "command");
    expect(sent.command).toEqual({ type: "OpenModal" });
    sockets[0].serve({ type: "result", commandId: sent.id, status: "accepted", seq: 2 });
    expect(await pending).toMatchObject({ status: "accepted", seq: 2 });
  });

  it("goes quiet while the browser is offline and resumes from its seq when it is back", async () => {
    const { transport, sockets, delays } = setup();
    transport.connect();
    await settle();
    sockets[0].serve(welcome);
    sockets[0].serve(diffs[0]);
    await settle();
    transport.suspend();
    expect(sockets[0].closed).toBe(true);
    expect(transport.online).toBe(false);
    sockets[0].onclose?.({ code: 1006 });
    sockets[0].serve(diffs[1]); // a frame still in flight on the old socket is not applied
    await settle();
    expect(transport.mirror.seq).toBe(diffs[0].seq);
    // Offline: one slow attempt is scheduled, no fast ones.
    expect(delays).toEqual([OFFLINE_RETRY_MS]);
    expect(sockets.length).toBe(1);
    transport.wake();
    await settle();
    expect(sockets[1].sent[0]).toMatchObject({ type: "hello", lastSeq: diffs[0].seq });
    sockets[1].serve({ ...welcome, resumed: true, state: undefined, resumeToken: undefined, seq: diffs[1].seq });
    sockets[1].serve(diffs[1]);
    await until(() => transport.mirror.seq === diffs[1].seq);
    expect(transport.mirror.seq).toBe(diffs[1].seq);
    expect(transport.stats.gaps).toBe(0);
  });

  it("keeps a command sent before the welcome and sends it once the session is there", async () => {
    const { transport, sockets } = setup();
    transport.connect();
    const early = transport.command({ type: "OpenModal" } as never);
    await settle();
    expect(sockets[0].sent.filter((m) => m.type === "command")).toEqual([]);
    sockets[0].serve(welcome);
    await until(() => sockets[0].sent.some((m) => m.type === "command"));
    const sent = sockets[0].sent.filter((m) => m.type === "command");
    expect(sent.map((m) => m.command)).toEqual([{ type: "OpenModal" }]);
    expect(sockets[0].sent.findIndex((m) => m.type === "hello")).toBeLessThan(sockets[0].sent.indexOf(sent[0]));
    sockets[0].serve({ type: "result", commandId: sent[0].id, status: "accepted", seq: 2 });
    expect(await early).toMatchObject({ status: "accepted" });
  });

  it("backs off while attempts keep failing, and starts again from the shortest delay after a welcome", async () => {
    const { transport, sockets, timers, delays } = setup();
    transport.connect();
    await settle();
    for (let i = 0; i < 4; i++) {
      sockets[i].onclose?.({ code: 1006 }); // the gateway is down: no welcome
      timers[i]();
      await settle();
    }
    expect(delays).toEqual([10, 20, 40, 80]);
    sockets[4].serve(welcome);
    await settle();
    sockets[4].onclose?.({ code: 1006 });
    expect(delays.at(-1)).toBe(10);
  });
});

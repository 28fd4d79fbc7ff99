// The transport statechart, given / when / then, against frames the Rust side produced
// (generated/fixtureFrames.ts). Time is XState's SimulatedClock: nothing here sleeps.

import { describe, expect, it } from "vitest";
import { createActor, fromCallback, fromPromise, SimulatedClock } from "xstate";
import { CLOSE_CODES, PROTOCOL_VERSION } from "../../generated/constants";
import { fixtureFrames } from "../../generated/fixtureFrames";
import type { ServerMessage } from "../../generated/ServerMessage";
import type { Refusal } from "../refusal";
import {
  backoffDelay,
  MAX_IMMEDIATE_RESYNCS,
  MAX_QUEUED_COMMANDS,
  OFFLINE_RETRY_MS,
  PING_AFTER_MS,
  PONG_TIMEOUT_MS,
  transportMachine,
  type CheckInput,
  type Credentials,
  type SocketCommand,
  type SocketInput,
  type TransportEmitted,
} from "./machine";

type Welcome = Extract<ServerMessage, { type: "welcome" }>;
type Diff = Extract<ServerMessage, { type: "diff" }>;
const isWelcome = (f: ServerMessage): f is Welcome => f.type === "welcome";
const isDiff = (f: ServerMessage): f is Diff => f.type === "diff";
const welcome = fixtureFrames.find(isWelcome)!;
const diffs = fixtureFrames.filter(isDiff);
/** The server's state hash at `seq` in the fixture session. */
const hashAt = (seq: number) => (seq === welcome.seq ? welcome.stateHash : diffs.find((d) => d.seq === seq)!.stateHash);
const resumedWelcome = (seq: number, stateHash = hashAt(seq)): Welcome => ({ type: "welcome", protocol: PROTOCOL_VERSION, sessionId: welcome.sessionId, seq, resumed: true, stateHash });
const CREDENTIALS: Credentials = { sessionId: welcome.sessionId, resumeToken: "fixture-token" };

interface Sent {
  socket: number;
  message: { type: string; [k: string]: unknown };
}

/** A transport with scripted socket and check actors; `check` answers every `/ws/check`. */
function given({ credentials = null as Credentials | null, check = null as Refusal | null } = {}) {
  const clock = new SimulatedClock();
  const sent: Sent[] = [];
  const closed: number[] = [];
  let sockets = 0;
  let checks = 0;
  const socket = fromCallback<SocketCommand, SocketInput>(({ receive }) => {
    const n = ++sockets;
    receive((c) => sent.push({ socket: n, message: JSON.parse(c.data) }));
    return () => closed.push(n);
  });
  const checkActor = fromPromise<Refusal | null, CheckInput>(async () => {
    checks++;
    return check;
  });
  const actor = createActor(transportMachine.provide({ actors: { socket, check: checkActor } }), {
    clock,
    input: { url: "ws://gateway/ws?projectId=demo", projectId: "demo", options: { themeMode: "light" }, credentials },
  });
  const emitted: TransportEmitted[] = [];
  actor.on("*", (e) => emitted.push(e));
  actor.start();
  const t = {
    actor,
    clock,
    sent,
    closed,
    emitted,
    get sockets() {
      return sockets;
    },
    get checks() {
      return checks;
    },
    state: () => actor.getSnapshot().value,
    context: () => actor.getSnapshot().context,
    open: () => actor.send({ type: "SOCKET.OPEN" }),
    serve: (frame: ServerMessage) => actor.send({ type: "SOCKET.FRAME", frame }),
    drop: (code = 1006) => actor.send({ type: "SOCKET.CLOSE", code }),
    command: (id: string) => actor.send({ type: "COMMAND", id, command: { type: "OpenModal" } }),
    /** What the current (latest) socket was sent, by type. */
    on: (socket: number, type?: string) => sent.filter((s) => s.socket === socket && (!type || s.message.type === type)).map((s) => s.message),
    /** Opens the current socket and answers with a welcome. */
    welcome(frame: Welcome = welcome) {
      t.open();
      t.serve(frame);
    },
    async flush() {
      // Promise actors (the check) settle on the microtask queue.
      for (let i = 0; i < 5; i++) await Promise.resolve();
    },
  };
  return t;
}

describe("transport machine: opening a session", () => {
  it("given a new page, when the socket opens, then it says hello with the host's options and no session", () => {
    const t = given();
    expect(t.state()).toEqual({ live: "connecting" });
    t.open();
    expect(t.state()).toEqual({ live: "handshaking" });
    expect(t.on(1)).toEqual([{ type: "hello", protocol: PROTOCOL_VERSION, projectId: "demo", options: { themeMode: "light" } }]);
  });

  it("given a stored session, when the socket opens, then it resumes it (the whole state: nothing mirrored yet)", () => {
    const t = given({ credentials: CREDENTIALS });
    t.open();
    expect(t.on(1)).toEqual([{ type: "hello", protocol: PROTOCOL_VERSION, projectId: "demo", sessionId: CREDENTIALS.sessionId, resumeToken: CREDENTIALS.resumeToken }]);
  });

  it("given commands sent while the socket opens, when the welcome comes, then they go out in order after the hello and the credentials are kept", () => {
    const t = given();
    t.command("c1");
    t.command("c2");
    t.welcome();
    expect(t.state()).toEqual({ live: { ready: "listening" } });
    expect(t.on(1).map((m) => m.type)).toEqual(["hello", "command", "command"]);
    expect(t.on(1, "command").map((m) => m.id)).toEqual(["c1", "c2"]);
    expect(t.emitted).toContainEqual({ type: "credentials", credentials: CREDENTIALS });
    expect(t.emitted).toContainEqual(expect.objectContaining({ type: "applied", whole: true, events: [] }));
    expect(t.context().mirror.seq).toBe(welcome.seq);
  });

  it("given more than 64 commands waiting, when one more is sent, then it is dropped (not queued without bound)", () => {
    const t = given();
    for (let i = 0; i < MAX_QUEUED_COMMANDS; i++) t.command(`c${i}`);
    t.command("one-too-many");
    expect(t.context().commands).toHaveLength(MAX_QUEUED_COMMANDS);
    expect(t.emitted).toContainEqual(expect.objectContaining({ type: "dropped", id: "one-too-many" }));
  });
});

describe("transport machine: commands that cannot be written as JSON", () => {
  // A command carrying a bigint (a wallet's `1n`), a cycle or a throwing getter cannot be
  // JSON.stringify'd. It is dropped like an unsendable command; the transport itself lives on.
  const cyclic = (): unknown => {
    const o: Record<string, unknown> = {};
    o.self = o;
    return o;
  };
  const unwritable: Array<[string, () => unknown]> = [
    ["a bigint", () => 1n],
    ["a cycle", cyclic],
    ["a throwing getter", () => ({ get boom() { throw new Error("no"); } })],
  ];
  const resolve = (result: unknown) => ({ type: "ResolveWalletRequest" as const, requestId: "r1", outcome: { status: "ok" as const, result } });

  it.each(unwritable)("given a ready transport, when a command carries %s, then it is dropped with a reason, and later commands still go out", (_name, value) => {
    const t = given();
    t.welcome();
    t.actor.send({ type: "COMMAND", id: "bad", command: resolve(value()) });
    expect(t.actor.getSnapshot().status).toBe("active");
    expect(t.emitted).toContainEqual({ type: "dropped", id: "bad", reason: expect.stringMatching(/cannot be sent/) });
    expect(t.context().commands).toEqual([]);
    t.command("good");
    expect(t.on(1, "command").map((m) => m.id)).toEqual(["good"]);
    expect(t.state()).toEqual({ live: { ready: "listening" } });
  });

  it.each(unwritable)("given a transport still connecting, when a queued command carries %s, then it is dropped at once and the others go out after the welcome", (_name, value) => {
    const t = given();
    t.command("before");
    t.actor.send({ type: "COMMAND", id: "bad", command: resolve(value()) });
    t.command("after");
    expect(t.emitted).toContainEqual({ type: "dropped", id: "bad", reason: expect.stringMatching(/cannot be sent/) });
    t.welcome();
    expect(t.actor.getSnapshot().status).toBe("active");
    expect(t.on(1, "command").map((m) => m.id)).toEqual(["before", "after"]);
  });
});

describe("transport machine: diffs", () => {
  it("given a ready transport, when the fixture's diffs arrive, then each is applied and acked in order", () => {
    const t = given();
    t.welcome();
    for (const d of diffs) t.serve(d);
    expect(t.on(1, "ack").map((m) => m.seq)).toEqual(diffs.map((d) => d.seq));
    expect(t.context().mirror.seq).toBe(diffs.at(-1)!.seq);
    const applied = t.emitted.filter((e) => e.type === "applied" && !e.whole);
    expect(applied).toHaveLength(diffs.length);
    expect(t.context().stats).toMatchObject({ gaps: 0, hashMismatches: 0, acks: diffs.length });
  });

  it("given a ready transport, when a diff skips one, then it reconnects at once and resumes from the mirror's seq", () => {
    const t = given();
    t.welcome();
    t.serve(diffs[1]);
    expect(t.context().stats.gaps).toBe(1);
    expect(t.closed).toEqual([1]);
    expect(t.sockets).toBe(2);
    t.open();
    expect(t.on(2, "hello")[0]).toMatchObject({ sessionId: welcome.sessionId, lastSeq: welcome.seq });
  });

  it("given a ready transport, when a diff does not hash like the server's state, then it asks for the whole state", () => {
    const t = given();
    t.welcome();
    t.serve({ ...diffs[0], stateHash: "0000000000000000" });
    expect(t.context().stats.hashMismatches).toBe(1);
    expect(t.context().mirror.seq).toBe(welcome.seq);
    t.open();
    const hello = t.on(2, "hello")[0];
    expect(hello.sessionId).toBe(welcome.sessionId);
    expect(hello).not.toHaveProperty("lastSeq");
    // The whole state comes back and the widget goes on from it.
    t.serve({ ...welcome, resumeToken: undefined });
    expect(t.state()).toEqual({ live: { ready: "listening" } });
  });

  it("given a welcome that does not hash like its state, when it arrives, then the widget asks again for the whole state", () => {
    const t = given();
    t.welcome({ ...welcome, stateHash: "0000000000000000" });
    expect(t.context().stats.hashMismatches).toBe(1);
    expect(t.context().mirror.state).toBeNull();
    expect(t.sockets).toBe(2);
  });

  it("given a welcome that never hashes right, when it keeps coming, then the widget stops reconnecting at once and backs off", () => {
    const t = given();
    const bad = { ...welcome, stateHash: "0000000000000000" };
    for (let i = 1; i <= MAX_IMMEDIATE_RESYNCS; i++) {
      t.welcome(bad);
      expect(t.sockets).toBe(i + 1); // at once
    }
    t.welcome(bad);
    expect(t.state()).toBe("backoff");
    expect(t.sockets).toBe(MAX_IMMEDIATE_RESYNCS + 1);
    t.clock.increment(backoffDelay(MAX_IMMEDIATE_RESYNCS + 1));
    expect(t.sockets).toBe(MAX_IMMEDIATE_RESYNCS + 2);
    // A good welcome ends it: the next resync is immediate again.
    t.welcome();
    expect(t.context().failures).toBe(0);
  });

  it("given a mirror at seq n, when a resumed welcome at n carries another state's hash, then the whole state is asked for", () => {
    // The gateway lost this tab's last event and another tab moved the session to the same seq.
    const t = given();
    t.welcome();
    t.serve(diffs[0]);
    t.drop(1006);
    t.clock.increment(backoffDelay(1));
    t.welcome(resumedWelcome(diffs[0].seq, "another state at the same seq"));
    expect(t.on(2, "hello")[0]).toMatchObject({ lastSeq: diffs[0].seq });
    expect(t.context().stats.hashMismatches).toBe(1);
    t.open();
    expect(t.on(3, "hello")[0]).not.toHaveProperty("lastSeq");
  });

  it("given a chart disagreement, when the shell asks to resync, then it is counted and the whole state is asked for", () => {
    const t = given();
    t.welcome();
    t.serve(diffs[0]);
    t.actor.send({ type: "RESYNC", detail: "router: Connect, state says Account" });
    expect(t.context().stats.chartDisagreements).toBe(1);
    t.open();
    expect(t.on(2, "hello")[0]).not.toHaveProperty("lastSeq");
  });
});

describe("transport machine: drops, close codes and backoff", () => {
  it("given a command in flight, when the socket drops, then after the backoff it resumes and sends the command again under the same id", () => {
    const t = given();
    t.welcome();
    t.serve(diffs[0]);
    t.command("in-flight");
    expect(t.on(1, "command").map((m) => m.id)).toEqual(["in-flight"]);
    t.drop(1006);
    expect(t.state()).toBe("backoff");
    t.clock.increment(backoffDelay(1) - 1);
    expect(t.sockets).toBe(1);
    t.clock.increment(1);
    expect(t.sockets).toBe(2);
    t.welcome(resumedWelcome(diffs[0].seq));
    expect(t.on(2, "hello")[0]).toMatchObject({ lastSeq: diffs[0].seq });
    expect(t.on(2, "command").map((m) => m.id)).toEqual(["in-flight"]);
    expect(t.context().stats.resent).toBe(1);
    // Its (first) result settles it: it is not sent a third time.
    t.serve({ type: "result", commandId: "in-flight", status: "accepted", seq: diffs[0].seq });
    expect(t.context().commands).toEqual([]);
    expect(t.emitted).toContainEqual({ type: "result", result: { type: "result", commandId: "in-flight", status: "accepted", seq: diffs[0].seq } });
  });

  it("given attempts that keep failing, when each closes, then the delay doubles from 10 ms to 3 s and a welcome resets it", async () => {
    const t = given();
    const delays: number[] = [];
    for (let i = 0; i < 10; i++) {
      t.drop(1006); // before any welcome: the gateway is asked why (it says it would accept)
      await t.flush();
      expect(t.state()).toBe("backoff");
      const before = t.sockets;
      let waited = 0;
      while (t.sockets === before) {
        t.clock.increment(1);
        waited++;
      }
      delays.push(waited);
    }
    expect(delays).toEqual([10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3000]);
    expect(t.checks).toBe(10);
    t.welcome();
    expect(t.context().failures).toBe(0);
    t.drop(4005);
    expect(t.state()).toBe("backoff");
    t.clock.increment(10);
    expect(t.state()).toEqual({ live: "connecting" });
  });

  it.each([
    ["4004 too slow", CLOSE_CODES.TOO_SLOW],
    ["4005 heartbeat timeout", CLOSE_CODES.HEARTBEAT_TIMEOUT],
    ["1001 shutting down", CLOSE_CODES.GOING_AWAY],
    ["1011 busy or internal", CLOSE_CODES.INTERNAL],
  ])("given a ready transport, when the gateway closes with %s, then it resumes with its last seq", (_, code) => {
    const t = given();
    t.welcome();
    t.serve(diffs[0]);
    t.drop(code);
    t.clock.increment(backoffDelay(1));
    t.open();
    expect(t.on(2, "hello")[0]).toMatchObject({ sessionId: welcome.sessionId, lastSeq: diffs[0].seq });
    expect(t.emitted.filter((e) => e.type === "credentials" && e.credentials === null)).toEqual([]);
  });

  it.each([
    ["4001 unauthorized", CLOSE_CODES.UNAUTHORIZED],
    ["4006 session ended", CLOSE_CODES.SESSION_ENDED],
  ])("given a stored session, when the gateway closes with %s, then the widget forgets it and starts a new one", (_, code) => {
    const t = given({ credentials: CREDENTIALS });
    t.command("queued"); // not sent yet: kept for the new session
    t.open();
    t.serve({ type: "error", code: "unauthorized", message: "unauthorized" });
    t.drop(code);
    expect(t.emitted).toContainEqual({ type: "credentials", credentials: null });
    t.clock.increment(backoffDelay(0));
    t.open();
    expect(t.on(2, "hello")[0]).toEqual({ type: "hello", protocol: PROTOCOL_VERSION, projectId: "demo", options: { themeMode: "light" } });
    t.serve(welcome);
    expect(t.on(2, "command").map((m) => m.id)).toEqual(["queued"]);
  });

  it("given a session with a command in flight, when the session ends (4006), then that command is dropped, not sent to the new session", () => {
    const t = given();
    t.welcome();
    t.command("old-session");
    t.drop(CLOSE_CODES.SESSION_ENDED);
    expect(t.emitted).toContainEqual(expect.objectContaining({ type: "dropped", id: "old-session" }));
    t.clock.increment(backoffDelay(0));
    t.welcome();
    expect(t.on(2, "command")).toEqual([]);
  });

  it.each([
    ["4000 bad hello (invalid options)", CLOSE_CODES.BAD_HELLO, { code: "invalid_options", message: "option `themeVariables.--x`: unknown theme variable" }],
    ["4002 unsupported protocol", CLOSE_CODES.UNSUPPORTED_PROTOCOL, { code: "unsupported_protocol", message: "unsupported protocol 2" }],
  ])("given a hello the gateway cannot accept, when it closes with %s, then the transport is refused for good with the server's reason", (_, code, error) => {
    const t = given();
    t.open();
    t.serve({ type: "error", code: error.code === "invalid_options" ? "invalid_options" : "unsupported_protocol", message: error.message });
    t.drop(code);
    expect(t.state()).toBe("refused");
    expect(t.context().refusal).toEqual(error);
    t.clock.increment(60_000);
    expect(t.sockets).toBe(1);
    t.command("after");
    expect(t.emitted).toContainEqual(expect.objectContaining({ type: "dropped", id: "after" }));
  });

  it.each([
    ["1009 frame too large", CLOSE_CODES.TOO_BIG],
    ["1002 protocol error", CLOSE_CODES.PROTOCOL_ERROR],
    ["1007 invalid payload", CLOSE_CODES.INVALID_PAYLOAD],
  ])("given a command in flight, when the gateway closes with %s, then that command is dropped and the session resumes", (_name, code) => {
    const t = given();
    t.welcome();
    t.command("huge");
    t.drop(code);
    expect(t.emitted).toContainEqual(expect.objectContaining({ type: "dropped", id: "huge" }));
    t.clock.increment(backoffDelay(1));
    t.welcome(resumedWelcome(welcome.seq));
    expect(t.on(2, "command")).toEqual([]);
  });

  it("given the gateway refuses the page before any welcome, when /ws/check names a configuration error, then the transport is refused", async () => {
    const refusal: Refusal = { code: "invalid_app_configuration", message: "Invalid App Configuration" };
    const t = given({ check: refusal });
    t.drop(1006);
    expect(t.state()).toBe("checking");
    await t.flush();
    expect(t.state()).toBe("refused");
    expect(t.context().refusal).toEqual(refusal);
  });

  it("given the gateway is only rate limiting, when /ws/check says so, then the widget backs off and tries again", async () => {
    const t = given({ check: { code: "rate_limited", message: "Rate Limited" } });
    t.drop(1006);
    await t.flush();
    expect(t.state()).toBe("backoff");
    t.clock.increment(backoffDelay(1));
    expect(t.sockets).toBe(2);
  });
});

describe("transport machine: offline, visibility and liveness", () => {
  it("given a ready transport, when the browser goes offline, then the socket is closed and only one slow attempt is made until it is back", () => {
    const t = given();
    t.welcome();
    t.serve(diffs[0]);
    t.actor.send({ type: "OFFLINE" });
    expect(t.state()).toBe("offline");
    expect(t.closed).toEqual([1]);
    t.clock.increment(OFFLINE_RETRY_MS - 1);
    expect(t.sockets).toBe(1);
    t.clock.increment(1);
    expect(t.sockets).toBe(2); // the probe
    t.drop(1006);
    expect(t.state()).toBe("offline"); // still offline: no fast retries
    t.clock.increment(OFFLINE_RETRY_MS - 1);
    expect(t.sockets).toBe(2);
    t.actor.send({ type: "ONLINE" });
    expect(t.sockets).toBe(3);
    t.open();
    expect(t.on(3, "hello")[0]).toMatchObject({ lastSeq: diffs[0].seq });
  });

  it("given a transport waiting to retry, when the page becomes visible, then it tries at once", () => {
    const t = given();
    t.welcome();
    t.drop(1006);
    expect(t.state()).toBe("backoff");
    t.actor.send({ type: "VISIBLE" });
    expect(t.sockets).toBe(2);
  });

  it("given a silent ready socket, when 20 s pass, then it pings; when 10 s more pass without a frame, then it gives the socket up and resumes", () => {
    const t = given();
    t.welcome();
    t.clock.increment(PING_AFTER_MS - 1);
    expect(t.on(1, "ping")).toEqual([]);
    // A frame restarts the silence timer.
    t.serve({ type: "pong" });
    t.clock.increment(PING_AFTER_MS - 1);
    expect(t.on(1, "ping")).toEqual([]);
    t.clock.increment(1);
    expect(t.on(1, "ping")).toEqual([{ type: "ping" }]);
    t.clock.increment(PONG_TIMEOUT_MS);
    expect(t.closed).toEqual([1]);
    expect(t.state()).toBe("backoff");
    t.clock.increment(backoffDelay(1));
    t.open();
    expect(t.on(2, "hello")[0]).toMatchObject({ lastSeq: welcome.seq });
  });

  it("given a pinged socket, when the pong comes, then it stays", () => {
    const t = given();
    t.welcome();
    t.clock.increment(PING_AFTER_MS);
    t.serve({ type: "pong" });
    t.clock.increment(PONG_TIMEOUT_MS);
    expect(t.closed).toEqual([]);
    expect(t.state()).toEqual({ live: { ready: "listening" } });
  });
});

describe("transport machine: stopping", () => {
  it("given a transport in any state, when it is stopped, then the socket closes, commands are dropped and no timer fires again", () => {
    const t = given();
    t.welcome();
    t.command("pending");
    t.drop(1006);
    t.actor.send({ type: "STOP" });
    expect(t.actor.getSnapshot().status).toBe("done");
    expect(t.emitted).toContainEqual(expect.objectContaining({ type: "dropped", id: "pending" }));
    t.clock.increment(60_000);
    expect(t.sockets).toBe(1);
  });
});

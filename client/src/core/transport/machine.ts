// The transport as a statechart (XState v5): one WebSocket to the session, resumed across drops.
// Pure: the socket and the `/ws/check` request are actors the shell provides (`transport.ts`), time
// is XState's delayed transitions, storage and promise resolution are emitted events. The states:
//
//   live (a socket exists; invoked `socket` actor, closed when `live` is left)
//     connecting   the socket is opening
//     handshaking  `hello` sent, waiting for the welcome
//     ready        welcomed: commands go out, diffs are applied and acked; a ping after 20 s of
//                  silence, and the socket is given up if 10 s more pass without a frame
//   checking       the socket closed before its welcome: ask `GET /ws/check` why
//   backoff        waiting to try again (10 ms doubling to 3 s)
//   offline        the browser says it is offline: one attempt every 3 s until it is back
//   refused        the gateway refuses this page for good (the configuration alert)
//   stopped        destroyed
//
// Close codes (docs/protocol.md): 4001 and 4006 start a new session; 4000 and 4002 are refusals
// (this page's hello cannot succeed); 1002, 1007 and 1009 drop the commands in flight (one of them
// broke the connection) and resume; every other code resumes from the mirror's seq after a backoff.
// Commands unanswered when a socket drops are sent again after the next welcome under the same id
// (the server answers a repeated id with its first result).
//
// No action throws (one that did would end the transport for good, and every later command with
// it): a command that cannot be written as JSON (a wallet's bigint, a cycle, a throwing getter) is
// dropped like one that cannot be queued. (The hello cannot throw: the shell, transport.ts, hands
// the machine the host's options as a plain JSON copy.)

import { assign, emit, enqueueActions, fromCallback, fromPromise, not, sendTo, setup, stateIn } from "xstate";
import type { ClientCommand } from "../../generated/ClientCommand";
import type { ClientMessage } from "../../generated/ClientMessage";
import { CLOSE_CODES, PROTOCOL_VERSION } from "../../generated/constants";
import type { ServerMessage } from "../../generated/ServerMessage";
import type { WireEvent } from "../../generated/WireEvent";
import { applyDiff, applyWelcome, EMPTY_MIRROR, type Mirror } from "../mirror";
import type { SessionOptionsInput } from "../options";
import { PERMANENT_REFUSALS, type Refusal } from "../refusal";

export const MAX_BACKOFF_MS = 3000;
export const backoffDelay = (failures: number) => Math.min(10 * 2 ** Math.max(0, failures - 1), MAX_BACKOFF_MS);
/** While the browser says it is offline, one attempt per this many ms. */
export const OFFLINE_RETRY_MS = MAX_BACKOFF_MS;
/** Commands kept while no socket is ready; a visitor's click before then is not lost. */
export const MAX_QUEUED_COMMANDS = 64;
/** Silence on a ready socket before the widget pings, and then before it gives the socket up. */
export const PING_AFTER_MS = 20_000;
export const PONG_TIMEOUT_MS = 10_000;
/** Resyncs in a row (without a good welcome between) made at once; after that they back off. */
export const MAX_IMMEDIATE_RESYNCS = 2;

export interface Credentials {
  sessionId: string;
  resumeToken: string;
}

export type CommandResult = Extract<ServerMessage, { type: "result" }>;

export interface PendingCommand {
  id: string;
  command: ClientCommand;
  /** The command's frame, written once when it came (and sent again as it is after a drop). */
  data: string;
  /** Sent on some socket (and not answered yet). */
  sent: boolean;
}

export interface TransportStats {
  /** Sockets that opened. */
  connections: number;
  welcomes: number;
  gaps: number;
  hashMismatches: number;
  acks: number;
  /** Commands sent again after a drop. */
  resent: number;
  /** Full resyncs asked for because a mirrored chart disagreed with the state. */
  chartDisagreements: number;
  /** Frames the widget could not read. */
  malformed: number;
}

export interface TransportInput {
  /** `ws(s)://host/ws?projectId=…` */
  url: string;
  projectId: string;
  options?: SessionOptionsInput;
  credentials: Credentials | null;
}

export interface TransportContext {
  url: string;
  projectId: string;
  options: SessionOptionsInput | undefined;
  credentials: Credentials | null;
  mirror: Mirror;
  /** The next hello asks for the whole state (no `lastSeq`). */
  wantFullState: boolean;
  /** Failed attempts since the last welcome. */
  failures: number;
  /** The browser said it is offline (until it says online). */
  offline: boolean;
  /** Commands not answered yet, in the order the page sent them. */
  commands: PendingCommand[];
  /** The last protocol error the server sent (its close code follows). */
  lastError: Refusal | null;
  refusal: Refusal | null;
  stats: TransportStats;
}

export type TransportEvent =
  | { type: "SOCKET.OPEN" }
  | { type: "SOCKET.FRAME"; frame: ServerMessage }
  | { type: "SOCKET.MALFORMED"; reason: string }
  | { type: "SOCKET.CLOSE"; code: number }
  | { type: "COMMAND"; id: string; command: ClientCommand }
  /** A mirrored chart disagreed with the state: ask for the whole state again. */
  | { type: "RESYNC"; detail: string }
  | { type: "ONLINE" }
  | { type: "OFFLINE" }
  /** The page became visible: a waiting transport tries again now. */
  | { type: "VISIBLE" }
  | { type: "STOP" }
  // Raised by the machine itself after applying a frame.
  | { type: "MIRROR.READY" }
  | { type: "MIRROR.RESYNC"; full: boolean };

export type TransportEmitted =
  | { type: "credentials"; credentials: Credentials | null }
  | { type: "result"; result: CommandResult }
  | { type: "dropped"; id: string; reason: string }
  /** The mirror moved: a whole state (`whole`, e.g. after a welcome) or a diff's events. */
  | { type: "applied"; mirror: Mirror; events: WireEvent[]; whole: boolean };

/** What the socket actor is told: a frame to send. */
export type SocketCommand = { type: "SEND"; data: string };
export interface SocketInput {
  url: string;
}
export interface CheckInput {
  url: string;
}

type Hello = Omit<Extract<ClientMessage, { type: "hello" }>, "options"> & { options?: SessionOptionsInput };

function hello(c: TransportContext): Hello {
  const base = { type: "hello", protocol: PROTOCOL_VERSION, projectId: c.projectId } as const;
  if (c.credentials) {
    const lastSeq = c.mirror.state && !c.wantFullState ? { lastSeq: c.mirror.seq } : {};
    return { ...base, sessionId: c.credentials.sessionId, resumeToken: c.credentials.resumeToken, ...lastSeq };
  }
  return c.options ? { ...base, options: c.options } : base;
}

const wire = (message: ClientMessage | Hello): SocketCommand => ({ type: "SEND", data: JSON.stringify(message) });

/** The pending command of a COMMAND event, or why it cannot be sent (JSON.stringify threw). */
function pendingOf(id: string, command: ClientCommand, sent: boolean): PendingCommand | string {
  try {
    return { id, command, sent, data: JSON.stringify({ type: "command", id, command } satisfies ClientMessage) };
  } catch (e) {
    return `the command cannot be sent: ${e instanceof Error ? e.message : "it is not JSON"}`;
  }
}
const bump = (stats: TransportStats, key: keyof TransportStats): TransportStats => ({ ...stats, [key]: stats[key] + 1 });

const NEW_SESSION_CODES: readonly number[] = [CLOSE_CODES.UNAUTHORIZED, CLOSE_CODES.SESSION_ENDED];
const REFUSED_CODES: readonly number[] = [CLOSE_CODES.BAD_HELLO, CLOSE_CODES.UNSUPPORTED_PROTOCOL];
const BROKEN_FRAME_CODES: readonly number[] = [CLOSE_CODES.PROTOCOL_ERROR, CLOSE_CODES.INVALID_PAYLOAD, CLOSE_CODES.TOO_BIG];

export const transportMachine = setup({
  types: {
    context: {} as TransportContext,
    events: {} as TransportEvent,
    emitted: {} as TransportEmitted,
    input: {} as TransportInput,
  },
  actors: {
    // Provided by the shell (transport.ts); these defaults do nothing.
    socket: fromCallback<SocketCommand, SocketInput>(() => () => {}),
    check: fromPromise<Refusal | null, CheckInput>(async () => null),
  },
  delays: {
    backoff: ({ context }) => backoffDelay(context.failures),
    offlineRetry: OFFLINE_RETRY_MS,
    pingAfter: PING_AFTER_MS,
    pongTimeout: PONG_TIMEOUT_MS,
  },
  guards: {
    newSession: ({ event }) => event.type === "SOCKET.CLOSE" && NEW_SESSION_CODES.includes(event.code),
    refusedClose: ({ event }) => event.type === "SOCKET.CLOSE" && REFUSED_CODES.includes(event.code),
    brokenFrame: ({ event }) => event.type === "SOCKET.CLOSE" && BROKEN_FRAME_CODES.includes(event.code),
    isOffline: ({ context }) => context.offline,
    resyncsKeepFailing: ({ context }) => context.failures >= MAX_IMMEDIATE_RESYNCS,
    permanentRefusal: (_, refusal: Refusal | null) => refusal !== null && PERMANENT_REFUSALS.includes(refusal.code),
  },
  actions: {
    sendHello: sendTo("socket", ({ context }) => wire(hello(context))),
    countConnection: assign({ stats: ({ context }) => bump(context.stats, "connections") }),
    countFailure: assign({ failures: ({ context }) => context.failures + 1 }),
    resetFailures: assign({ failures: 0 }),
    setOffline: assign({ offline: true }),
    clearOffline: assign({ offline: false, failures: 0 }),
    queueCommand: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "COMMAND") return;
      if (context.commands.filter((c) => !c.sent).length >= MAX_QUEUED_COMMANDS) {
        enqueue.emit({ type: "dropped", id: event.id, reason: `not connected, and ${MAX_QUEUED_COMMANDS} commands already wait` });
        return;
      }
      const pending = pendingOf(event.id, event.command, false);
      if (typeof pending === "string") enqueue.emit({ type: "dropped", id: event.id, reason: pending });
      else enqueue.assign({ commands: [...context.commands, pending] });
    }),
    sendCommandNow: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "COMMAND") return;
      const pending = pendingOf(event.id, event.command, true);
      if (typeof pending === "string") return enqueue.emit({ type: "dropped", id: event.id, reason: pending });
      enqueue.assign({ commands: [...context.commands, pending] });
      enqueue.sendTo("socket", { type: "SEND", data: pending.data });
    }),
    dropCommands: enqueueActions(({ context, enqueue }, params: { which: "all" | "sent"; reason: string }) => {
      const dropped = context.commands.filter((c) => params.which === "all" || c.sent);
      for (const c of dropped) enqueue.emit({ type: "dropped", id: c.id, reason: params.reason });
      enqueue.assign({ commands: context.commands.filter((c) => !dropped.includes(c)) });
    }),
    // The welcome's state is applied, or a whole state is asked for again.
    flushCommands: enqueueActions(({ context, enqueue }) => {
      let resent = 0;
      for (const c of context.commands) {
        if (c.sent) resent++;
        enqueue.sendTo("socket", { type: "SEND", data: c.data });
      }
      enqueue.assign({
        commands: context.commands.map((c) => ({ ...c, sent: true })),
        stats: { ...context.stats, resent: context.stats.resent + resent },
      });
    }),
    forgetSession: enqueueActions(({ enqueue }) => {
      enqueue.assign({ credentials: null, mirror: EMPTY_MIRROR, wantFullState: false, failures: 0 });
      enqueue.emit({ type: "credentials", credentials: null });
    }),
    refuseFromLastError: assign({
      refusal: ({ context }) => context.lastError ?? { code: "bad_hello", message: "Invalid App Configuration" },
    }),
    onFrame: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== "SOCKET.FRAME") return;
      const frame = event.frame;
      switch (frame.type) {
        case "welcome": {
          if (frame.resumeToken) {
            const credentials = { sessionId: frame.sessionId, resumeToken: frame.resumeToken };
            enqueue.assign({ credentials });
            enqueue.emit({ type: "credentials", credentials });
          }
          const r = applyWelcome(context.mirror, frame);
          const stats = bump(context.stats, "welcomes");
          if (r.kind === "applied") {
            enqueue.assign({ mirror: r.mirror, wantFullState: false, stats });
            enqueue.emit({ type: "applied", mirror: r.mirror, events: [], whole: true });
            enqueue.raise({ type: "MIRROR.READY" });
          } else if (r.kind === "resumed") {
            enqueue.assign({ wantFullState: false, stats });
            enqueue.raise({ type: "MIRROR.READY" });
          } else {
            enqueue.assign({ stats: r.kind === "hashMismatch" ? bump(stats, "hashMismatches") : stats });
            enqueue.raise({ type: "MIRROR.RESYNC", full: true });
          }
          return;
        }
        case "diff": {
          const r = applyDiff(context.mirror, frame);
          if (r.kind === "applied") {
            enqueue.assign({ mirror: r.mirror, stats: bump(context.stats, "acks") });
            enqueue.emit({ type: "applied", mirror: r.mirror, events: r.events, whole: false });
            enqueue.sendTo("socket", wire({ type: "ack", seq: r.mirror.seq }));
          } else if (r.kind === "gap") {
            enqueue.assign({ stats: bump(context.stats, "gaps") });
            enqueue.raise({ type: "MIRROR.RESYNC", full: false });
          } else {
            enqueue.assign({ stats: bump(context.stats, "hashMismatches") });
            enqueue.raise({ type: "MIRROR.RESYNC", full: true });
          }
          return;
        }
        case "result": {
          enqueue.assign({ commands: context.commands.filter((c) => c.id !== frame.commandId) });
          enqueue.emit({ type: "result", result: frame });
          return;
        }
        case "error":
          enqueue.assign({ lastError: { code: frame.code, message: frame.message } });
          return;
        case "pong":
          return;
      }
    }),
    countMalformed: assign({ stats: ({ context }) => bump(context.stats, "malformed") }),
    askForWholeStateIfFull: assign({ wantFullState: ({ context, event }) => context.wantFullState || (event.type === "MIRROR.RESYNC" && event.full) }),
    countChartDisagreement: assign({ stats: ({ context }) => bump(context.stats, "chartDisagreements"), wantFullState: true }),
    sendPing: sendTo("socket", wire({ type: "ping" })),
    setRefusal: assign({ refusal: (_, refusal: Refusal | null) => refusal }),
    refuseCommand: emit(({ event }) => ({ type: "dropped", id: event.type === "COMMAND" ? event.id : "", reason: "the gateway refuses this page" })),
  },
}).createMachine({
  id: "transport",
  context: ({ input }) => ({
    url: input.url,
    projectId: input.projectId,
    options: input.options,
    credentials: input.credentials,
    mirror: EMPTY_MIRROR,
    wantFullState: false,
    failures: 0,
    offline: false,
    commands: [],
    lastError: null,
    refusal: null,
    stats: { connections: 0, welcomes: 0, gaps: 0, hashMismatches: 0, acks: 0, resent: 0, chartDisagreements: 0, malformed: 0 },
  }),
  initial: "live",
  on: {
    STOP: ".stopped",
    COMMAND: { actions: "queueCommand" },
    ONLINE: { actions: "clearOffline" },
    OFFLINE: { actions: "setOffline" },
  },
  states: {
    live: {
      invoke: { id: "socket", src: "socket", input: ({ context }) => ({ url: context.url }) },
      initial: "connecting",
      on: {
        "SOCKET.CLOSE": [
          { guard: "newSession", actions: [{ type: "dropCommands", params: { which: "sent", reason: "the session ended" } }, "forgetSession"], target: "backoff" },
          { guard: "refusedClose", actions: "refuseFromLastError", target: "refused" },
          { guard: "brokenFrame", actions: [{ type: "dropCommands", params: { which: "sent", reason: "a frame the gateway refused" } }, "countFailure"], target: "backoff" },
          { guard: "isOffline", target: "offline" },
          // Before its welcome: the browser does not say why an upgrade failed; ask the gateway.
          { guard: not(stateIn("#transport.live.ready")), target: "checking" },
          { actions: "countFailure", target: "backoff" },
        ],
        "SOCKET.MALFORMED": { actions: "countMalformed" },
        OFFLINE: { actions: "setOffline", target: "offline" },
        // A resync reconnects at once, unless resyncs keep failing (a welcome that never hashes
        // right): then it backs off like any failed attempt instead of looping.
        "MIRROR.RESYNC": [
          { guard: "resyncsKeepFailing", actions: ["askForWholeStateIfFull", "countFailure"], target: "backoff" },
          { actions: ["askForWholeStateIfFull", "countFailure"], target: "live", reenter: true },
        ],
        RESYNC: { actions: "countChartDisagreement", target: "live", reenter: true },
      },
      states: {
        connecting: {
          on: { "SOCKET.OPEN": { actions: ["countConnection", "sendHello"], target: "handshaking" } },
        },
        handshaking: {
          on: {
            "SOCKET.FRAME": { actions: "onFrame" },
            "MIRROR.READY": { actions: ["resetFailures", "flushCommands"], target: "ready" },
          },
        },
        ready: {
          initial: "listening",
          on: {
            // Any frame shows the socket is alive: the silence timer starts again.
            "SOCKET.FRAME": { actions: "onFrame", target: ".listening", reenter: true },
            COMMAND: { actions: "sendCommandNow" },
          },
          states: {
            listening: { after: { pingAfter: { actions: "sendPing", target: "awaitingPong" } } },
            awaitingPong: { after: { pongTimeout: { actions: "countFailure", target: "#transport.backoff" } } },
          },
        },
      },
    },
    // The socket closed before its welcome: the browser does not say why an upgrade was refused.
    checking: {
      invoke: {
        src: "check",
        input: ({ context }) => ({ url: context.url }),
        onDone: [
          { guard: { type: "permanentRefusal", params: ({ event }) => event.output }, actions: { type: "setRefusal", params: ({ event }) => event.output }, target: "refused" },
          { actions: "countFailure", target: "backoff" },
        ],
        onError: { actions: "countFailure", target: "backoff" },
      },
      on: { OFFLINE: { actions: "setOffline", target: "offline" } },
    },
    backoff: {
      after: { backoff: "live" },
      on: {
        ONLINE: { actions: "clearOffline", target: "live" },
        VISIBLE: { actions: "resetFailures", target: "live" },
        OFFLINE: { actions: "setOffline", target: "offline" },
      },
    },
    offline: {
      after: { offlineRetry: "live" },
      on: {
        ONLINE: { actions: "clearOffline", target: "live" },
        VISIBLE: { target: "live" },
      },
    },
    refused: {
      on: { COMMAND: { actions: "refuseCommand" }, ONLINE: {}, OFFLINE: {} },
    },
    stopped: {
      type: "final",
      entry: { type: "dropCommands", params: { which: "all", reason: "the widget was destroyed" } },
    },
  },
});

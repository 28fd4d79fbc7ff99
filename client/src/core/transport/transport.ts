// The transport's imperative shell: the WebSocket and `/ws/check` as actors for the pure machine
// (machine.ts), command promises, storage of the session's id and resume token, and the browser's
// online / offline / visibility signals. Everything it starts it ends on `stop()`.

import { createActor, fromCallback, fromPromise, type Actor, type InspectionEvent } from "xstate";
import type { ClientCommand } from "../../generated/ClientCommand";
import type { ServerMessage } from "../../generated/ServerMessage";
import type { SessionOptionsInput } from "../options";
import type { Refusal } from "../refusal";
import {
  transportMachine,
  type CheckInput,
  type CommandResult,
  type Credentials,
  type SocketCommand,
  type SocketInput,
  type TransportEmitted,
} from "./machine";

export interface SocketLike {
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: (() => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number }) => void) | null;
}

export interface KeyValueStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export interface TransportOptions {
  /** `ws(s)://host/ws` */
  gatewayUrl: string;
  projectId: string;
  options?: SessionOptionsInput;
  storage: KeyValueStore;
  createSocket: (url: string) => SocketLike;
  /** Asks whether the gateway refuses this page (`GET /ws/check`); null when it would accept. */
  check?: (signal: AbortSignal) => Promise<Refusal | null>;
  /** Unique command ids across page loads of one session (the server remembers ids). */
  newCommandId: () => string;
  /** XState inspection (debug mode). */
  inspect?: (event: InspectionEvent) => void;
}

export type TransportActor = Actor<typeof transportMachine>;

const SERVER_MESSAGE_TYPES: ReadonlySet<string> = new Set(["welcome", "diff", "result", "error", "pong"]);

/** The frame's shape is the server's: checked by its `type` (the server is the only writer). */
function isServerMessage(value: unknown): value is ServerMessage {
  return value !== null && typeof value === "object" && "type" in value && typeof value.type === "string" && SERVER_MESSAGE_TYPES.has(value.type);
}

/** Where a session's credentials are kept: per gateway and project (`url` is the socket's, which
 * names both), so that a resume token is only ever sent to the gateway that gave it, not to another
 * gateway a page of the same origin points at. */
export const storageKeys = (url: string) => ({ session: `vestibule:${url}:session`, token: `vestibule:${url}:token` });

function readCredentials(storage: KeyValueStore, k: ReturnType<typeof storageKeys>): Credentials | null {
  const sessionId = storage.getItem(k.session);
  const resumeToken = storage.getItem(k.token);
  return sessionId && resumeToken ? { sessionId, resumeToken } : null;
}

export class CommandDropped extends Error {
  constructor(readonly reason: string) {
    super(`command not delivered: ${reason}`);
  }
}

export interface Transport {
  actor: TransportActor;
  /** Sends a command; resolves with the server's result (accepted or refused). */
  command(command: ClientCommand): Promise<CommandResult>;
  /** Ends everything: the socket, every timer, pending commands (rejected). */
  stop(): void;
}

export function createTransport(o: TransportOptions): Transport {
  const url = `${o.gatewayUrl}?projectId=${encodeURIComponent(o.projectId)}`;
  const k = storageKeys(url);
  const pending = new Map<string, { resolve: (r: CommandResult) => void; reject: (e: Error) => void }>();

  const socket = fromCallback<SocketCommand, SocketInput>(({ input, sendBack, receive }) => {
    const ws = o.createSocket(input.url);
    ws.onopen = () => sendBack({ type: "SOCKET.OPEN" });
    ws.onmessage = (event) => {
      let value: unknown;
      try {
        value = JSON.parse(String(event.data));
      } catch {
        return sendBack({ type: "SOCKET.MALFORMED", reason: "not JSON" });
      }
      sendBack(isServerMessage(value) ? { type: "SOCKET.FRAME", frame: value } : { type: "SOCKET.MALFORMED", reason: "unknown frame" });
    };
    ws.onclose = (event) => sendBack({ type: "SOCKET.CLOSE", code: event.code });
    receive((command) => ws.send(command.data));
    return () => {
      ws.onopen = ws.onmessage = ws.onclose = null;
      ws.close(1000, "bye");
    };
  });
  const check = fromPromise<Refusal | null, CheckInput>(({ signal }) => (o.check ? o.check(signal) : Promise.resolve(null)));

  const actor = createActor(transportMachine.provide({ actors: { socket, check } }), {
    // The options as plain JSON, copied now: options that cannot be (a bigint, a cycle) are the
    // host's mistake, thrown at its call rather than later by the machine's hello (which would end
    // the transport for good).
    input: { url, projectId: o.projectId, options: o.options && JSON.parse(JSON.stringify(o.options)), credentials: readCredentials(o.storage, k) },
    inspect: o.inspect,
  });
  const subscriptions = [
    actor.on("credentials", ({ credentials }: Extract<TransportEmitted, { type: "credentials" }>) => {
      if (credentials) {
        o.storage.setItem(k.session, credentials.sessionId);
        o.storage.setItem(k.token, credentials.resumeToken);
      } else {
        o.storage.removeItem(k.session);
        o.storage.removeItem(k.token);
      }
    }),
    actor.on("result", ({ result }: Extract<TransportEmitted, { type: "result" }>) => {
      pending.get(result.commandId)?.resolve(result);
      pending.delete(result.commandId);
    }),
    actor.on("dropped", ({ id, reason }: Extract<TransportEmitted, { type: "dropped" }>) => {
      pending.get(id)?.reject(new CommandDropped(reason));
      pending.delete(id);
    }),
  ];

  return {
    actor,
    command(command) {
      return new Promise((resolve, reject) => {
        if (actor.getSnapshot().status !== "active") return reject(new CommandDropped("the widget was destroyed"));
        const id = o.newCommandId();
        pending.set(id, { resolve, reject });
        actor.send({ type: "COMMAND", id, command });
      });
    },
    stop() {
      actor.send({ type: "STOP" });
      actor.stop();
      for (const s of subscriptions) s.unsubscribe();
      for (const p of pending.values()) p.reject(new CommandDropped("the widget was destroyed"));
      pending.clear();
    },
  };
}

// The widget's connection to its session: one WebSocket, resumed across drops and reloads.
// - hello with the session id, resume token and last seq kept in storage (localStorage in a page);
// - every diff is checked by the mirror (seq continuity and state hash) and acked;
// - a gap resumes from the mirror's seq; a hash mismatch asks for the whole state;
// - a dropped connection reconnects with backoff (10 ms doubling to 3 s), at once when the page
//   comes back online or becomes visible; while the browser says it is offline, the socket is
//   closed and an attempt is made only every 3 s.

import type { ClientCommand } from "../generated/ClientCommand";
import type { ClientMessage } from "../generated/ClientMessage";
import type { ServerMessage } from "../generated/ServerMessage";
import type { SessionOptions } from "../generated/SessionOptions";
import { ChartMirror } from "../mirror/chartMachines";
import { SessionMirror } from "../mirror/sessionMirror";

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

export type CommandResult = Extract<ServerMessage, { type: "result" }>;

export interface TransportOptions {
  url: string;
  projectId: string;
  options?: Partial<SessionOptions>;
  storage: KeyValueStore;
  createSocket: (url: string) => SocketLike;
  /** Asks whether the gateway refuses this page (`GET /ws/check`); null when it would accept. */
  check?: () => Promise<{ code: string; message: string } | null>;
  /** Backoff in ms for attempt n (0-based). */
  backoff?: (attempt: number) => number;
  setTimer?: (f: () => void, ms: number) => unknown;
}

export const PROTOCOL_VERSION = 1;
/** Commands kept while the socket is (re)connecting; a visitor's click before then is not lost. */
export const MAX_QUEUED_COMMANDS = 64;
export const MAX_BACKOFF_MS = 3000;
export const defaultBackoff = (attempt: number) => Math.min(10 * 2 ** attempt, MAX_BACKOFF_MS);
/** While the browser says it is offline, one attempt per this many ms. */
export const OFFLINE_RETRY_MS = MAX_BACKOFF_MS;

const keys = (projectId: string) => ({ session: `vestibule:${projectId}:session`, token: `vestibule:${projectId}:token` });

export class Transport {
  readonly mirror = new SessionMirror();
  readonly charts = new ChartMirror();
  private socket: SocketLike | null = null;
  private attempt = 0;
  private nextCommand = 0;
  private pending = new Map<string, (r: CommandResult) => void>();
  private listeners = new Set<() => void>();
  private wantFullState = false;
  private queue: Promise<void> = Promise.resolve();
  private stopped = false;
  /** The browser reported that it is offline: slow attempts only, until `wake`. */
  private offline = false;
  /** Why the gateway refused this page (spec alerts such as "Invalid App Configuration"). */
  refusal: { code: string; message: string } | null = null;
  private welcomed = false;
  /** The current socket has had its welcome: commands can go out. */
  private ready = false;
  /** Commands waiting for a ready socket, sent in order after the next welcome. */
  private outbox: ClientMessage[] = [];
  /** Counts for the debug handle and tests. */
  stats = { connections: 0, gaps: 0, hashMismatches: 0, acks: 0 };

  constructor(private readonly o: TransportOptions) {}

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  connect() {
    this.stopped = false;
    const socket = this.o.createSocket(`${this.o.url}?projectId=${encodeURIComponent(this.o.projectId)}`);
    this.socket = socket;
    this.ready = false;
    socket.onopen = () => {
      this.stats.connections++;
      socket.send(JSON.stringify(this.hello()));
    };
    // Frames are handled one after another: the mirror's checks are asynchronous (SHA-256).
    socket.onmessage = (event) => {
      this.queue = this.queue.then(() => this.onFrame(socket, JSON.parse(String(event.data)) as ServerMessage));
    };
    socket.onclose = () => {
      if (this.socket !== socket) return;
      this.socket = null;
      if (this.stopped) return;
      // Browsers do not show why an upgrade failed; before the first welcome, ask the gateway.
      if (!this.welcomed && this.o.check) {
        void this.o.check().then((refusal) => {
          if (refusal) {
            this.refusal = refusal;
            this.stopped = true;
            this.notify();
          } else this.retry();
        }, () => this.retry());
        return;
      }
      this.retry();
    };
  }

  /** Reconnect now (e.g. the page came back online or became visible). */
  wake() {
    this.offline = false;
    this.attempt = 0;
    this.reconnectIfIdle();
  }

  private reconnectIfIdle() {
    if (!this.socket && !this.stopped) this.connect();
  }

  /** The browser went offline: the socket is dead or about to be; close it, and try again only
   * every few seconds (a gateway on loopback may still answer) until `wake`. */
  suspend() {
    this.offline = true;
    const socket = this.socket;
    this.socket = null;
    socket?.close(1000, "offline");
    this.retry();
    this.notify();
  }

  /** Whether frames can flow now (for the debug handle and views that show connectivity). */
  get online(): boolean {
    return this.socket !== null && !this.offline;
  }

  stop() {
    this.stopped = true;
    this.socket?.close(1000, "bye");
    this.socket = null;
  }

  command(command: ClientCommand): Promise<CommandResult> {
    const id = `w${Date.now().toString(36)}${(this.nextCommand++).toString(36)}`;
    const message: ClientMessage = { type: "command", id, command };
    return new Promise((resolve, reject) => {
      if (this.stopped) return reject(new Error("the widget has stopped"));
      if (this.socket && this.ready) {
        this.pending.set(id, resolve);
        this.socket.send(JSON.stringify(message));
        return;
      }
      if (this.outbox.length >= MAX_QUEUED_COMMANDS) return reject(new Error(`not connected, and ${MAX_QUEUED_COMMANDS} commands already wait`));
      this.pending.set(id, resolve);
      this.outbox.push(message);
    });
  }

  private hello(): ClientMessage {
    const k = keys(this.o.projectId);
    const sessionId = this.o.storage.getItem(k.session);
    const resumeToken = this.o.storage.getItem(k.token);
    if (sessionId && resumeToken) {
      const lastSeq = this.mirror.state && !this.wantFullState ? this.mirror.seq : undefined;
      return { type: "hello", protocol: PROTOCOL_VERSION, projectId: this.o.projectId, sessionId, resumeToken, ...(lastSeq !== undefined ? { lastSeq } : {}) };
    }
    return { type: "hello", protocol: PROTOCOL_VERSION, projectId: this.o.projectId, options: this.o.options as SessionOptions };
  }

  private retry() {
    // The attempt count grows until a welcome (or `wake`) resets it, so failures back off.
    const delay = this.offline ? OFFLINE_RETRY_MS : (this.o.backoff ?? defaultBackoff)(this.attempt++);
    (this.o.setTimer ?? setTimeout)(() => this.reconnectIfIdle(), delay);
  }

  private resync(socket: SocketLike, fullState: boolean) {
    this.wantFullState = fullState;
    socket.close(4000, fullState ? "hash mismatch" : "gap");
    if (this.socket === socket) {
      this.socket = null;
      this.connect();
    }
  }

  private async onFrame(socket: SocketLike, frame: ServerMessage) {
    if (socket !== this.socket) return;
    switch (frame.type) {
      case "welcome": {
        const k = keys(this.o.projectId);
        if (frame.resumeToken) {
          this.o.storage.setItem(k.session, frame.sessionId);
          this.o.storage.setItem(k.token, frame.resumeToken);
        }
        const r = await this.mirror.welcome(frame);
        if (r.kind === "hashMismatch") {
          this.stats.hashMismatches++;
          return this.resync(socket, true);
        }
        this.wantFullState = false;
        this.welcomed = true;
        this.ready = true;
        this.attempt = 0;
        if (r.kind === "applied") this.charts.seed(this.mirror.state);
        for (const message of this.outbox.splice(0)) socket.send(JSON.stringify(message));
        return this.notify();
      }
      case "diff": {
        const r = await this.mirror.diff(frame);
        if (r.kind === "gap") {
          this.stats.gaps++;
          return this.resync(socket, false);
        }
        if (r.kind === "hashMismatch") {
          this.stats.hashMismatches++;
          return this.resync(socket, true);
        }
        if (r.kind === "applied" && this.charts.apply(r.events, this.mirror.state).length > 0) this.charts.seed(this.mirror.state);
        socket.send(JSON.stringify({ type: "ack", seq: this.mirror.seq } satisfies ClientMessage));
        this.stats.acks++;
        return this.notify();
      }
      case "result": {
        this.pending.get(frame.commandId)?.(frame);
        this.pending.delete(frame.commandId);
        return;
      }
      case "error": {
        if (frame.code === "unauthorized") {
          // The session is gone or not ours: start a new one.
          const k = keys(this.o.projectId);
          this.o.storage.removeItem(k.session);
          this.o.storage.removeItem(k.token);
          this.mirror.state = null;
        }
        return;
      }
      case "pong":
        return;
    }
  }

  private notify() {
    for (const l of this.listeners) l();
  }
}

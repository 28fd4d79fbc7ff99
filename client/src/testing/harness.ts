// For component and lifecycle tests: a real widget (transport statechart, mirror, charts) whose
// socket is scripted, fed with the frames the Rust side produced (generated/fixtureFrames.ts).

import type { ServerMessage } from "../generated/ServerMessage";
import type { KeyValueStore, SocketLike } from "../core/transport/transport";
import { createWidget, type Widget, type WidgetOptions } from "../core/widget";

export type Welcome = Extract<ServerMessage, { type: "welcome" }>;
export type Diff = Extract<ServerMessage, { type: "diff" }>;
export const isWelcome = (f: ServerMessage): f is Welcome => f.type === "welcome";
export const isDiff = (f: ServerMessage): f is Diff => f.type === "diff";

export class MemoryStore implements KeyValueStore {
  map = new Map<string, string>();
  getItem = (k: string) => this.map.get(k) ?? null;
  setItem = (k: string, v: string) => void this.map.set(k, v);
  removeItem = (k: string) => void this.map.delete(k);
}

export class FakeSocket implements SocketLike {
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
  open() {
    this.onopen?.();
  }
  serve(frame: ServerMessage) {
    this.onmessage?.({ data: JSON.stringify(frame) });
  }
  /** The commands sent, as `{ type, ...fields }`. */
  commands(): Array<{ type: string; [k: string]: unknown }> {
    return this.sent.flatMap((m) => {
      const c = m.type === "command" ? m.command : null;
      return c !== null && typeof c === "object" && "type" in c && typeof c.type === "string" ? [{ ...c, type: c.type }] : [];
    });
  }
}

/** Lets the widget's microtask (its start) and promise chains run. */
export const settle = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

export interface Scripted {
  widget: Widget;
  sockets: FakeSocket[];
  socket(): FakeSocket;
  /** Opens the current socket and serves the session's welcome. */
  welcome(): void;
  /** Serves diffs until `until` holds for the mirrored state (or all of them). */
  serveUntil(until?: (w: Widget) => boolean): void;
  /** Serves the next diff. */
  next(): void;
}

export function scriptedWidget(frames: ServerMessage[], o: Partial<WidgetOptions> = {}): Scripted {
  const sockets: FakeSocket[] = [];
  const widget = createWidget({
    gatewayUrl: "ws://gateway.test/ws",
    projectId: "test",
    storage: new MemoryStore(),
    createSocket: (url) => {
      const s = new FakeSocket(url);
      sockets.push(s);
      return s;
    },
    fetch: async () => new Response(JSON.stringify({ ok: true })),
    ...o,
  });
  const diffs = frames.filter(isDiff);
  let served = 0;
  const s: Scripted = {
    widget,
    sockets,
    socket: () => {
      const last = sockets.at(-1);
      if (!last) throw new Error("no socket yet (await settle())");
      return last;
    },
    welcome() {
      const welcome = frames.find(isWelcome);
      if (!welcome) throw new Error("no welcome in the frames");
      s.socket().open();
      s.socket().serve(welcome);
    },
    next() {
      const d = diffs[served++];
      if (!d) throw new Error("no more diffs");
      s.socket().serve(d);
    },
    serveUntil(until) {
      while (served < diffs.length && !(until?.(widget) ?? false)) s.next();
    },
  };
  return s;
}

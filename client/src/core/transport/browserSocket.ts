// A browser WebSocket as the transport's `SocketLike`. Events that happen before the transport
// attaches its handlers are kept and delivered when it does, so a socket can be opened early (the
// loader opens it at once, before the transport's chunk arrives) and adopted later.

import type { SocketLike } from "./transport";

type Handler<E> = ((event: E) => void) | null;

export function openBrowserSocket(WebSocketImpl: typeof WebSocket, url: string): SocketLike {
  const ws = new WebSocketImpl(url);
  const early: Array<() => void> = [];
  let onopen: Handler<void> = null;
  let onmessage: Handler<{ data: unknown }> = null;
  let onclose: Handler<{ code: number }> = null;
  // Delivered once every handler is attached (the transport attaches all three at once).
  const flush = () => {
    if (onopen && onmessage && onclose) for (const deliver of early.splice(0)) deliver();
  };
  ws.onopen = () => (onopen && !early.length ? onopen() : (early.push(() => onopen?.()), flush()));
  ws.onmessage = (e) => (onmessage && !early.length ? onmessage({ data: e.data }) : (early.push(() => onmessage?.({ data: e.data })), flush()));
  ws.onclose = (e) => (onclose && !early.length ? onclose({ code: e.code }) : (early.push(() => onclose?.({ code: e.code })), flush()));
  return {
    send: (data) => ws.send(data),
    close: (code, reason) => ws.close(code, reason),
    get onopen() {
      return onopen;
    },
    set onopen(h) {
      onopen = h;
      flush();
    },
    get onmessage() {
      return onmessage;
    },
    set onmessage(h) {
      onmessage = h;
      flush();
    },
    get onclose() {
      return onclose;
    },
    set onclose(h) {
      onclose = h;
      flush();
    },
  };
}

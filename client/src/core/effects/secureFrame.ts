// The host page's side of the secure frame (docs/embedded-wallet.md): ONE hidden iframe on the
// frame origin, appended to <body> once and never moved (re-parenting an iframe reloads it, which
// would drop its HPKE key and its login), requests to it with random ids and a 120 s timeout, and
// its answers matched by id. Every postMessage names the frame origin; the listener drops anything
// not from that origin AND that iframe's window, and anything that does not match the schema.
// While the frame answers a signing request it is shown over the ApproveTransaction view's box
// (spec §9: position fixed, z-index 999999), where it draws its own approval page.
//
// Loaded as a chunk of its own (secureFrameHost.ts imports it the first time a session has a frame
// origin and email or socials on), so the core chunk does not carry it.

import type { ClientCommand } from "../../generated/ClientCommand";
import type { WalletOutcome } from "../../generated/WalletOutcome";
import {
  isSigningRequest,
  newMessageId,
  PROTOCOL_VERSION,
  readFrameMessage,
  type FrameAnswers,
  type HostRequests,
  type HostRequestType,
  type Theme,
} from "../../frame/protocol";

export const REQUEST_TIMEOUT_MS = 120_000;
export const TIMED_OUT = "Embedded Wallet Request Timed Out";
/** Requests in flight at once; more are refused rather than queued without bound. */
export const MAX_PENDING = 32;

export interface SecureFrameOptions {
  page: Window;
  frameOrigin: string;
  /** The frame page's query: projectId, chainId, version, enableLogger (and the session's id, which
   * the frame registers with). */
  query: Record<string, string>;
  send(command: ClientCommand): void;
  theme(): Theme;
  signal: AbortSignal;
  timeoutMs?: number;
}

export interface SecureFrameBridge {
  readonly iframe: HTMLIFrameElement;
  request<T extends HostRequestType>(type: T, payload: HostRequests[T]): Promise<FrameAnswers[T]>;
  /** Performs a wallet request for connector "auth"; never throws. */
  perform(payload: HostRequests["RPC_REQUEST"]): Promise<WalletOutcome>;
  /** The box the frame covers while an approval shows (the ApproveTransaction view), or null. */
  place(slot: Element | null): void;
  destroy(): void;
}

interface Pending {
  type: HostRequestType;
  resolve(payload: unknown): void;
  reject(error: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

export function createSecureFrameBridge(o: SecureFrameOptions): SecureFrameBridge {
  const { page, frameOrigin, signal } = o;
  const doc = page.document;
  const iframe = doc.createElement("iframe");
  iframe.src = `${frameOrigin}/frame?${new URLSearchParams(o.query)}`;
  iframe.title = "Vestibule secure frame";
  iframe.dataset.testid = "vestibule-secure-frame";
  iframe.setAttribute("aria-hidden", "true");
  // Inline on purpose: the frame lives outside the widget's shadow root and stylesheet.
  Object.assign(iframe.style, { position: "fixed", zIndex: "999999", border: "0", borderRadius: "16px", top: "0", left: "0", width: "0", height: "0", visibility: "hidden" });
  doc.body.append(iframe);

  const pending = new Map<string, Pending>();
  // Requests wait for the frame's FRAME_READY: a message posted before its page listens is lost.
  let frameReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (frameReady = resolve));
  let slot: Element | null = null;
  let showing = false;

  const layout = () => {
    if (!showing || !slot) {
      Object.assign(iframe.style, { visibility: "hidden", width: "0", height: "0" });
      iframe.setAttribute("aria-hidden", "true");
      return;
    }
    const box = slot.getBoundingClientRect();
    Object.assign(iframe.style, { visibility: "visible", top: `${box.top}px`, left: `${box.left}px`, width: `${box.width}px`, height: `${box.height}px` });
    iframe.removeAttribute("aria-hidden");
  };
  page.addEventListener("resize", layout, { signal });
  page.addEventListener("scroll", layout, { signal, capture: true, passive: true });

  page.addEventListener(
    "message",
    (event: MessageEvent) => {
      if (event.origin !== frameOrigin || event.source !== iframe.contentWindow) return;
      const message = readFrameMessage(event.data);
      if (!message) return;
      if (message.type === "FRAME_READY") {
        frameReady();
        return o.send({ type: "EmbeddedFrameReady", frameId: message.payload.frameId });
      }
      const waiting = pending.get(message.id);
      if (!waiting || !message.type.startsWith(waiting.type + "_")) return;
      pending.delete(message.id);
      clearTimeout(waiting.timer);
      if (message.type.endsWith("_ERROR") && "message" in message.payload) waiting.reject(new Error(message.payload.message));
      else waiting.resolve(message.payload);
    },
    { signal },
  );

  function request<T extends HostRequestType>(type: T, payload: HostRequests[T]): Promise<FrameAnswers[T]> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(new Error("The widget was destroyed"));
      if (pending.size >= MAX_PENDING) return reject(new Error("Too many embedded wallet requests at once"));
      const id = newMessageId();
      const timer = setTimeout(() => {
        pending.delete(id);
        o.send({ type: "EmbeddedRequestFailed", message: TIMED_OUT });
        reject(new Error(TIMED_OUT));
      }, o.timeoutMs ?? REQUEST_TIMEOUT_MS);
      // The answer's schema was checked for this type (readFrameMessage, matched by id and type).
      pending.set(id, { type, resolve: (p) => resolve(p as FrameAnswers[T]), reject, timer });
      void ready.then(() => iframe.contentWindow?.postMessage({ vestibule: PROTOCOL_VERSION, id, type, payload }, frameOrigin));
    });
  }

  async function perform(payload: HostRequests["RPC_REQUEST"]): Promise<WalletOutcome> {
    const signing = isSigningRequest(payload);
    try {
      if (signing) {
        showing = true;
        layout();
        void request("SHOW_APPROVAL", { theme: o.theme() }).catch(() => undefined);
      }
      return (await request("RPC_REQUEST", payload)).outcome;
    } catch (e) {
      return { status: "error", code: -32603, message: e instanceof Error ? e.message : TIMED_OUT };
    } finally {
      if (signing) {
        showing = false;
        layout();
        void request("HIDE_APPROVAL", {}).catch(() => undefined);
      }
    }
  }

  signal.addEventListener("abort", () => {
    for (const p of pending.values()) clearTimeout(p.timer);
    pending.clear();
    iframe.remove();
  });

  return {
    iframe,
    request,
    perform,
    place(element) {
      slot = element;
      layout();
    },
    destroy: () => iframe.remove(),
  };
}

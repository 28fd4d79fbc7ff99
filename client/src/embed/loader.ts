// The script a host page includes (`<script src="/vestibule.js">`), kept small: it defines
// `Vestibule.create`, opens the session's WebSocket at once, and loads the core chunk (the
// transport statechart, the mirror, wallet effects), which loads the modal chunk (React and the
// views) on first need. Until the core arrives, calls are queued in order.

import { isSessionOption } from "../core/options";
import type { HostProvider } from "../core/provider";
import type { SolanaHostProvider } from "../core/solanaProvider";
import { openBrowserSocket } from "../core/transport/browserSocket";
import { SCRIPT_OPTIONS, type CreateOptions, type VestibuleInstance } from "./api";
import type * as CoreModule from "./core";

/** The core chunk's path relative to this script (set by the build from its manifest). */
declare const __VESTIBULE_CORE__: string;

type Core = Omit<VestibuleInstance, "ready">;

// Where the chunks are: next to this script, wherever the host serves it from.
const scriptUrl = document.currentScript instanceof HTMLScriptElement && document.currentScript.src ? document.currentScript.src : location.href;
const coreUrl = new URL(__VESTIBULE_CORE__, scriptUrl).href;

export function create(given: CreateOptions): VestibuleInstance {
  // A page without a project id gets the gateway's "Project ID Not Configured" (not "undefined").
  const o: CreateOptions = { ...given, projectId: typeof given?.projectId === "string" ? given.projectId : "" };
  const unknown = Object.keys(o).filter((k) => !SCRIPT_OPTIONS.has(k) && !isSessionOption(k));
  if (unknown.length) console.warn(`Vestibule: unknown option(s) ${unknown.join(", ")} (ignored)`);
  const gatewayUrl = o.gatewayUrl ?? `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`;
  // The socket opens now; the transport adopts it when the core arrives.
  const early = openBrowserSocket(WebSocket, `${gatewayUrl}?projectId=${encodeURIComponent(o.projectId)}`);
  let core: Core | null = null;
  let destroyed = false;
  const queued: Array<(c: Core) => void> = [];
  const later = (f: (c: Core) => void) => (core ? f(core) : void queued.push(f));
  const ready = import(/* @vite-ignore */ coreUrl).then((m: typeof CoreModule) => {
    if (destroyed) return early.close(1000, "bye");
    core = m.start({ ...o, gatewayUrl }, early);
    for (const f of queued.splice(0)) f(core);
  });
  ready.catch((e) => console.error("Vestibule: the widget could not load", e));
  const provider: HostProvider = {
    request: (args) => ready.then(() => (core ? core.provider.request(args) : Promise.reject(new Error("the widget was destroyed")))),
    on: (event, listener) => later((c) => c.provider.on(event, listener)),
    removeListener: (event, listener) => later((c) => c.provider.removeListener(event, listener)),
  };
  const gone = () => Promise.reject(new Error("the widget was destroyed"));
  const solana: SolanaHostProvider = {
    get address() {
      return core?.solana.address ?? null;
    },
    get chain() {
      return core?.solana.chain ?? null;
    },
    connect: () => ready.then(() => (core ? core.solana.connect() : gone())),
    disconnect: () => ready.then(() => (core ? core.solana.disconnect() : gone())),
    signMessage: (m) => ready.then(() => (core ? core.solana.signMessage(m) : gone())),
    signTransaction: (t) => ready.then(() => (core ? core.solana.signTransaction(t) : gone())),
    signAndSendTransaction: (t) => ready.then(() => (core ? core.solana.signAndSendTransaction(t) : gone())),
    on: (event, listener) => later((c) => c.solana.on(event, listener)),
    removeListener: (event, listener) => later((c) => c.solana.removeListener(event, listener)),
  };
  return {
    open: () => later((c) => c.open()),
    close: () => later((c) => c.close()),
    subscribe(listener) {
      let unsubscribe: (() => void) | null = null;
      let cancelled = false;
      later((c) => {
        if (!cancelled) unsubscribe = c.subscribe(listener);
      });
      return () => {
        cancelled = true;
        unsubscribe?.();
      };
    },
    state: () => core?.state() ?? null,
    provider,
    solana,
    mount: (element) => later((c) => c.mount(element)),
    destroy() {
      destroyed = true;
      if (core) core.destroy();
      else early.close(1000, "bye");
      queued.length = 0;
    },
    ready,
  };
}

Object.assign(window, { Vestibule: { create } });

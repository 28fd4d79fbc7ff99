// The widget's controller (`createWidget`): the transport to the session and its mirrored charts,
// wallet discovery, and the browser effects the session asks for. Used by the embeddable script
// and the React components. No module state: everything belongs to one instance, and `destroy()`
// ends all of it (one AbortController per instance: socket, timers, listeners, pending commands).
//
// The socket opens on a microtask after creation, so a widget created and destroyed in the same
// task (React StrictMode's mount, unmount, mount) never opens one.

import type { InspectionEvent } from "xstate";
import type { ClientCommand } from "../generated/ClientCommand";
import type { ClientErrorKind } from "../generated/ClientErrorKind";
import { ERROR_REPORTS } from "../generated/constants";
import type { SessionState } from "../generated/SessionState";
import { hex } from "./canonical";
import { createChartMirror, type ChartMirror } from "./charts/chartMirror";
import { isEmbeddedRequest, newRequests, perform, WalletDiscovery } from "./effects/walletEffects";
import { createEmbeddedShell, type EmbeddedHost } from "./effects/secureFrameHost";
import { performSolana, SOLANA_CONNECTOR_PREFIX, SolanaDiscovery, solanaFeatures } from "./effects/solanaWallets";
import { isReservedConnectorId, MAX_REPORTED_WALLETS } from "./effects/walletChecks";
import { plainOutcome } from "./effects/walletJson";
import type { SessionOptionsInput } from "./options";
import { protocolErrorCode, type Refusal } from "./refusal";
import type { CommandResult, TransportStats } from "./transport/machine";
import { openBrowserSocket } from "./transport/browserSocket";
import { createTransport, type KeyValueStore, type SocketLike, type TransportActor } from "./transport/transport";
import { callEach } from "./callEach";

export interface WidgetOptions {
  /** `ws(s)://host/ws` */
  gatewayUrl: string;
  projectId: string;
  options?: SessionOptionsInput;
  /** The page: where wallets announce themselves, and online / offline / visibility are heard. */
  window?: Window & typeof globalThis;
  storage?: KeyValueStore;
  createSocket?: (url: string) => SocketLike;
  fetch?: typeof fetch;
  /** XState inspection of the transport and the charts (debug mode, `@statelyai/inspect`). */
  inspect?: (event: InspectionEvent) => void;
}

export interface WidgetStats extends TransportStats {
  /** Problems reported to the server (chart disagreements, render errors). */
  clientErrors: number;
}

export interface Widget {
  readonly projectId: string;
  /** The page the widget lives in. */
  readonly page: Window & typeof globalThis;
  /** The options the host asked for (the session's own are in `state().options`). */
  readonly requested: SessionOptionsInput;
  readonly transport: TransportActor;
  readonly charts: ChartMirror;
  readonly discovery: WalletDiscovery;
  /** Solana wallets found through the Wallet Standard. */
  readonly solanaDiscovery: SolanaDiscovery;
  /** The embedded wallet's secure frame (email and social login). */
  readonly embedded: EmbeddedHost;
  state(): SessionState | null;
  /** The mirror's seq: the last event the state includes. */
  seq(): number;
  refusal(): Refusal | null;
  /** Whether frames flow now (a welcomed socket). */
  online(): boolean;
  stats(): WidgetStats;
  /** Sends a command; a refusal is not an error here (views show what the state says). */
  send(command: ClientCommand): void;
  command(command: ClientCommand): Promise<CommandResult>;
  open(): void;
  close(): void;
  /** Reports a problem of the widget's own to the server (at most 5 per 60 s, spec section 7). */
  reportError(kind: ClientErrorKind, detail: string): void;
  /** Resolves when this page's session is in step: the page's PageLoaded has been applied and the
   * stored connections it re-syncs are settled (so `eth_accounts` answers for this page). Rejects
   * when the gateway refuses the page or the widget is destroyed. */
  settled(): Promise<void>;
  /** Called after every change of the mirrored state, the refusal or the connectivity. */
  subscribe(listener: () => void): () => void;
  destroy(): void;
  readonly signal: AbortSignal;
}

const randomId = (): string => hex(crypto.getRandomValues(new Uint8Array(8)));

export function createWidget(o: WidgetOptions): Widget {
  const page = o.window ?? window;
  const abort = new AbortController();
  const { signal } = abort;
  const fetchImpl = o.fetch ?? page.fetch.bind(page);
  // Command ids: unique across the page loads of a session (the server remembers ids).
  const prefix = randomId();
  let counter = 0;
  const transport = createTransport({
    gatewayUrl: o.gatewayUrl,
    projectId: o.projectId,
    options: o.options,
    storage: o.storage ?? page.localStorage,
    createSocket: o.createSocket ?? ((url) => openBrowserSocket(page.WebSocket, url)),
    newCommandId: () => `${prefix}-${(counter++).toString(36)}`,
    check: async (checkSignal) => {
      const http = o.gatewayUrl.replace(/^ws/, "http").replace(/\/ws$/, "/ws/check");
      const response = await fetchImpl(`${http}?projectId=${encodeURIComponent(o.projectId)}`, { signal: AbortSignal.any([signal, checkSignal]) });
      if (response.ok) return null;
      // Any JSON: a primitive's fields read as undefined, as a missing one's do.
      const body = ((await response.json()) ?? {}) as { code?: unknown; message?: unknown };
      const { message } = body;
      const code = protocolErrorCode(body.code);
      return code && message && typeof message === "string" ? { code, message } : { code: "internal", message: "Server Error" };
    },
    inspect: o.inspect,
  });
  const actor = transport.actor;
  const charts = createChartMirror(undefined, o.inspect);
  const discovery = new WalletDiscovery(page);
  const solanaDiscovery = new SolanaDiscovery();
  const listeners = new Set<() => void>();
  const notify = () => callEach(listeners);
  let clientErrors = 0;
  const reports: number[] = [];

  const command = (c: ClientCommand) => transport.command(c);
  const send = (c: ClientCommand) => void command(c).catch(() => undefined);
  const reportError = (kind: ClientErrorKind, detail: string) => {
    clientErrors++;
    // The session's own limit (spec section 7): a report it would refuse is not sent.
    const now = Date.now();
    while (reports.length && now - reports[0] >= ERROR_REPORTS.windowMs) reports.shift();
    if (reports.length >= ERROR_REPORTS.max) return;
    reports.push(now);
    send({ type: "ReportClientError", kind, detail });
  };

  // The mirrored charts follow every applied frame; a disagreement resyncs and is reported.
  const applied = actor.on("applied", ({ mirror, events, whole }) => {
    if (whole) {
      for (const problem of charts.seed(mirror.state)) reportError("chartDisagreement", problem);
      return;
    }
    const disagreements = charts.apply(events, mirror.state);
    if (disagreements.length > 0) {
      reportError("chartDisagreement", disagreements.join("; "));
      actor.send({ type: "RESYNC", detail: disagreements.join("; ") });
    }
  });

  const embedded = createEmbeddedShell(page, send, signal, o.projectId);
  const started = new Set<string>();
  let reported = "";
  const watched = new Map<string, Array<() => void>>();
  const reportWallets = () => {
    // EIP-6963 wallets first, then Wallet Standard (Solana) wallets, each in the order found; no more
    // than the server takes in one report (it refuses a longer one whole).
    const wallets = [...discovery.report(), ...solanaDiscovery.report()].slice(0, MAX_REPORTED_WALLETS);
    const key = JSON.stringify(wallets);
    if (actor.getSnapshot().context.mirror.state && key !== reported) {
      reported = key;
      send({ type: "ReportWallets", wallets });
    }
  };
  const watch = (id: string) => {
    if (id.startsWith(SOLANA_CONNECTOR_PREFIX)) return watchSolana(id);
    // The embedded wallet (`auth`) and the other ids the session reserves are never a page wallet's:
    // their events come from the secure frame or from nowhere.
    const provider = isReservedConnectorId(id) ? undefined : discovery.provider(id);
    if (!provider?.on || watched.has(id)) return;
    const handlers: Array<[string, (arg: unknown) => void]> = [
      ["accountsChanged", (accounts) => send({ type: "WalletAccountsChanged", connectorId: id, accounts: Array.isArray(accounts) ? accounts.filter((a) => typeof a === "string") : [] })],
      ["chainChanged", (chainId) => send({ type: "WalletChainChanged", connectorId: id, chainId: String(chainId) })],
      ["disconnect", () => send({ type: "WalletDisconnected", connectorId: id })],
    ];
    for (const [event, handler] of handlers) provider.on(event, handler);
    watched.set(id, handlers.map(([event, handler]) => () => provider.removeListener?.(event, handler)));
  };

  // A Wallet Standard wallet's `change` events carry its accounts: forwarded like accountsChanged
  // (the addresses that are text: the wallet is any page script).
  const watchSolana = (id: string) => {
    const wallet = solanaDiscovery.wallet(id);
    const events = wallet && solanaFeatures.events(wallet);
    if (!events || watched.has(id)) return;
    const off = events.on("change", (properties?: { accounts?: unknown }) => {
      const accounts = properties?.accounts;
      if (Array.isArray(accounts)) send({ type: "WalletAccountsChanged", connectorId: id, accounts: accounts.map((a?: { address?: unknown }) => a?.address).filter((a) => typeof a === "string") });
    });
    watched.set(id, [off]);
  };
  // When the session disconnects a Solana connection, the wallet is told too (`standard:disconnect`).
  let solanaConnector: string | null = null;
  const followSolana = (state: SessionState) => {
    const solana = state.connection.namespaces.solana;
    const now = solana?.status === "connected" ? (solana.connectorId ?? null) : null;
    const wallet = solanaConnector && !now ? solanaDiscovery.wallet(solanaConnector) : undefined;
    const disconnect = wallet && solana?.status === "disconnected" ? solanaFeatures.disconnect(wallet) : undefined;
    if (disconnect) void disconnect.disconnect().catch(() => undefined);
    if (solana?.status !== "connecting") solanaConnector = now;
  };

  let last: { state: SessionState | null; refusal: Refusal | null; online: boolean } = { state: null, refusal: null, online: false };
  const online = () => actor.getSnapshot().matches({ live: "ready" });
  const subscription = actor.subscribe((snapshot) => {
    const now = { state: snapshot.context.mirror.state, refusal: snapshot.context.refusal, online: online() };
    if (now.state === last.state && now.refusal === last.refusal && now.online === last.online) return;
    const first = !last.state && now.state;
    last = now;
    const state = now.state;
    if (state && !signal.aborted) {
      if (first) reportWallets();
      // Forward the connected wallets' own events (EIP-1193) as commands.
      for (const ns of Object.values(state.connection.namespaces)) {
        if (ns?.status === "connected" && ns.connectorId) watch(ns.connectorId);
      }
      followSolana(state);
      // Request ids are per session: a new session (the old one expired) starts them again.
      const session = snapshot.context.credentials?.sessionId ?? "";
      embedded.follow(state, session);
      for (const request of newRequests(state, started, session)) {
        started.add(`${session}/${request.id}`);
        const outcome = isEmbeddedRequest(request)
          ? embedded.perform(request)
          : request.namespace === "solana"
            ? performSolana(request, solanaDiscovery.wallet(request.connectorId))
            : perform(request, discovery.provider(request.connectorId));
        // The session is answered with plain JSON whatever came back (each of these never rejects):
        // a wallet's bigint or cycle would make the command unsendable, and the request would wait
        // for ever.
        void outcome.then((outcome) => {
          if (!signal.aborted) send({ type: "ResolveWalletRequest", requestId: request.id, outcome: plainOutcome(outcome) });
        });
      }
    }
    notify();
  });

  // A new page: the session re-syncs stored connections, forgets the old page's requests and closes
  // the modal. Sent before anything else, so a click made while the socket opens comes after it.
  const pageLoaded = command({ type: "PageLoaded" });
  pageLoaded.catch(() => undefined);
  /** Resolves when `ready()` holds, now or after a change; rejects when the widget is destroyed. */
  const until = (ready: () => boolean) =>
    new Promise<void>((resolve, reject) => {
      const finish = (end: () => void) => {
        listeners.delete(check);
        signal.removeEventListener("abort", check);
        end();
      };
      const check = () => {
        if (signal.aborted) finish(() => reject(new Error("the widget was destroyed")));
        else if (ready()) finish(resolve);
      };
      listeners.add(check);
      signal.addEventListener("abort", check);
      check();
    });
  const settled = async () => {
    const result = await pageLoaded;
    await until(() => {
      const { state, seq } = actor.getSnapshot().context.mirror;
      return state !== null && seq >= (result.seq ?? 0) && !state.connection.loading;
    });
  };
  queueMicrotask(() => {
    if (signal.aborted) return;
    actor.start();
    if (!page.navigator.onLine) actor.send({ type: "OFFLINE" });
    discovery.start(reportWallets, signal);
    solanaDiscovery.start(reportWallets, signal);
    page.addEventListener("online", () => actor.send({ type: "ONLINE" }), { signal });
    page.addEventListener("offline", () => actor.send({ type: "OFFLINE" }), { signal });
    page.document.addEventListener(
      "visibilitychange",
      () => {
        const hidden = page.document.visibilityState === "hidden";
        if (!hidden) actor.send({ type: "VISIBLE" });
        if (actor.getSnapshot().context.mirror.state) send({ type: "SetPageVisibility", hidden });
      },
      { signal },
    );
  });

  return {
    projectId: o.projectId,
    page,
    requested: o.options ?? {},
    transport: actor,
    charts,
    discovery,
    solanaDiscovery,
    embedded,
    signal,
    state: () => actor.getSnapshot().context.mirror.state,
    seq: () => actor.getSnapshot().context.mirror.seq,
    refusal: () => actor.getSnapshot().context.refusal,
    online,
    stats: () => ({ ...actor.getSnapshot().context.stats, clientErrors }),
    send,
    command,
    open: () => send({ type: "OpenModal" }),
    close: () => send({ type: "CloseModal" }),
    reportError,
    settled,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    destroy() {
      if (signal.aborted) return;
      abort.abort();
      applied.unsubscribe();
      subscription.unsubscribe();
      transport.stop();
      charts.stop();
      for (const removers of watched.values()) for (const remove of removers) remove();
      watched.clear();
      listeners.clear();
    },
  };
}

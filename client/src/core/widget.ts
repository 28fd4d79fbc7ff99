// The widget's controller: the transport to the session, wallet discovery, and the browser effects
// the session asks for. `createWidget` is what `Vestibule.create` and the React components use.

import type { ClientCommand } from "./generated/ClientCommand";
import type { SessionOptions } from "./generated/SessionOptions";
import type { SessionState } from "./generated/SessionState";
import { newRequests, perform, WalletDiscovery } from "./effects/walletEffects";
import { Transport } from "./transport/transport";

export interface WidgetOptions {
  gatewayUrl: string;
  projectId: string;
  options?: Partial<SessionOptions>;
  /** Where wallets announce themselves (the page's window). */
  eventTarget?: EventTarget;
}

export interface Widget {
  /** The options the host asked for (the session's own are in `state().options`). */
  requested: Partial<SessionOptions>;
  transport: Transport;
  discovery: WalletDiscovery;
  state(): SessionState | null;
  send(command: ClientCommand): void;
  open(): void;
  close(): void;
  subscribe(listener: () => void): () => void;
}

export function createWidget(o: WidgetOptions): Widget {
  const transport = new Transport({
    url: o.gatewayUrl,
    projectId: o.projectId,
    options: o.options,
    storage: localStorage,
    createSocket: (url) => new WebSocket(url) as never,
    check: async () => {
      const http = o.gatewayUrl.replace(/^ws/, "http").replace(/\/ws$/, "/ws/check");
      const response = await fetch(`${http}?projectId=${encodeURIComponent(o.projectId)}`);
      return response.ok ? null : ((await response.json()) as { code: string; message: string });
    },
  });
  const discovery = new WalletDiscovery(o.eventTarget ?? window);
  const started = new Set<string>();
  let walletsReported = false;
  let reported = "";
  const watched = new Set<string>();

  const send = (command: ClientCommand) => void transport.command(command).catch(() => undefined);
  const reportWallets = () => {
    const wallets = discovery.report();
    const key = JSON.stringify(wallets);
    if (transport.mirror.state && key !== reported) {
      reported = key;
      send({ type: "ReportWallets", wallets } as ClientCommand);
    }
  };

  transport.subscribe(() => {
    const state = transport.mirror.state;
    if (!state) return;
    if (!walletsReported) {
      walletsReported = true;
      reportWallets();
      return;
    }
    // Forward the connected wallets' own events (EIP-1193) as commands.
    for (const ns of Object.values(state.connection.namespaces)) {
      const id = ns?.status === "connected" ? ns.connectorId : null;
      const provider = id ? discovery.provider(id) : undefined;
      if (!id || !provider?.on || watched.has(id)) continue;
      watched.add(id);
      provider.on("accountsChanged", (accounts) => send({ type: "WalletAccountsChanged", connectorId: id, accounts } as ClientCommand));
      provider.on("chainChanged", (chainId) => send({ type: "WalletChainChanged", connectorId: id, chainId } as ClientCommand));
      provider.on("disconnect", () => send({ type: "WalletDisconnected", connectorId: id } as ClientCommand));
    }
    for (const request of newRequests(state, started)) {
      started.add(request.id);
      void perform(request, discovery.provider(request.connectorId)).then((outcome) =>
        send({ type: "ResolveWalletRequest", requestId: request.id, outcome } as ClientCommand),
      );
    }
  });
  discovery.start(reportWallets);
  // A new page: the session re-syncs stored connections, forgets the old page's requests and closes
  // the modal. Queued before anything else, so a click made while the socket opens comes after it.
  send({ type: "PageLoaded" } as ClientCommand);
  transport.connect();
  addEventListener("online", () => transport.wake());
  addEventListener("offline", () => transport.suspend());
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") transport.wake();
    if (transport.mirror.state) send({ type: "SetPageVisibility", hidden: document.visibilityState === "hidden" } as ClientCommand);
  });

  return {
    requested: o.options ?? {},
    transport,
    discovery,
    state: () => transport.mirror.state,
    send,
    open: () => send({ type: "OpenModal" } as ClientCommand),
    close: () => send({ type: "CloseModal" } as ClientCommand),
    subscribe: (l) => transport.subscribe(l),
  };
}

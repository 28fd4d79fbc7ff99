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
  transport: Transport;
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
  });
  const discovery = new WalletDiscovery(o.eventTarget ?? window);
  const started = new Set<string>();
  let pageAnnounced = false;
  let reported = "";

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
    if (!pageAnnounced) {
      // A new page: the session re-syncs stored connections and forgets the old page's requests.
      pageAnnounced = true;
      send({ type: "PageLoaded" } as ClientCommand);
      reportWallets();
      return;
    }
    for (const request of newRequests(state, started)) {
      started.add(request.id);
      void perform(request, discovery.provider(request.connectorId)).then((outcome) =>
        send({ type: "ResolveWalletRequest", requestId: request.id, outcome } as ClientCommand),
      );
    }
  });
  discovery.start(reportWallets);
  transport.connect();
  addEventListener("online", () => transport.wake());
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") transport.wake();
    if (transport.mirror.state) send({ type: "SetPageVisibility", hidden: document.visibilityState === "hidden" } as ClientCommand);
  });

  return {
    transport,
    state: () => transport.mirror.state,
    send,
    open: () => send({ type: "OpenModal" } as ClientCommand),
    close: () => send({ type: "CloseModal" } as ClientCommand),
    subscribe: (l) => transport.subscribe(l),
  };
}

// The EIP-1193 provider a host app uses: it answers from the session (accounts, chain) and
// forwards everything else to the connected wallet. `eth_requestAccounts` opens the modal and
// resolves when the visitor connects, or rejects with 4001 when the modal closes first.

import type { Widget } from "./widget";

type Listener = (...args: unknown[]) => void;

export interface HostProvider {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
  on(event: string, listener: Listener): void;
  removeListener(event: string, listener: Listener): void;
}

const rpcError = (code: number, message: string) => Object.assign(new Error(message), { code });

export function createProvider(widget: Widget): HostProvider {
  const listeners = new Map<string, Set<Listener>>();
  const active = () => {
    const s = widget.state();
    const ns = s?.connection.activeNamespace;
    const conn = ns ? s?.connection.namespaces[ns] : undefined;
    return conn?.status === "connected" ? conn : undefined;
  };
  let last = { accounts: "", chain: "" };
  widget.subscribe(() => {
    const conn = active();
    const accounts = conn?.address ? [conn.address] : [];
    const chain = conn?.network?.caipNetworkId ?? "";
    if (JSON.stringify(accounts) !== last.accounts) for (const l of listeners.get("accountsChanged") ?? []) l(accounts);
    if (chain && chain !== last.chain) for (const l of listeners.get("chainChanged") ?? []) l(`0x${Number(chain.split(":")[1]).toString(16)}`);
    last = { accounts: JSON.stringify(accounts), chain };
  });
  return {
    async request({ method, params }) {
      const conn = active();
      switch (method) {
        case "eth_accounts":
          return conn?.address ? [conn.address] : [];
        case "eth_requestAccounts":
          if (conn?.address) return [conn.address];
          widget.open();
          return new Promise((resolve, reject) => {
            const stop = widget.subscribe(() => {
              const now = active();
              if (now?.address) {
                stop();
                resolve([now.address]);
              } else if (widget.state()?.modal.status === "closed") {
                stop();
                // The session says why ("Modal closed", "Connection rejected", ...).
                const why = Object.values(widget.state()?.connection.namespaces ?? {}).find((n) => n?.lastError)?.lastError;
                reject(rpcError(4001, why ?? "User rejected the request."));
              }
            });
          });
        default: {
          const provider = conn?.connectorId ? widget.discovery.provider(conn.connectorId) : undefined;
          if (!provider) throw rpcError(4900, "Not connected");
          return provider.request({ method, params });
        }
      }
    },
    on(event, listener) {
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event)!.add(listener);
    },
    removeListener(event, listener) {
      listeners.get(event)?.delete(listener);
    },
  };
}

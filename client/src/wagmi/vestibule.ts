// A wagmi connector (`createConnector` from @wagmi/core): a wagmi + viem dapp uses Vestibule as its
// connect modal and its provider. `connect()` opens the modal and resolves when the visitor has
// connected (the session's `eth_requestAccounts`); transactions and signatures go through the
// widget's EIP-1193 provider to the connected wallet; the session's account and chain changes are
// wagmi's `change` events. The widget (socket, listeners, drawing) is created in `setup()`, which
// wagmi calls once per config in the browser, and the modal's code loads on first need.
//
//   const config = createConfig({ chains: [mainnet], connectors: [vestibule({ projectId: "demo" })], transports: { … } });

import { createConnector } from "@wagmi/core";
import { getAddress, type Address } from "viem";
import type { SessionOptionsInput } from "../core/options";
import { createProvider, ProviderRpcError, type HostProvider } from "../core/provider";
import { whenUiNeeded } from "../core/uiDemand";
import { createWidget, type Widget } from "../core/widget";

export interface VestibuleParameters {
  projectId: string;
  /** `ws(s)://host/ws`; default: this page's host. */
  gatewayUrl?: string;
  /** Session options (theme, features, sign-in, wallets...). */
  options?: SessionOptionsInput;
  /** Embedded mode: draw the modal inside this element; default: appended to `body`. */
  element?: HTMLElement;
}

export const VESTIBULE_CONNECTOR_ID = "vestibule";

interface Instance {
  widget: Widget;
  provider: HostProvider;
}

const hexChain = (value: unknown) => (typeof value === "string" ? Number.parseInt(value, 16) : Number.NaN);
const addresses = (value: unknown): Address[] => (Array.isArray(value) ? value.filter((a) => typeof a === "string").map((a) => getAddress(a)) : []);

export function vestibule(parameters: VestibuleParameters) {
  let instance: Instance | null = null;
  return createConnector<HostProvider>((config) => {
    const onAccountsChanged = (accounts: unknown) => {
      const list = addresses(accounts);
      if (list.length === 0) config.emitter.emit("disconnect");
      else config.emitter.emit("change", { accounts: list });
    };
    const onChainChanged = (chainId: unknown) => config.emitter.emit("change", { chainId: hexChain(chainId) });
    const ensure = (): Instance => {
      if (instance) return instance;
      const gatewayUrl = parameters.gatewayUrl ?? `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`;
      const widget = createWidget({ projectId: parameters.projectId, gatewayUrl, options: parameters.options });
      const provider = createProvider(widget);
      provider.on("accountsChanged", onAccountsChanged);
      provider.on("chainChanged", onChainChanged);
      const host = parameters.element ?? document.body.appendChild(document.createElement("div"));
      if (!parameters.element) host.setAttribute("data-vestibule", "");
      whenUiNeeded(widget, () => {
        void import("../embed/modal").then((m) => {
          if (!widget.signal.aborted) m.mount(widget, host, { embedded: host === parameters.element });
        });
      });
      instance = { widget, provider };
      return instance;
    };
    const chainOf = async (provider: HostProvider) => {
      const chain = hexChain(await provider.request({ method: "eth_chainId" }).catch(() => undefined));
      return Number.isNaN(chain) ? config.chains[0].id : chain;
    };
    return {
      id: VESTIBULE_CONNECTOR_ID,
      name: "Vestibule",
      type: "vestibule",
      async setup() {
        ensure();
      },
      async connect({ isReconnecting, withCapabilities } = {}) {
        const { widget, provider } = ensure();
        await widget.settled();
        // Reconnecting (a page load): only a connection the session already has; never a prompt.
        const accounts = addresses(await provider.request({ method: isReconnecting ? "eth_accounts" : "eth_requestAccounts" }));
        if (accounts.length === 0) throw new ProviderRpcError(4001, "Not connected");
        const chainId = await chainOf(provider);
        // `withCapabilities`: this connector reports no wallet capabilities. (The return type depends
        // on the call's type parameter; wagmi's own connectors answer it with the same `as never`.)
        return { accounts: (withCapabilities ? accounts.map((address) => ({ address, capabilities: {} })) : accounts) as never, chainId };
      },
      async disconnect() {
        instance?.widget.send({ type: "Disconnect" });
      },
      async getAccounts() {
        return addresses(await ensure().provider.request({ method: "eth_accounts" }));
      },
      async getChainId() {
        return chainOf(ensure().provider);
      },
      async getProvider() {
        return ensure().provider;
      },
      async isAuthorized() {
        const { widget, provider } = ensure();
        try {
          await widget.settled();
          return addresses(await provider.request({ method: "eth_accounts" })).length > 0;
        } catch {
          return false;
        }
      },
      onAccountsChanged,
      onChainChanged,
      onDisconnect() {
        config.emitter.emit("disconnect");
      },
    };
  });
}

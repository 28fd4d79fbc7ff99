// Browser effects: only the browser can talk to wallets. EIP-6963 discovery (the listener is
// attached before `eip6963:requestProvider` is dispatched; wallets are de-duplicated by rdns), and
// the session's pending wallet requests performed and answered as commands with the result or the
// wallet's EIP-1193 error code. Recorded outcomes are what make a replay exact.

import type { DiscoveredWallet } from "../generated/DiscoveredWallet";
import type { SessionState } from "../generated/SessionState";
import type { WalletOutcome } from "../generated/WalletOutcome";
import type { WalletRequest } from "../generated/WalletRequest";

export interface Eip1193Provider {
  request(args: { method: string; params?: unknown[] }): Promise<unknown>;
  on?(event: string, listener: (...args: unknown[]) => void): void;
}

export interface Announced {
  info: { uuid: string; name: string; icon: string; rdns: string };
  provider: Eip1193Provider;
}

/** Wallets announced on `target`, by rdns (the first announcement of an rdns wins). */
export class WalletDiscovery {
  readonly wallets = new Map<string, Announced>();
  private onChange: () => void = () => {};

  constructor(private readonly target: EventTarget) {}

  start(onChange: () => void) {
    this.onChange = onChange;
    this.target.addEventListener("eip6963:announceProvider", ((event: CustomEvent<Announced>) => {
      const { info, provider } = event.detail ?? ({} as Announced);
      if (!info?.rdns || !provider || this.wallets.has(info.rdns)) return;
      this.wallets.set(info.rdns, { info, provider });
      this.onChange();
    }) as EventListener);
    this.target.dispatchEvent(new Event("eip6963:requestProvider"));
  }

  /** What the session is told about (icons only as data URLs, names trimmed by the server). */
  report(): DiscoveredWallet[] {
    return [...this.wallets.values()].map(({ info }) => ({
      name: info.name,
      rdns: info.rdns,
      ...(info.icon?.startsWith("data:image/") ? { icon: info.icon } : {}),
      kind: "ANNOUNCED",
    })) as DiscoveredWallet[];
  }

  provider(connectorId: string): Eip1193Provider | undefined {
    return this.wallets.get(connectorId)?.provider;
  }
}

function toHex(text: string): string {
  return "0x" + Array.from(new TextEncoder().encode(text), (b) => b.toString(16).padStart(2, "0")).join("");
}

function failure(e: unknown): WalletOutcome {
  const code = typeof (e as { code?: unknown })?.code === "number" ? (e as { code: number }).code : -32603;
  const message = e instanceof Error ? e.message : String(e);
  return { status: "error", code, message };
}

/** Performs one wallet request; never throws (a failure is an outcome). */
export async function perform(request: WalletRequest, provider: Eip1193Provider | undefined): Promise<WalletOutcome> {
  if (!provider) return { status: "error", code: 4900, message: "The wallet is not available in this browser" };
  try {
    const kind = request.kind;
    switch (kind.type) {
      case "connect": {
        const accounts = await provider.request({ method: "eth_requestAccounts" });
        const chainId = await provider.request({ method: "eth_chainId" });
        return { status: "ok", result: { accounts, chainId } };
      }
      case "sync": {
        const accounts = await provider.request({ method: "eth_accounts" });
        const chainId = await provider.request({ method: "eth_chainId" });
        return { status: "ok", result: { accounts, chainId } };
      }
      case "signMessage": {
        const signature = await provider.request({ method: "personal_sign", params: [toHex(kind.message), kind.address] });
        return { status: "ok", result: signature };
      }
      case "rpc": {
        const result = await provider.request({ method: kind.method, params: kind.params as unknown[] });
        return { status: "ok", result };
      }
    }
  } catch (e) {
    return failure(e);
  }
  return { status: "error", code: 4200, message: "Unsupported request" };
}

/** Requests in the state that this page has not started yet (each is performed once per page). */
export function newRequests(state: SessionState, started: Set<string>): WalletRequest[] {
  return state.requests.order.map((id) => state.requests.items[id]).filter((r): r is WalletRequest => !!r && !started.has(r.id));
}

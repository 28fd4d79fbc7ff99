// Browser effects: only the browser can talk to wallets. EIP-6963 discovery (the listener is
// attached before `eip6963:requestProvider` is dispatched; wallets are de-duplicated by rdns), and
// the session's pending wallet requests performed and answered as commands with the result or the
// wallet's EIP-1193 error code. Recorded outcomes are what make a replay exact.
//
// An announcement is the page's word, and any script on the page can make one: it is kept only when
// the server can take it (walletChecks.ts: one bad entry would have the whole report refused) and
// never under a connector id the session reserves (`auth`, `injected`, `solana:…`); a bad one is
// left out on its own, with a console warning.

import type { DiscoveredWallet } from "../../generated/DiscoveredWallet";
import type { SessionState } from "../../generated/SessionState";
import type { WalletOutcome } from "../../generated/WalletOutcome";
import type { WalletRequest } from "../../generated/WalletRequest";
import { hex } from "../canonical";
import { errorMessage } from "./errorMessage";
import { EMBEDDED_CONNECTOR } from "./secureFrameHost";
import { hasMethod, isReportable, reportableIcon, trimName } from "./walletChecks";

export interface Eip1193Provider {
  request(args: { method: string; params?: unknown }): Promise<unknown>;
  on?(event: string, listener: (...args: never[]) => void): void;
  removeListener?(event: string, listener: (...args: never[]) => void): void;
}

export interface Eip6963ProviderInfo {
  uuid: string;
  name: string;
  icon: string;
  rdns: string;
}

export interface Announced {
  info: Eip6963ProviderInfo;
  provider: Eip1193Provider;
}

function isAnnounced(detail: unknown): detail is Announced {
  if (detail === null || typeof detail !== "object" || !("info" in detail) || !("provider" in detail)) return false;
  const { info, provider } = detail;
  return (
    info !== null && typeof info === "object" && "rdns" in info && typeof info.rdns === "string" &&
    "name" in info && typeof info.name === "string" &&
    hasMethod(provider, "request")
  );
}

/** Wallets announced on `target`, by rdns (the first announcement of an rdns wins); only those the
 * server takes, under no reserved connector id. */
export class WalletDiscovery {
  readonly wallets = new Map<string, Announced>();

  constructor(private readonly target: EventTarget) {}

  /** Listens until `signal` aborts; `onChange` after each new wallet. */
  start(onChange: () => void, signal: AbortSignal) {
    this.target.addEventListener(
      "eip6963:announceProvider",
      (event) => {
        const detail: unknown = event instanceof CustomEvent ? event.detail : undefined;
        if (!isAnnounced(detail) || this.wallets.has(detail.info.rdns) || !isReportable(trimName(detail.info.name), detail.info.rdns)) return;
        this.wallets.set(detail.info.rdns, detail);
        onChange();
      },
      { signal },
    );
    this.target.dispatchEvent(new Event("eip6963:requestProvider"));
  }

  /** What the session is told about (names trimmed, icons only as data URLs the server keeps). */
  report(): DiscoveredWallet[] {
    return [...this.wallets.values()].map(({ info }) => {
      const icon = reportableIcon(info.icon);
      return { name: trimName(info.name), rdns: info.rdns, ...(icon ? { icon } : {}), kind: "ANNOUNCED" } satisfies DiscoveredWallet;
    });
  }

  /** The page wallet behind a connector id (never one for a reserved id: none is kept). */
  provider(connectorId: string): Eip1193Provider | undefined {
    return this.wallets.get(connectorId)?.provider;
  }
}

function toHex(text: string): string {
  return "0x" + hex(new TextEncoder().encode(text));
}

const codeOf = (e: unknown): number | undefined =>
  e !== null && typeof e === "object" && "code" in e && Number.isSafeInteger(e.code) ? Number(e.code) : undefined;

/** A wallet's error as an outcome (EIP-1193 and Wallet Standard wallets alike); never throws. */
export function walletFailure(e: unknown): WalletOutcome {
  try {
    // Some wallets (MetaMask's mobile app among them) report a chain they do not know as an internal
    // error with the EIP-3326 code 4902 inside `data.originalError`; the session needs the 4902 to
    // ask `wallet_addEthereumChain`, so the inner code wins when there is one.
    const data = e !== null && typeof e === "object" && "data" in e ? e.data : undefined;
    const inner = data !== null && typeof data === "object" && "originalError" in data ? codeOf(data.originalError) : undefined;
    // Most wallets reject with a plain `{ code, message }`, not an Error (errorMessage.ts).
    return { status: "error", code: inner ?? codeOf(e) ?? -32603, message: errorMessage(e, "Unknown error") };
  } catch {
    return { status: "error", code: -32603, message: "Unknown error" }; // an error that cannot be read
  }
}

/** A request to a wallet this page does not have (EIP-1193 4900). */
export const NOT_IN_THIS_BROWSER: WalletOutcome = { status: "error", code: 4900, message: "The wallet is not in this browser" };

/** Performs one wallet request; never throws (a failure is an outcome). The answer is the wallet's:
 * the widget makes it plain JSON (walletJson.ts) before it is sent. */
export async function perform(request: WalletRequest, provider: Eip1193Provider | undefined): Promise<WalletOutcome> {
  if (!provider) return NOT_IN_THIS_BROWSER;
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
      case "signTransaction":
        return { status: "error", code: 4200, message: "Unsupported method" }; // an EVM wallet signs no Solana transaction
      case "rpc": {
        const result = await provider.request({ method: kind.method, params: kind.params });
        return { status: "ok", result };
      }
    }
  } catch (e) {
    return walletFailure(e);
  }
}

/** The embedded wallet's connector: its requests go to the secure frame (secureFrameHost.ts), not
 * to a browser wallet. */
export function isEmbeddedRequest(request: WalletRequest): boolean {
  return request.connectorId === EMBEDDED_CONNECTOR;
}

/** Requests in the state that this page has not started yet (each is performed once per page);
 * `started` holds `<session>/<request id>`. */
export function newRequests(state: SessionState, started: ReadonlySet<string>, session: string): WalletRequest[] {
  return state.requests.order.map((id) => state.requests.items[id]).filter((r): r is WalletRequest => !!r && !started.has(`${session}/${r.id}`));
}

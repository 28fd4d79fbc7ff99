// Solana wallets: discovered through the Wallet Standard (`@wallet-standard/app`'s `getWallets`:
// wallets registered before and after the page asked), kept when they name a `solana:` chain and
// offer `standard:connect` and `standard:events`, de-duplicated by name (the first registration
// wins), and reported to the session as announced connectors of namespace `solana` (the session
// names them `solana:<name>`). The session's wallet requests for them are performed here:
// connect (`standard:connect`, which may prompt), sync (`standard:connect` with `silent`, which never
// does), sign-in messages (`solana:signMessage`, the signature answered in base58) and the
// transactions the server builds (`signTransaction`, and `rpc` with `solana:signAndSendTransaction`
// or `solana:signTransaction`: solanaTransactions.ts, a chunk loaded the first time one is asked).
// A registered wallet is any page script's object: one that is malformed (a name that is not text,
// or one the server would refuse, fields that throw) is left out, never thrown on, and the others
// are still found. The answers are the wallet's: the widget makes them plain JSON (walletJson.ts).

import { getWallets } from "@wallet-standard/app";
import type { Wallet, WalletAccount } from "@wallet-standard/base";
import type { DiscoveredWallet } from "../../generated/DiscoveredWallet";
import type { WalletOutcome } from "../../generated/WalletOutcome";
import type { WalletRequest } from "../../generated/WalletRequest";
import { SOLANA_CLUSTERS } from "../../generated/constants";
import { hasMethod, isReportable, reportableIcon, SOLANA_CONNECTOR_PREFIX, trimName } from "./walletChecks";
import { NOT_IN_THIS_BROWSER, walletFailure } from "./walletEffects";

export { SOLANA_CONNECTOR_PREFIX };

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** Base58 (Bitcoin alphabet), how Solana writes keys and signatures. Small on purpose: the core
 * chunk only ever encodes (signatures), and has a size budget. */
export function base58Encode(bytes: Uint8Array): string {
  const digits: number[] = [];
  for (const byte of bytes) {
    let carry = byte;
    for (let i = 0; i < digits.length; i++) {
      carry += digits[i] << 8;
      digits[i] = carry % 58;
      carry = (carry / 58) | 0;
    }
    for (; carry > 0; carry = (carry / 58) | 0) digits.push(carry % 58);
  }
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  return "1".repeat(zeros) + digits.reverse().map((d) => BASE58[d]).join("");
}

interface ConnectFeature {
  connect(input?: { silent?: boolean }): Promise<{ accounts: readonly WalletAccount[] }>;
}
interface DisconnectFeature {
  disconnect(): Promise<void>;
}
interface EventsFeature {
  on(event: "change", listener: (properties: { accounts?: readonly WalletAccount[] }) => void): () => void;
}
interface SignMessageFeature {
  signMessage(...inputs: Array<{ account: WalletAccount; message: Uint8Array }>): Promise<ReadonlyArray<{ signature: Uint8Array }>>;
}
interface SignTransactionFeature {
  signTransaction(...inputs: Array<{ account: WalletAccount; transaction: Uint8Array; chain?: `${string}:${string}` }>): Promise<ReadonlyArray<{ signedTransaction: Uint8Array }>>;
}
interface SignAndSendFeature {
  signAndSendTransaction(...inputs: Array<{ account: WalletAccount; transaction: Uint8Array; chain: `${string}:${string}` }>): Promise<ReadonlyArray<{ signature: Uint8Array }>>;
}

/** A feature of `wallet` with `method`, typed by what this module calls (the method is all that is
 * checked, as the type's other members are what the wallet answers). */
function feature<T>(wallet: Wallet, name: string, method: string): T | undefined {
  const f: unknown = wallet.features[name as `${string}:${string}`];
  return hasMethod(f, method) ? (f as T) : undefined;
}

export const solanaFeatures = {
  connect: (w: Wallet) => feature<ConnectFeature>(w, "standard:connect", "connect"),
  disconnect: (w: Wallet) => feature<DisconnectFeature>(w, "standard:disconnect", "disconnect"),
  events: (w: Wallet) => feature<EventsFeature>(w, "standard:events", "on"),
  signMessage: (w: Wallet) => feature<SignMessageFeature>(w, "solana:signMessage", "signMessage"),
  signTransaction: (w: Wallet) => feature<SignTransactionFeature>(w, "solana:signTransaction", "signTransaction"),
  signAndSendTransaction: (w: Wallet) => feature<SignAndSendFeature>(w, "solana:signAndSendTransaction", "signAndSendTransaction"),
};

/** A Solana wallet the widget can use: it names a Solana chain, connects and reports changes. */
export function isSolanaWallet(wallet: Wallet): boolean {
  return wallet.chains.some((c) => c.startsWith("solana:")) && !!solanaFeatures.connect(wallet) && !!solanaFeatures.events(wallet);
}

/** The Wallet Standard chain (`solana:devnet`) of a session's Solana network (`solana:EtWT…`). */
export function walletChainOf(caipNetworkId: string): `${string}:${string}` | undefined {
  const cluster: { chain: string } | undefined = Object.entries(SOLANA_CLUSTERS).find(([id]) => id === caipNetworkId)?.[1];
  return cluster ? (cluster.chain as `${string}:${string}`) : undefined;
}

export class SolanaDiscovery {
  /** By name (trimmed, as reported). */
  readonly wallets = new Map<string, Wallet>();

  /** Listens until `signal` aborts; `onChange` after each new wallet. */
  start(onChange: () => void, signal: AbortSignal) {
    const registry = getWallets();
    const add = (wallets: readonly Wallet[]) => {
      let added = false;
      for (const wallet of wallets) {
        try {
          if (!isSolanaWallet(wallet)) continue;
          const name = trimName(wallet.name);
          if (this.wallets.has(name) || !isReportable(name)) continue;
          this.wallets.set(name, wallet);
          added = true;
        } catch {
          // a malformed wallet (fields that are not what the standard says, or that throw): left out
        }
      }
      if (added) onChange();
    };
    const off = registry.on("register", (...wallets) => {
      if (!signal.aborted) add(wallets);
    });
    signal.addEventListener("abort", off, { once: true });
    add(registry.get());
  }

  report(): DiscoveredWallet[] {
    return [...this.wallets].map(([name, wallet]) => {
      const icon = reportableIcon(wallet.icon);
      return { name, ...(icon ? { icon } : {}), kind: "ANNOUNCED", namespace: "solana" } satisfies DiscoveredWallet;
    });
  }

  /** The wallet behind a session connector id (`solana:<name>`). */
  wallet(connectorId: string): Wallet | undefined {
    return connectorId.startsWith(SOLANA_CONNECTOR_PREFIX) ? this.wallets.get(connectorId.slice(SOLANA_CONNECTOR_PREFIX.length)) : undefined;
  }
}

const accountsResult = (accounts: readonly WalletAccount[]) => ({
  accounts: accounts.map((a) => a.address),
  chains: [...new Set(accounts.flatMap((a) => a.chains))],
});

/** Performs one of the session's requests with a Solana wallet; never throws. */
export async function performSolana(request: WalletRequest, wallet: Wallet | undefined): Promise<WalletOutcome> {
  if (!wallet) return NOT_IN_THIS_BROWSER;
  try {
    const kind = request.kind;
    const connect = solanaFeatures.connect(wallet);
    switch (kind.type) {
      case "connect": {
        if (!connect) return { status: "error", code: 4200, message: "The wallet cannot connect" };
        const { accounts } = await connect.connect();
        return { status: "ok", result: accountsResult(accounts.length ? accounts : wallet.accounts) };
      }
      case "sync": {
        if (!connect) return { status: "error", code: 4200, message: "The wallet cannot connect" };
        const { accounts } = await connect.connect({ silent: true });
        return { status: "ok", result: accountsResult(accounts) };
      }
      case "signMessage": {
        const sign = solanaFeatures.signMessage(wallet);
        const account = wallet.accounts.find((a) => a.address === kind.address);
        if (!sign) return { status: "error", code: 4200, message: "The wallet cannot sign messages" };
        if (!account) return { status: "error", code: 4100, message: "The account is not authorized" };
        const [output] = await sign.signMessage({ account, message: new TextEncoder().encode(kind.message) });
        if (!output) return { status: "error", code: -32603, message: "The wallet returned no signature" };
        return { status: "ok", result: base58Encode(output.signature) };
      }
      case "signTransaction":
      case "rpc":
        // In the chunk that performs transactions (loaded the first time one is asked).
        return await (await import("./solanaTransactions")).performSolanaRequest(kind, wallet, walletChainOf);
    }
  } catch (e) {
    return walletFailure(e);
  }
}

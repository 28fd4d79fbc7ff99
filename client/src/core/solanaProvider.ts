// The Solana provider a host app uses, beside the EIP-1193 one: it answers from the session's solana
// connection and routes signing to the Solana wallet the session connected (found through the Wallet
// Standard), as the EIP-1193 provider routes to the connected EVM wallet. `connect()` opens the
// modal (on SwitchActiveChain when another namespace's account is active) and resolves when a
// Solana account connects, or rejects with 4001 and the session's reason. Transactions are wire
// bytes (legacy or v0), signed for the session's Solana network (its Wallet Standard chain, e.g.
// `solana:devnet`). After the widget's `destroy()` every call fails with 4900.

import type { Wallet, WalletAccount } from "@wallet-standard/base";
import { base58Encode, solanaFeatures, walletChainOf } from "./effects/solanaWallets";
import { ProviderRpcError, requestConnection } from "./provider";
import type { Widget } from "./widget";
import { callEach } from "./callEach";

export type SolanaEvent = "connect" | "disconnect" | "accountChanged";
type Listener = (...args: unknown[]) => void;

export interface SolanaHostProvider {
  /** The connected Solana account's base58 address, or null. */
  readonly address: string | null;
  /** The session's network for it (CAIP-2, `solana:<genesis hash prefix>`), or null. */
  readonly chain: string | null;
  connect(): Promise<{ address: string }>;
  /** Disconnects the session's Solana connection (not the others). */
  disconnect(): Promise<void>;
  signMessage(message: Uint8Array): Promise<{ signature: Uint8Array }>;
  /** Returns the transaction with the account's signature in its slot. */
  signTransaction(transaction: Uint8Array): Promise<Uint8Array>;
  /** Signs and sends through the wallet; resolves with the transaction's signature (base58). */
  signAndSendTransaction(transaction: Uint8Array): Promise<{ signature: string }>;
  on(event: SolanaEvent, listener: Listener): void;
  removeListener(event: SolanaEvent, listener: Listener): void;
}

export function createSolanaProvider(widget: Widget): SolanaHostProvider {
  const listeners = new Map<SolanaEvent, Set<Listener>>();
  const emit = (event: SolanaEvent, ...args: unknown[]) => callEach(listeners.get(event), ...args);
  const connection = () => {
    const conn = widget.state()?.connection.namespaces.solana;
    return conn?.status === "connected" && conn.address ? conn : undefined;
  };
  let last: string | null = null;
  const stop = widget.subscribe(() => {
    const now = connection()?.address ?? null;
    if (now === last) return;
    if (now && !last) emit("connect", { address: now });
    else if (!now && last) emit("disconnect");
    else emit("accountChanged", { address: now });
    last = now;
  });
  widget.signal.addEventListener("abort", () => {
    stop();
    listeners.clear();
  });

  const alive = () => {
    if (widget.signal.aborted) throw new ProviderRpcError(4900, "The widget was destroyed");
  };
  /** The connected wallet, its account and the chain to sign for. */
  const signer = (): { wallet: Wallet; account: WalletAccount; chain: `${string}:${string}` } => {
    alive();
    const conn = connection();
    const wallet = conn?.connectorId ? widget.solanaDiscovery.wallet(conn.connectorId) : undefined;
    const account = wallet?.accounts.find((a) => a.address === conn?.address);
    const chain = conn?.network ? walletChainOf(conn.network.caipNetworkId) : undefined;
    if (!wallet || !account) throw new ProviderRpcError(4900, "Not connected");
    if (!chain || !conn?.network?.supported) throw new ProviderRpcError(4901, "The Solana account is not on a network of this session");
    return { wallet, account, chain };
  };
  const unsupported = (what: string) => new ProviderRpcError(4200, `The connected wallet cannot ${what}`);

  return {
    get address() {
      return connection()?.address ?? null;
    },
    get chain() {
      return connection()?.network?.caipNetworkId ?? null;
    },
    async connect() {
      alive();
      return { address: await requestConnection(widget, "solana") };
    },
    async disconnect() {
      alive();
      if (!connection()) return;
      const result = await widget.command({ type: "Disconnect", namespace: "solana" });
      if (result.status === "refused") throw new ProviderRpcError(4900, result.error?.message ?? "Not connected");
    },
    async signMessage(message) {
      const { wallet, account } = signer();
      const feature = solanaFeatures.signMessage(wallet);
      if (!feature) throw unsupported("sign messages");
      const [output] = await feature.signMessage({ account, message });
      if (!output) throw new ProviderRpcError(-32603, "The wallet returned no signature");
      return { signature: output.signature };
    },
    async signTransaction(transaction) {
      const { wallet, account, chain } = signer();
      const feature = solanaFeatures.signTransaction(wallet);
      if (!feature) throw unsupported("sign transactions");
      const [output] = await feature.signTransaction({ account, transaction, chain });
      if (!output) throw new ProviderRpcError(-32603, "The wallet returned no transaction");
      return output.signedTransaction;
    },
    async signAndSendTransaction(transaction) {
      const { wallet, account, chain } = signer();
      const feature = solanaFeatures.signAndSendTransaction(wallet);
      if (!feature) throw unsupported("send transactions");
      const [output] = await feature.signAndSendTransaction({ account, transaction, chain });
      if (!output) throw new ProviderRpcError(-32603, "The wallet returned no signature");
      return { signature: base58Encode(output.signature) };
    },
    on(event, listener) {
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event)?.add(listener);
    },
    removeListener(event, listener) {
      listeners.get(event)?.delete(listener);
    },
  };
}

// A development Solana wallet: a Wallet Standard wallet (registered with `registerWallet`) holding an
// ed25519 key (@noble/curves) that really signs: `solana:signMessage`, `solana:signTransaction`
// (legacy and v0 messages) and `solana:signAndSendTransaction`, which sends to the JSON-RPC node
// it was given (the local LiteSVM peer in tests) after checking that the node is on the chain asked
// for. `standard:connect` prompts (counted in `prompts`) unless `silent`, and remembers the grant
// across reloads as a real wallet does; `standard:events` reports account changes. It can be told
// to reject every prompt with 4001, to hold prompts open, or to tamper with its signatures.

import { ed25519 } from "@noble/curves/ed25519";
import { base58 } from "@scure/base";
import type { SolanaSignAndSendTransactionFeature, SolanaSignAndSendTransactionInput, SolanaSignMessageFeature, SolanaSignMessageInput, SolanaSignTransactionFeature, SolanaSignTransactionInput } from "@solana/wallet-standard-features";
import type { IdentifierString, Wallet, WalletAccount } from "@wallet-standard/base";
import type { StandardConnectFeature, StandardConnectInput, StandardDisconnectFeature, StandardEventsChangeProperties, StandardEventsFeature, StandardEventsListeners, StandardEventsNames } from "@wallet-standard/features";
import { ReadonlyWalletAccount } from "@wallet-standard/wallet";
import { parseTransaction, serializeTransaction } from "./transaction";

export const DEV_SOLANA_WALLET_NAME = "Dev Solana Wallet";
export const SOLANA_CHAINS = ["solana:mainnet", "solana:devnet", "solana:testnet"] as const;
/** The genesis hash each cluster's node answers `getGenesisHash` with. */
export const GENESIS_HASHES: Record<string, string> = {
  "solana:mainnet": "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d",
  "solana:devnet": "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG",
  "solana:testnet": "4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY",
};
const GRANT = "vestibule:devSolanaWallet:granted";
const ACCOUNT_FEATURES = ["solana:signMessage", "solana:signTransaction", "solana:signAndSendTransaction"] as const;

export interface WalletError extends Error {
  code: number;
}

function walletError(code: number, message: string): WalletError {
  return Object.assign(new Error(message), { code });
}

type Features = StandardConnectFeature & StandardDisconnectFeature & StandardEventsFeature & SolanaSignMessageFeature & SolanaSignTransactionFeature & SolanaSignAndSendTransactionFeature;

async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  const body: unknown = await response.json();
  if (body !== null && typeof body === "object" && "error" in body && body.error !== null && typeof body.error === "object") {
    const { code, message } = { code: -32603, message: "JSON-RPC error", ...body.error };
    throw walletError(typeof code === "number" ? code : -32603, String(message));
  }
  return body !== null && typeof body === "object" && "result" in body ? body.result : null;
}

export class DevSolanaWallet implements Wallet {
  readonly version = "1.0.0" as const;
  readonly name = DEV_SOLANA_WALLET_NAME;
  readonly icon = DEV_ICON;
  readonly chains: IdentifierString[];
  rejectAll = false;
  holdPrompts = false;
  /** For tests: signatures with one bit changed (the server must refuse them). */
  tamperSignatures = false;
  /** Requests that would show a prompt in a real wallet (connect, sign), on this page. */
  prompts = 0;
  private seed: Uint8Array;
  private account: ReadonlyWalletAccount;
  private connected = false;
  private held: Array<() => void> = [];
  /** `change` is the standard's only event. */
  private listeners = new Set<StandardEventsListeners["change"]>();

  constructor(
    seed: Uint8Array,
    readonly rpcUrl?: string,
    chains: readonly IdentifierString[] = SOLANA_CHAINS,
  ) {
    this.chains = [...chains];
    this.seed = seed;
    this.account = this.accountOf(seed);
  }

  static random(rpcUrl?: string): DevSolanaWallet {
    return new DevSolanaWallet(ed25519.utils.randomPrivateKey(), rpcUrl);
  }

  get address(): string {
    return this.account.address;
  }

  get accounts(): readonly WalletAccount[] {
    return this.connected || this.granted() ? [this.account] : [];
  }

  get features(): Features {
    return {
      "standard:connect": { version: "1.0.0", connect: (input) => this.connect(input) },
      "standard:disconnect": { version: "1.0.0", disconnect: async () => this.disconnect() },
      "standard:events": { version: "1.0.0", on: (event, listener) => this.on(event, listener) },
      "solana:signMessage": { version: "1.1.0", signMessage: (...inputs) => this.signMessage(inputs) },
      "solana:signTransaction": { version: "1.0.0", supportedTransactionVersions: ["legacy", 0], signTransaction: (...inputs) => this.signTransactions(inputs) },
      "solana:signAndSendTransaction": { version: "1.0.0", supportedTransactionVersions: ["legacy", 0], signAndSendTransaction: (...inputs) => this.signAndSend(inputs) },
    };
  }

  release() {
    for (const r of this.held.splice(0)) r();
  }

  /** For tests: the visitor picks another account in the wallet (a `change` event follows). */
  switchAccount(seed: Uint8Array) {
    this.seed = seed;
    this.account = this.accountOf(seed);
    if (this.connected || this.granted()) this.grant();
    this.emit("change", { accounts: this.accounts });
  }

  private accountOf(seed: Uint8Array): ReadonlyWalletAccount {
    const publicKey = ed25519.getPublicKey(seed);
    return new ReadonlyWalletAccount({ address: base58.encode(publicKey), publicKey, chains: this.chains, features: ACCOUNT_FEATURES });
  }

  private granted(): boolean {
    return typeof localStorage !== "undefined" && localStorage.getItem(GRANT) === this.account.address;
  }

  private grant() {
    if (typeof localStorage !== "undefined") localStorage.setItem(GRANT, this.account.address);
  }

  private async prompt() {
    this.prompts++;
    if (this.holdPrompts) await new Promise<void>((resolve) => this.held.push(resolve));
    if (this.rejectAll) throw walletError(4001, "User rejected the request.");
  }

  private async connect(input?: StandardConnectInput) {
    // A silent connect never prompts: it answers with what the visitor granted before.
    if (input?.silent) return { accounts: this.accounts };
    await this.prompt();
    this.connected = true;
    this.grant();
    this.emit("change", { accounts: this.accounts });
    return { accounts: this.accounts };
  }

  private disconnect() {
    this.connected = false;
    if (typeof localStorage !== "undefined" && this.granted()) localStorage.removeItem(GRANT);
    this.emit("change", { accounts: this.accounts });
  }

  private on<E extends StandardEventsNames>(event: E, listener: StandardEventsListeners[E]): () => void {
    if (event !== "change") return () => undefined;
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(event: "change", properties: StandardEventsChangeProperties) {
    if (event === "change") for (const l of this.listeners) l(properties);
  }

  private checkAccount(account: WalletAccount) {
    if (account.address !== this.account.address || !this.accounts.length) throw walletError(4100, "Unknown or unauthorized account");
  }

  private sign(bytes: Uint8Array): Uint8Array {
    const signature = ed25519.sign(bytes, this.seed);
    // Flipping a bit keeps the signature well-formed but makes it nobody's.
    if (this.tamperSignatures) signature[63] ^= 0x01;
    return signature;
  }

  private async signMessage(inputs: readonly SolanaSignMessageInput[]) {
    for (const input of inputs) this.checkAccount(input.account);
    await this.prompt();
    return inputs.map(({ message }) => ({ signedMessage: message, signature: this.sign(message), signatureType: "ed25519" as const }));
  }

  /** Signs each transaction in this key's signer slot. */
  private signInto(transaction: Uint8Array): Uint8Array {
    let parsed;
    try {
      parsed = parseTransaction(transaction);
    } catch (e) {
      throw walletError(-32602, `The transaction cannot be read: ${e instanceof Error ? e.message : String(e)}`);
    }
    const slot = parsed.signers.indexOf(this.account.address);
    if (slot < 0) throw walletError(-32602, "The transaction does not need this account's signature");
    const signatures = parsed.signatures.map((s, i) => (i === slot ? this.sign(parsed.message) : s));
    return serializeTransaction(signatures, parsed.message);
  }

  private async signTransactions(inputs: readonly SolanaSignTransactionInput[]) {
    for (const input of inputs) {
      this.checkAccount(input.account);
      if (input.chain && !this.chains.includes(input.chain)) throw walletError(4901, `The dev Solana wallet does not support ${input.chain}`);
    }
    await this.prompt();
    return inputs.map(({ transaction }) => ({ signedTransaction: this.signInto(transaction) }));
  }

  private async signAndSend(inputs: readonly SolanaSignAndSendTransactionInput[]) {
    const node = this.rpcUrl;
    if (!node) throw walletError(4200, "The dev Solana wallet has no JSON-RPC node to send to (give it an rpcUrl)");
    for (const input of inputs) {
      this.checkAccount(input.account);
      // A wallet sends to the cluster asked for; a node of another cluster would not know the blockhash.
      const genesis = await rpc(node, "getGenesisHash");
      if (GENESIS_HASHES[input.chain] !== genesis) throw walletError(4901, `The dev Solana wallet's node is not on ${input.chain}`);
    }
    await this.prompt();
    const outputs = [];
    for (const input of inputs) {
      const signed = this.signInto(input.transaction);
      const options = { encoding: "base64", skipPreflight: input.options?.skipPreflight ?? false, preflightCommitment: input.options?.preflightCommitment ?? "confirmed" };
      const signature = await rpc(node, "sendTransaction", [btoa(String.fromCharCode(...signed)), options]);
      outputs.push({ signature: base58.decode(String(signature)) });
    }
    return outputs;
  }
}

const DEV_ICON: `data:image/svg+xml;base64,${string}` = `data:image/svg+xml;base64,${btoa(
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="8" fill="#7c3aed"/><text x="16" y="21" font-size="13" text-anchor="middle" fill="#fff" font-family="sans-serif">DS</text></svg>',
)}`;

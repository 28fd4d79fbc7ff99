// The session's Solana transaction requests, performed with a Wallet Standard wallet. The server
// builds the transaction (a SOL transfer or an SPL TransferChecked, with a recent blockhash) and asks
// for it as a wallet request; this module (a chunk of its own, loaded the first time one is asked,
// so the core chunk does not carry it) hands it to the wallet:
//
//   signTransaction { transaction, address, network }   (what the session asks; decision 0911)
//     -> { signedTransaction }    the server sends it to the node itself
//   rpc "solana:signAndSendTransaction" { transaction, network?, address? }
//     -> { signature }            the wallet signed and sent it (`solana:signAndSendTransaction`)
//     -> { signedTransaction }    the wallet can only sign (`solana:signTransaction`): the server
//                                 sends it to the node itself
//   rpc "solana:signTransaction" { transaction, network?, address? }
//     -> { signedTransaction }
//
// `transaction` is the wire transaction in base64 (what `sendTransaction` takes), `signature` is
// base58 (how Solana writes signatures, and what `getSignatureStatuses` takes), `signedTransaction`
// is base64. `network` is the session's CAIP-2 network (`solana:EtWT…`) or a Wallet Standard chain
// (`solana:devnet`); `address` the account that signs (the wallet's first account otherwise). The
// params may also be a one-element array of that object (JSON-RPC's positional form). A wallet's
// failure is thrown to the caller (performSolana), which answers it with the wallet's code.
//
// Nothing here is imported from the core's modules (solanaWallets.ts, the generated constants): a
// shared import would split them into chunks of their own, or bring the module-preload helper into
// the core chunk, and grow it past its budget. What it needs from them is passed in.

import { base58 } from "@scure/base";
import type { Wallet, WalletAccount } from "@wallet-standard/base";
import type { RequestKind } from "../../generated/RequestKind";
import type { WalletOutcome } from "../../generated/WalletOutcome";

export const SIGN_AND_SEND = "solana:signAndSendTransaction";
export const SIGN = "solana:signTransaction";

export function isSolanaTransactionMethod(method: string): boolean {
  return method === SIGN_AND_SEND || method === SIGN;
}

export function base64Decode(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

export function base64Encode(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

interface TransactionParams {
  transaction: string;
  network?: string;
  address?: string;
}

function field(value: object, name: string): string | undefined {
  const v: unknown = name in value ? (value as Record<string, unknown>)[name] : undefined;
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** The request's params, or why they cannot be used. */
export function readParams(params: unknown): TransactionParams | string {
  const value: unknown = Array.isArray(params) ? params[0] : params;
  if (value === null || typeof value !== "object") return "The request has no transaction";
  const transaction = field(value, "transaction");
  if (!transaction) return "The request has no transaction";
  return { transaction, network: field(value, "network") ?? field(value, "chain"), address: field(value, "address") ?? field(value, "account") };
}

type Chain = `${string}:${string}`;
interface SignAndSend {
  signAndSendTransaction(...inputs: Array<{ account: WalletAccount; transaction: Uint8Array; chain: Chain }>): Promise<ReadonlyArray<{ signature: Uint8Array }>>;
}
interface Sign {
  signTransaction(...inputs: Array<{ account: WalletAccount; transaction: Uint8Array; chain?: Chain }>): Promise<ReadonlyArray<{ signedTransaction: Uint8Array }>>;
}

/** The wallet's feature `name` when it has `method`. */
function featureOf<T>(wallet: Wallet, name: Chain, method: string): T | undefined {
  const f: unknown = wallet.features[name];
  return f !== null && typeof f === "object" && method in f && typeof (f as Record<string, unknown>)[method] === "function" ? (f as T) : undefined;
}

/** The Wallet Standard chain (`solana:devnet`) of a session's CAIP-2 network (`solana:EtWT…`). */
export type WalletChainOf = (network: string) => Chain | undefined;

/** The Wallet Standard chain of a session network or chain id. */
function chainOf(network: string | undefined, account: WalletAccount, walletChainOf: WalletChainOf): Chain | undefined {
  if (network) {
    const chain = walletChainOf(network);
    if (chain) return chain;
    if (/^solana:[a-z]+$/.test(network)) return network as `${string}:${string}`;
  }
  const own = account.chains.find((c) => c.startsWith("solana:"));
  return own as `${string}:${string}` | undefined;
}

/** Performs the session's `signTransaction` request, or an `rpc` one naming a transaction method
 * (any other method: 4200); throws what the wallet threw. */
export function performSolanaRequest(kind: Extract<RequestKind, { type: "signTransaction" | "rpc" }>, wallet: Wallet, walletChainOf: WalletChainOf): Promise<WalletOutcome> {
  if (kind.type === "signTransaction") {
    return performSolanaTransaction(SIGN, { transaction: kind.transaction, address: kind.address, network: kind.network }, wallet, walletChainOf);
  }
  if (!isSolanaTransactionMethod(kind.method)) return Promise.resolve({ status: "error", code: 4200, message: `A Solana wallet has no method ${kind.method}` });
  return performSolanaTransaction(kind.method, kind.params, wallet, walletChainOf);
}

/** Performs a Solana transaction request (`method` is one of the two above); throws what the wallet threw. */
export async function performSolanaTransaction(method: string, params: unknown, wallet: Wallet, walletChainOf: WalletChainOf): Promise<WalletOutcome> {
  {
    const read = readParams(params);
    if (typeof read === "string") return { status: "error", code: -32602, message: read };
    const account = read.address ? wallet.accounts.find((a) => a.address === read.address) : wallet.accounts[0];
    if (!account) return { status: "error", code: 4100, message: "The account is not authorized" };
    let transaction: Uint8Array;
    try {
      transaction = base64Decode(read.transaction);
    } catch {
      return { status: "error", code: -32602, message: "The transaction is not base64" };
    }
    const chain = chainOf(read.network, account, walletChainOf);
    const signAndSend = method === SIGN_AND_SEND ? featureOf<SignAndSend>(wallet, SIGN_AND_SEND, "signAndSendTransaction") : undefined;
    if (signAndSend) {
      if (!chain) return { status: "error", code: 4901, message: "The wallet has no chain for this network" };
      const [output] = await signAndSend.signAndSendTransaction({ account, transaction, chain });
      if (!output) return { status: "error", code: -32603, message: "The wallet returned no signature" };
      return { status: "ok", result: { signature: base58.encode(output.signature) } };
    }
    const sign = featureOf<Sign>(wallet, SIGN, "signTransaction");
    if (!sign) return { status: "error", code: 4200, message: "The wallet cannot sign transactions" };
    const [output] = await sign.signTransaction(chain ? { account, transaction, chain } : { account, transaction });
    if (!output) return { status: "error", code: -32603, message: "The wallet returned no signed transaction" };
    return { status: "ok", result: { signedTransaction: base64Encode(output.signedTransaction) } };
  }
}

// The frame's wallet: finishing a login (recovering or creating the key), and answering the
// session's wallet requests for connector "auth". The key exists only inside `withSeed`, rebuilt
// from the device share and a freshly released server share for one answer and wiped after it.
// Everything the page around it provides (the API, the IndexedDB store, the HPKE key pair, the
// approval page) comes in as `FrameContext`, so this module is tested without a browser.

import { ed25519 } from "@noble/curves/ed25519";
import { base58, base64urlnopad } from "@scure/base";
import type { WalletOutcome } from "../generated/WalletOutcome";
import { signDigest, personalSign } from "../wallet/devWallet";
import { typedDataDigest, type TypedData } from "../wallet/eip712";
import { parseTransaction, serializeTransaction } from "../wallet/solana/transaction";
import { signTransaction, type Eip1559Transaction, type TransactionRequest } from "../wallet/transaction";
import { ApiError, readLoginResult, type LoginResult, type Post } from "./api";
import type { DeviceStore } from "./deviceStore";
import { isSealed, openShare } from "./hpke";
import { addressesOf, combineShares, deriveEvmKey, deriveSolanaSeed, newSeed, sameAddress, signBinding, splitSeed, wipe } from "./keys";
import { isSigningRequest, SOLANA_SIGNING_METHODS, type HostRequests } from "./protocol";

export interface FrameContext {
  frameId: string;
  frameToken: string;
  keyPair: CryptoKeyPair;
  post: Post;
  store: DeviceStore;
}

/** The logged-in wallet this frame answers for. */
export interface FrameLogin {
  userId: string;
  walletId: string;
  eip155Address: string;
  solanaAddress: string;
}

export type RpcRequest = HostRequests["RPC_REQUEST"];

/** What the visitor approves: a title and the request's key params. */
export interface ApprovalText {
  title: string;
  rows: Array<[string, string]>;
}

export type Approve = (text: ApprovalText) => Promise<boolean>;

export const USER_REJECTED: WalletOutcome = { status: "error", code: 4001, message: "User rejected the request." };

class WalletRefusal extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

// ---- login ------------------------------------------------------------------------------------

/** After a verified login: recovers the wallet (device or recovery share + server share) or, for a
 * user without one, creates it. Answers the wallet's addresses. */
export async function completeLogin(ctx: FrameContext, answer: unknown): Promise<FrameLogin> {
  const login: LoginResult = readLoginResult(answer);
  if (!login.wallet) return createWallet(ctx, login.userId);
  const { walletId, eip155Address, solanaAddress, serverShare, recoveryShare } = login.wallet;
  const device = await ctx.store.get(walletId);
  const other = device ?? (recoveryShare ? await openShare(ctx.keyPair, recoveryShare, ctx.frameId) : null);
  if (!other) throw new Error("This device has no share of the wallet and the server sent no recovery share");
  const server = await openShare(ctx.keyPair, serverShare, ctx.frameId);
  const seed = await combineShares(other, server);
  try {
    if (!sameAddress(addressesOf(seed).eip155Address, eip155Address)) throw new Error("The recovered key does not match the wallet's address");
    // A new device keeps the recovery share as its own from now on.
    if (!device) await ctx.store.put(walletId, other);
    return { userId: login.userId, walletId, eip155Address, solanaAddress };
  } finally {
    wipe(seed, server, other);
  }
}

async function createWallet(ctx: FrameContext, userId: string): Promise<FrameLogin> {
  const seed = newSeed();
  const shares = await splitSeed(seed);
  try {
    const addresses = addressesOf(seed);
    const signatures = signBinding(seed, ctx.frameId, userId);
    const answer = await ctx.post("/api/wallet", {
      frameToken: ctx.frameToken,
      ...addresses,
      serverShare: base64urlnopad.encode(shares.server),
      recoveryShare: base64urlnopad.encode(shares.recovery),
      ...signatures,
    });
    const walletId = answer !== null && typeof answer === "object" && "walletId" in answer && typeof answer.walletId === "string" ? answer.walletId : null;
    if (!walletId) throw new ApiError("bad_answer", "The server's answer was not understood");
    await ctx.store.put(walletId, shares.device);
    return { userId, walletId, ...addresses };
  } finally {
    wipe(seed, shares.device, shares.server, shares.recovery);
  }
}

/** Rebuilds the seed for one use (a fresh server share each time) and wipes it after. */
export async function withSeed<T>(ctx: FrameContext, login: FrameLogin, use: (seed: Uint8Array) => T | Promise<T>): Promise<T> {
  const device = await ctx.store.get(login.walletId);
  if (!device) throw new WalletRefusal(4100, "This device holds no share of the wallet");
  const answer = await ctx.post("/api/wallet/share", { frameToken: ctx.frameToken });
  const sealed = answer !== null && typeof answer === "object" && "serverShare" in answer ? answer.serverShare : null;
  if (!isSealed(sealed)) throw new ApiError("bad_answer", "The server's answer was not understood");
  const server = await openShare(ctx.keyPair, sealed, ctx.frameId);
  const seed = await combineShares(device, server);
  try {
    if (!sameAddress(addressesOf(seed).eip155Address, login.eip155Address)) throw new Error("The rebuilt key does not match the wallet's address");
    return await use(seed);
  } finally {
    wipe(seed, server, device);
  }
}

// ---- requests ---------------------------------------------------------------------------------

const SOLANA_SIGNING = new Set(SOLANA_SIGNING_METHODS);

const first = (params: unknown, i = 0): unknown => (Array.isArray(params) ? params[i] : undefined);
const field = (value: unknown, key: string): unknown =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? Object.entries(value).find(([k]) => k === key)?.[1] : undefined;

/** A personal_sign parameter's bytes: hex when it is 0x-hex, else its UTF-8. */
export function messageBytes(message: string): Uint8Array {
  if (/^0x([0-9a-fA-F]{2})*$/.test(message)) return Uint8Array.from(message.slice(2).match(/../g) ?? [], (h) => parseInt(h, 16));
  return new TextEncoder().encode(message);
}

function readable(bytes: Uint8Array): string {
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    if (!/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/.test(text)) return text;
  } catch {
    // not UTF-8: shown as hex below
  }
  return "0x" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Wei (hex or decimal) in ETH, exactly. */
export function weiToEth(raw: unknown): string {
  if (typeof raw !== "string" || !/^(0x[0-9a-fA-F]+|[0-9]+)$/.test(raw)) return "0 ETH";
  const wei = BigInt(raw);
  const fraction = (wei % 10n ** 18n).toString().padStart(18, "0").replace(/0+$/, "");
  return `${wei / 10n ** 18n}${fraction ? "." + fraction : ""} ETH`;
}

function parseTyped(raw: unknown): TypedData | null {
  let value: unknown = raw;
  if (typeof raw === "string") {
    try {
      value = JSON.parse(raw);
    } catch {
      return null;
    }
  }
  const ok = value !== null && typeof value === "object" && "types" in value && "primaryType" in value && "domain" in value && "message" in value;
  // Checked above for the four fields typedDataDigest reads; their contents are checked as it hashes.
  return ok ? (value as TypedData) : null;
}

/** What the approval page shows for a signing request. */
export function approvalText(request: RpcRequest): ApprovalText {
  const { kind } = request;
  const chain: [string, string] = ["Network", request.chainId];
  switch (kind.type) {
    case "signMessage":
      return { title: "Sign a message", rows: [["Message", kind.message], chain] };
    case "signTransaction":
      return { title: "Sign a transaction", rows: [["Account", kind.address], chain] };
    case "rpc": {
      const { method, params } = kind;
      if (method === "personal_sign") {
        const message = first(params);
        return { title: "Sign a message", rows: [["Message", typeof message === "string" ? readable(messageBytes(message)) : ""], chain] };
      }
      if (method === "eth_signTypedData_v4") {
        const typed = parseTyped(first(params, 1));
        const domain = field(typed?.domain, "name");
        return { title: "Sign typed data", rows: [["Type", typed?.primaryType ?? "unknown"], ["Domain", typeof domain === "string" ? domain : ""], ["Data", JSON.stringify(typed?.message ?? null)], chain] };
      }
      if (method === "eth_sendTransaction") {
        const tx = first(params);
        const to = field(tx, "to");
        const data = field(tx, "data") ?? field(tx, "input");
        return {
          title: "Send a transaction",
          rows: [["To", typeof to === "string" ? to : "New contract"], ["Value", weiToEth(field(tx, "value"))], ["Data", typeof data === "string" && data !== "0x" ? data : "None"], chain],
        };
      }
      return { title: "Sign a transaction", rows: [["Method", method], chain] };
    }
    default:
      return { title: "Approve", rows: [chain] };
  }
}

const hexChainId = (caip2: string) => {
  const reference = caip2.split(":")[1] ?? "";
  return /^[0-9]+$/.test(reference) ? "0x" + BigInt(reference).toString(16) : reference;
};

type Rpc = (method: string, params: unknown[]) => Promise<unknown>;

function rpcThrough(ctx: FrameContext, chainId: string): Rpc {
  return async (method, params) => {
    const answer = await ctx.post("/api/rpc", { frameToken: ctx.frameToken, chainId, method, params });
    const error = field(answer, "error");
    if (error !== undefined) {
      const code = field(error, "code");
      const message = field(error, "message");
      throw new WalletRefusal(typeof code === "number" ? code : -32603, typeof message === "string" ? message : "The node refused the request");
    }
    return field(answer, "result");
  };
}

const quantity = (v: unknown): bigint => {
  if (typeof v !== "string" && typeof v !== "number") throw new WalletRefusal(-32603, "The node's answer was not a quantity");
  return BigInt(v);
};

/** Fills what an eth_sendTransaction left out, from the chain (through the frame API). */
export async function fillTransaction(rpc: Rpc, chainId: bigint, request: TransactionRequest): Promise<Eip1559Transaction> {
  const data = request.data ?? request.input ?? "0x";
  const to = request.to ?? null;
  const [nonce, gas, priority, block] = await Promise.all([
    request.nonce ?? rpc("eth_getTransactionCount", [request.from, "pending"]),
    request.gas ?? rpc("eth_estimateGas", [{ from: request.from, to, value: request.value ?? "0x0", data }]),
    request.maxPriorityFeePerGas ?? rpc("eth_maxPriorityFeePerGas", []),
    request.maxFeePerGas ? null : rpc("eth_getBlockByNumber", ["latest", false]),
  ]);
  const maxPriorityFeePerGas = quantity(priority);
  // Room for the base fee to double before the transaction stops being includable.
  const baseFee = block ? quantity(field(block, "baseFeePerGas") ?? "0x0") : 0n;
  const maxFeePerGas = request.maxFeePerGas ? quantity(request.maxFeePerGas) : 2n * baseFee + maxPriorityFeePerGas;
  return { chainId, nonce: quantity(nonce), maxPriorityFeePerGas, maxFeePerGas, gas: quantity(gas), to, value: quantity(request.value ?? "0x0"), data };
}

function transactionRequest(value: unknown, from: string): TransactionRequest {
  const out: TransactionRequest = { from };
  for (const key of ["to", "value", "data", "input", "gas", "nonce", "maxFeePerGas", "maxPriorityFeePerGas"] as const) {
    const v = field(value, key);
    if (typeof v === "string") out[key] = v;
  }
  const claimed = field(value, "from");
  if (typeof claimed === "string" && !sameAddress(claimed, from)) throw new WalletRefusal(4100, "The account is not authorized");
  return out;
}

function base64ToBytes(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

/** Signs a Solana wire transaction (base64) with the wallet's key in its signer slot. */
function signSolanaTransaction(seed: Uint8Array, address: string, wire: string): string {
  const parsed = parseTransaction(base64ToBytes(wire));
  const slot = parsed.signers.indexOf(address);
  if (slot < 0) throw new WalletRefusal(4100, "The transaction is not for this account");
  const key = deriveSolanaSeed(seed);
  try {
    const signatures = parsed.signatures.map((s, i) => (i === slot ? ed25519.sign(parsed.message, key) : s));
    return bytesToBase64(serializeTransaction(signatures, parsed.message));
  } finally {
    wipe(key);
  }
}

function checkAddress(given: unknown, ours: string) {
  if (typeof given === "string" && !sameAddress(given, ours)) throw new WalletRefusal(4100, "The account is not authorized");
}

/** Signs what the request asks, with the rebuilt seed. */
async function sign(ctx: FrameContext, login: FrameLogin, request: RpcRequest): Promise<unknown> {
  const { kind, namespace } = request;
  const solana = namespace === "solana";
  return withSeed(ctx, login, async (seed) => {
    if (kind.type === "signMessage") {
      checkAddress(kind.address, solana ? login.solanaAddress : login.eip155Address);
      const message = new TextEncoder().encode(kind.message);
      if (solana) {
        const key = deriveSolanaSeed(seed);
        try {
          return base58.encode(ed25519.sign(message, key));
        } finally {
          wipe(key);
        }
      }
      const key = deriveEvmKey(seed);
      try {
        return personalSign(key, message);
      } finally {
        wipe(key);
      }
    }
    if (kind.type === "signTransaction") {
      checkAddress(kind.address, login.solanaAddress);
      return { signedTransaction: signSolanaTransaction(seed, login.solanaAddress, kind.transaction) };
    }
    if (kind.type !== "rpc") throw new WalletRefusal(4200, "Unsupported request");
    const { method, params } = kind;
    if (SOLANA_SIGNING.has(method)) {
      const p = Array.isArray(params) ? params[0] : params;
      const transaction = field(p, "transaction");
      if (typeof transaction !== "string") throw new WalletRefusal(-32602, "The request has no transaction");
      checkAddress(field(p, "address") ?? field(p, "account"), login.solanaAddress);
      // The server sends a signed Solana transaction itself (decision 0911).
      return { signedTransaction: signSolanaTransaction(seed, login.solanaAddress, transaction) };
    }
    const key = deriveEvmKey(seed);
    try {
      if (method === "personal_sign") {
        const message = first(params);
        if (typeof message !== "string") throw new WalletRefusal(-32602, "personal_sign needs a message");
        checkAddress(first(params, 1), login.eip155Address);
        return personalSign(key, messageBytes(message));
      }
      if (method === "eth_signTypedData_v4") {
        checkAddress(first(params), login.eip155Address);
        const typed = parseTyped(first(params, 1));
        if (!typed) throw new WalletRefusal(-32602, "eth_signTypedData_v4 needs typed data");
        return signDigest(key, typedDataDigest(typed));
      }
      if (method === "eth_sendTransaction") {
        const rpc = rpcThrough(ctx, request.chainId);
        const tx = await fillTransaction(rpc, BigInt(hexChainId(request.chainId)), transactionRequest(first(params), login.eip155Address));
        const { raw } = signTransaction(key, tx);
        return await rpc("eth_sendRawTransaction", [raw]);
      }
      throw new WalletRefusal(4200, `The embedded wallet does not support ${method}`);
    } finally {
      wipe(key);
    }
  });
}

function failure(error: unknown): WalletOutcome {
  if (error instanceof WalletRefusal) return { status: "error", code: error.code, message: error.message };
  return { status: "error", code: -32603, message: error instanceof Error ? error.message : "The embedded wallet failed" };
}

/** Answers one of the session's wallet requests; never throws (a failure is an outcome). */
export async function performRequest(ctx: FrameContext | null, login: FrameLogin | null, request: RpcRequest, approve: Approve): Promise<WalletOutcome> {
  if (!ctx || !login) return { status: "error", code: 4100, message: "Not connected to email or social" };
  const { kind, namespace } = request;
  if (kind.type === "connect" || kind.type === "sync") {
    if (namespace === "solana") return { status: "ok", result: { accounts: [login.solanaAddress], chains: [request.chainId] } };
    if (namespace === "eip155") return { status: "ok", result: { accounts: [login.eip155Address], chainId: hexChainId(request.chainId) } };
    return { status: "error", code: 4200, message: `The embedded wallet has no ${namespace} account` };
  }
  if (!isSigningRequest(request)) return { status: "error", code: 4200, message: kind.type === "rpc" ? `The embedded wallet does not support ${kind.method}` : "Unsupported request" };
  try {
    if (!(await approve(approvalText(request)))) return USER_REJECTED;
    return { status: "ok", result: await sign(ctx, login, request) };
  } catch (e) {
    return failure(e);
  }
}

// The frame's wallet: finishing a login (recovering or creating the key), and answering the
// session's wallet requests for connector "auth". The key exists only inside `withSeed`, rebuilt
// from the device share and a freshly released server share for one answer and wiped after it.
// Everything the page around it provides (the API, the IndexedDB store, the HPKE key pair, the
// approval page) comes in as `FrameContext`, so this module is tested without a browser.

import { ed25519 } from "@noble/curves/ed25519";
import { base58, base64urlnopad } from "@scure/base";
import { errorMessage } from "../core/effects/errorMessage";
import type { WalletOutcome } from "../generated/WalletOutcome";
import { signDigest, personalSign } from "../wallet/devWallet";
import { parseTransaction, serializeTransaction, type ParsedTransaction } from "../wallet/solana/transaction";
import { signTransaction } from "../wallet/transaction";
import { ApiError, readLoginResult, type LoginResult, type Post } from "./api";
import type { DeviceStore } from "./deviceStore";
import { isSealed, openShare } from "./hpke";
import { addressesOf, combineShares, deriveEvmKey, deriveSolanaSeed, newSeed, sameAddress, signBinding, splitSeed, wipe } from "./keys";
import { evmChainId, fillTransaction, isRecord, parseSendRequest, prepareTypedData, transactionRows, type Rpc } from "./evm";
import { isSigningRequest, type HostRequests } from "./protocol";
import { invalid, WalletRefusal } from "./refusal";
import { solanaTransactionRows } from "./solana";
import { escapeHidden, readableText } from "./text";


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

// ---- login ------------------------------------------------------------------------------------

/** The answer to a login completing after a SIGN_OUT. */
export const LOGIN_CANCELLED = "Login cancelled";

/** The frame's login. A SIGN_OUT wins over a verification still in flight (the visitor closed the
 * modal, the session cancelled the login): when that verification completes, nothing is kept (no
 * login, no share stored, no wallet created) and it fails with "Login cancelled". */
export function createLoginSlot(ctx: FrameContext) {
  let login: FrameLogin | null = null;
  // Bumped by every sign-out: a verification started before it is cancelled.
  let generation = 0;
  return {
    current: () => login,
    /** Verifies (`verify` asks the frame API: the code, the social result, ...) and completes the
     * login with its answer, unless a sign-out came meanwhile. */
    async verify(verify: () => Promise<unknown>): Promise<FrameLogin> {
      const mine = generation;
      const live = () => {
        if (mine !== generation) throw new Error(LOGIN_CANCELLED);
      };
      const answer = await verify();
      live();
      const done = await completeLogin(ctx, answer, live);
      live();
      return (login = done);
    },
    signOut() {
      generation++;
      login = null;
    },
  };
}

/** After a verified login: recovers the wallet (device or recovery share + server share) or, for a
 * user without one, creates it. Answers the wallet's addresses. `live` throws once the login is
 * cancelled: checked before anything is stored or created. */
export async function completeLogin(ctx: FrameContext, answer: unknown, live: () => void = () => undefined): Promise<FrameLogin> {
  const login: LoginResult = readLoginResult(answer);
  if (!login.wallet) return createWallet(ctx, login.userId, live);
  const { walletId, eip155Address, solanaAddress, serverShare, recoveryShare } = login.wallet;
  const device = await ctx.store.get(walletId);
  const other = device ?? (recoveryShare ? await openShare(ctx.keyPair, recoveryShare, ctx.frameId) : null);
  if (!other) throw new Error("This device has no share of the wallet and the server sent no recovery share");
  const server = await openShare(ctx.keyPair, serverShare, ctx.frameId);
  const seed = await combineShares(other, server);
  try {
    if (!sameAddress(addressesOf(seed).eip155Address, eip155Address)) throw new Error("The recovered key does not match the wallet's address");
    // A new device keeps the recovery share as its own from now on.
    if (!device) {
      live();
      await ctx.store.put(walletId, other);
    }
    return { userId: login.userId, walletId, eip155Address, solanaAddress };
  } finally {
    wipe(seed, server, other);
  }
}

async function createWallet(ctx: FrameContext, userId: string, live: () => void): Promise<FrameLogin> {
  const seed = newSeed();
  const shares = await splitSeed(seed);
  try {
    const addresses = addressesOf(seed);
    const signatures = signBinding(seed, ctx.frameId, userId);
    live();
    // Once bound, the wallet is this device's (the service counts the device share as here): the
    // share is kept even if a sign-out comes meanwhile (the login itself is then not kept).
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
//
// A request is read ONCE into what will be signed (`prepare`): the approval page is drawn from that,
// and Approve signs exactly that, with no second reading of the host's params in between. A request
// that cannot be read unambiguously is refused before the visitor is asked.

/** The Solana methods that sign one transaction (`{ transaction, address? }`). The others of the
 * signing list (signMessage, signAllTransactions as rpc) are answered 4200. */
const SOLANA_TRANSACTION_METHODS = new Set(["solana:signTransaction", "solana:signAndSendTransaction", "solana_signTransaction", "solana_signAndSendTransaction"]);

const first = (params: unknown, i = 0): unknown => (Array.isArray(params) ? params[i] : undefined);
const field = (value: unknown, key: string): unknown => (isRecord(value) && Object.hasOwn(value, key) ? value[key] : undefined);

/** A personal_sign parameter's bytes: hex when it is 0x-hex, else its UTF-8. */
export function messageBytes(message: string): Uint8Array {
  if (/^0x([0-9a-fA-F]{2})*$/.test(message)) return Uint8Array.from(message.slice(2).match(/../g) ?? [], (h) => parseInt(h, 16));
  return new TextEncoder().encode(message);
}

/** The bytes as text when they are UTF-8 without hidden characters (controls, bidirectional marks,
 * line separators, ...: text.ts), which could make the text read as something else; else as hex. */
function readable(bytes: Uint8Array): string {
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    if (readableText(text)) return text;
  } catch {
    // not UTF-8: shown as hex below
  }
  return "0x" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

const hexChainId = (caip2: string) => {
  const reference = caip2.split(":")[1] ?? "";
  return /^[0-9]+$/.test(reference) ? "0x" + BigInt(reference).toString(16) : reference;
};

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

function base64ToBytes(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

/** A Solana wire transaction (base64) this wallet must sign, read once: what is shown and signed. */
function readSolanaTransaction(wire: string, address: string): ParsedTransaction {
  let parsed: ParsedTransaction;
  try {
    parsed = parseTransaction(base64ToBytes(wire));
  } catch (e) {
    throw invalid(`The transaction could not be read${e instanceof Error ? `: ${e.message}` : ""}`);
  }
  if (!parsed.signers.includes(address)) throw new WalletRefusal(4100, "The transaction is not for this account");
  return parsed;
}

/** Signs the parsed Solana transaction with the wallet's key in its signer slot. */
function signSolanaTransaction(seed: Uint8Array, address: string, parsed: ParsedTransaction): string {
  const slot = parsed.signers.indexOf(address);
  const key = deriveSolanaSeed(seed);
  try {
    const signatures = parsed.signatures.map((s, i) => (i === slot ? ed25519.sign(parsed.message, key) : s));
    return bytesToBase64(serializeTransaction(signatures, parsed.message));
  } finally {
    wipe(key);
  }
}

function checkAddress(given: unknown, ours: string) {
  if (given === undefined) return;
  if (typeof given !== "string" || !sameAddress(given, ours)) throw new WalletRefusal(4100, "The account is not authorized");
}

function withEvmKey<T>(seed: Uint8Array, use: (key: Uint8Array) => T): T {
  const key = deriveEvmKey(seed);
  try {
    return use(key);
  } finally {
    wipe(key);
  }
}

function withSolanaKey<T>(seed: Uint8Array, use: (key: Uint8Array) => T): T {
  const key = deriveSolanaSeed(seed);
  try {
    return use(key);
  } finally {
    wipe(key);
  }
}

/** A request read into what will be signed: the approval page's text, the signature (with the
 * rebuilt seed, after Approve) and what follows it (sending a signed EVM transaction). */
export interface Prepared {
  text: ApprovalText;
  sign: (seed: Uint8Array) => unknown;
  after?: (signed: unknown) => Promise<unknown>;
}

/** Reads a signing request into what will be signed, or refuses it (a `WalletRefusal`). For an
 * eth_sendTransaction it fills what the host left out from the chain first, so the page shows the
 * whole transaction. */
export async function prepare(ctx: FrameContext, login: FrameLogin, request: RpcRequest): Promise<Prepared> {
  const { kind, namespace, chainId } = request;
  // The request's own words (not checked against anything for a message or a Solana transaction).
  const network: [string, string] = ["Network", escapeHidden(chainId)];
  if (kind.type === "signMessage") {
    const solana = namespace === "solana";
    checkAddress(kind.address, solana ? login.solanaAddress : login.eip155Address);
    const message = new TextEncoder().encode(kind.message);
    return {
      text: { title: "Sign a message", rows: [["Message", readable(message)], network] },
      sign: (seed) => (solana ? withSolanaKey(seed, (key) => base58.encode(ed25519.sign(message, key))) : withEvmKey(seed, (key) => personalSign(key, message))),
    };
  }
  if (kind.type === "signTransaction") {
    checkAddress(kind.address, login.solanaAddress);
    const parsed = readSolanaTransaction(kind.transaction, login.solanaAddress);
    return {
      text: { title: "Sign a transaction", rows: [["Account", kind.address], ...solanaTransactionRows(parsed, login.solanaAddress), network] },
      sign: (seed) => ({ signedTransaction: signSolanaTransaction(seed, login.solanaAddress, parsed) }),
    };
  }
  if (kind.type !== "rpc") throw new WalletRefusal(4200, "Unsupported request");
  const { method, params } = kind;
  if (SOLANA_TRANSACTION_METHODS.has(method)) {
    const p = Array.isArray(params) ? params[0] : params;
    const transaction = field(p, "transaction");
    if (typeof transaction !== "string") throw invalid("The request has no transaction");
    checkAddress(field(p, "address") ?? field(p, "account"), login.solanaAddress);
    const parsed = readSolanaTransaction(transaction, login.solanaAddress);
    return {
      text: { title: "Sign a transaction", rows: [["Method", method], ...solanaTransactionRows(parsed, login.solanaAddress), network] },
      // The server sends a signed Solana transaction itself (decision 0911).
      sign: (seed) => ({ signedTransaction: signSolanaTransaction(seed, login.solanaAddress, parsed) }),
    };
  }
  if (method === "personal_sign") {
    const message = first(params);
    if (typeof message !== "string") throw invalid("personal_sign needs a message");
    checkAddress(first(params, 1), login.eip155Address);
    const bytes = messageBytes(message);
    return { text: { title: "Sign a message", rows: [["Message", readable(bytes)], network] }, sign: (seed) => withEvmKey(seed, (key) => personalSign(key, bytes)) };
  }
  if (method === "eth_signTypedData_v4") {
    checkAddress(first(params), login.eip155Address);
    const { digest, rows } = prepareTypedData(first(params, 1), chainId, evmChainId(chainId));
    return { text: { title: "Sign typed data", rows }, sign: (seed) => withEvmKey(seed, (key) => signDigest(key, digest)) };
  }
  if (method === "eth_sendTransaction") {
    const chain = evmChainId(chainId);
    const sendRequest = parseSendRequest(first(params), login.eip155Address, chain);
    const rpc = rpcThrough(ctx, chainId);
    const tx = await fillTransaction(rpc, chain, login.eip155Address, sendRequest);
    return {
      text: { title: "Send a transaction", rows: transactionRows(tx, chainId) },
      sign: (seed) => withEvmKey(seed, (key) => signTransaction(key, tx).raw),
      after: (raw) => rpc("eth_sendRawTransaction", [raw]),
    };
  }
  throw new WalletRefusal(4200, `The embedded wallet does not support ${method}`);
}

function failure(error: unknown): WalletOutcome {
  if (error instanceof WalletRefusal) return { status: "error", code: error.code, message: error.message };
  return { status: "error", code: -32603, message: errorMessage(error, "The embedded wallet failed") };
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
    const prepared = await prepare(ctx, login, request);
    if (!(await approve(prepared.text))) return USER_REJECTED;
    const signed = await withSeed(ctx, login, prepared.sign);
    return { status: "ok", result: prepared.after ? await prepared.after(signed) : signed };
  } catch (e) {
    return failure(e);
  }
}

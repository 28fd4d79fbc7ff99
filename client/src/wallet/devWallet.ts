// A development wallet: a real EIP-1193 provider holding a secp256k1 key that really signs
// (EIP-191 `personal_sign`, EIP-712 `eth_signTypedData_v4`, and `eth_sendTransaction`: an EIP-1559
// transaction signed here and forwarded to the current chain's JSON-RPC node). It knows several
// chains (chain id → node URL) and switches between them as a browser wallet does
// (`wallet_switchEthereumChain`, EIP-3326, answering 4902 for a chain it does not know;
// `wallet_addEthereumChain`, EIP-3085). It announces itself through EIP-6963 and can be told to
// reject every request with 4001, for tests and for trying the flows without a browser wallet.

import { secp256k1 } from "@noble/curves/secp256k1";
import { keccak_256 } from "@noble/hashes/sha3";
import { bytesToHex, hexToBytes, utf8ToBytes } from "@noble/hashes/utils";
import { typedDataDigest, type TypedData } from "./eip712";
import { fillTransaction, rpcCall, signTransaction, type TransactionRequest } from "./transaction";

export const DEV_WALLET_RDNS = "dev.vestibule.wallet";

export interface ProviderRpcError extends Error {
  code: number;
}

function rpcError(code: number, message: string): ProviderRpcError {
  return Object.assign(new Error(message), { code });
}

export function checksumAddress(hex20: string): string {
  const lower = hex20.toLowerCase().replace(/^0x/, "");
  const hash = bytesToHex(keccak_256(utf8ToBytes(lower)));
  return "0x" + Array.from(lower, (c, i) => (parseInt(hash[i], 16) >= 8 ? c.toUpperCase() : c)).join("");
}

export function addressOf(privateKey: Uint8Array): string {
  const publicKey = secp256k1.getPublicKey(privateKey, false).slice(1);
  return checksumAddress(bytesToHex(keccak_256(publicKey).slice(-20)));
}

/** EIP-191 version 0x45 hash of a message. */
export function eip191Hash(message: Uint8Array): Uint8Array {
  const prefix = utf8ToBytes(`\x19Ethereum Signed Message:\n${message.length}`);
  const data = new Uint8Array(prefix.length + message.length);
  data.set(prefix);
  data.set(message, prefix.length);
  return keccak_256(data);
}

/** A 65-byte `r ‖ s ‖ v` signature (v = 27 + recovery) of a 32-byte digest. */
export function signDigest(privateKey: Uint8Array, digest: Uint8Array): string {
  const sig = secp256k1.sign(digest, privateKey);
  return "0x" + bytesToHex(sig.toCompactRawBytes()) + (27 + sig.recovery).toString(16).padStart(2, "0");
}

export function personalSign(privateKey: Uint8Array, message: Uint8Array): string {
  return signDigest(privateKey, eip191Hash(message));
}

/** The address that signed a 32-byte digest. */
export function recoverDigest(digest: Uint8Array, signature: string): string {
  const bytes = hexToBytes(signature.replace(/^0x/, ""));
  const sig = secp256k1.Signature.fromCompact(bytes.slice(0, 64)).addRecoveryBit(bytes[64] - 27);
  return checksumAddress(bytesToHex(keccak_256(sig.recoverPublicKey(digest).toRawBytes(false).slice(1)).slice(-20)));
}

/** The signer's address recovered from a `personal_sign` signature. */
export function recoverPersonalSign(message: Uint8Array, signature: string): string {
  const bytes = hexToBytes(signature.replace(/^0x/, ""));
  const sig = secp256k1.Signature.fromCompact(bytes.slice(0, 64)).addRecoveryBit(bytes[64] - 27);
  const point = sig.recoverPublicKey(eip191Hash(message));
  return checksumAddress(bytesToHex(keccak_256(point.toRawBytes(false).slice(1)).slice(-20)));
}

type Listener = (...args: unknown[]) => void;

/** Methods a real wallet asks the visitor about. */
const PROMPTING = new Set(["eth_requestAccounts", "personal_sign", "eth_signTypedData_v4", "eth_sendTransaction", "wallet_switchEthereumChain", "wallet_addEthereumChain"]);
/** Methods answered by the node as they are (EIP-1474 reads). */
const READ_ONLY = new Set(["eth_blockNumber", "eth_getBalance", "eth_getTransactionCount", "eth_getTransactionByHash", "eth_getTransactionReceipt", "eth_call", "eth_estimateGas", "eth_gasPrice", "eth_maxPriorityFeePerGas", "eth_getBlockByNumber", "eth_getCode"]);

/** The chains a dev wallet knows: chain id (decimal) → the JSON-RPC node of that chain. */
export type DevWalletChains = Record<string | number, string>;

export interface DevWalletOptions {
  chains?: DevWalletChains;
  /** The chain it starts on; default: the first of `chains`, or 1 without any. */
  chainId?: number | bigint;
}

/** EIP-3085's parameter (the fields this wallet reads). */
interface AddEthereumChainParameter {
  chainId?: unknown;
  chainName?: unknown;
  rpcUrls?: unknown;
  nativeCurrency?: unknown;
  blockExplorerUrls?: unknown;
  iconUrls?: unknown;
}

const hexChainId = (id: bigint) => `0x${id.toString(16)}`;

/** A chain id as EIP-3085 and EIP-3326 require it: 0x-prefixed hex, no leading zeros, not 0. */
function parseChainId(value: unknown): bigint {
  if (typeof value !== "string" || !/^0x[1-9a-fA-F][0-9a-fA-F]*$/.test(value)) {
    throw rpcError(-32602, `Invalid chainId ${JSON.stringify(value)}: a 0x-prefixed hexadecimal string without leading zeros`);
  }
  // MetaMask's bound too: chain ids beyond it cannot round-trip through JavaScript numbers.
  const id = BigInt(value);
  if (id > 4503599627370476n) throw rpcError(-32602, `Invalid chainId ${value}: larger than 4503599627370476`);
  return id;
}

function isHttpUrl(value: unknown): value is string {
  if (typeof value !== "string") return false;
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

function urlList(value: unknown, field: string, required: boolean): string[] {
  // null is "none" too: the session (and MetaMask's own checks) treat an empty optional list so.
  if ((value === undefined || value === null) && !required) return [];
  if (!Array.isArray(value) || (required && value.length === 0) || !value.every(isHttpUrl)) {
    throw rpcError(-32602, `Invalid ${field}: ${required ? "a non-empty " : "an "}array of http(s) URLs`);
  }
  return value;
}

export class DevWallet {
  readonly address: string;
  rejectAll = false;
  /** For tests: keep connect prompts open (as a visitor who has not answered yet) until released. */
  holdPrompts = false;
  private held: Array<() => void> = [];
  release() {
    for (const r of this.held.splice(0)) r();
  }
  /** For tests: return signatures with one byte changed (the server must refuse them). */
  tamperSignatures = false;
  /** Requests that would show a prompt in a real wallet (connect, sign, send, switch, add), on this page. */
  prompts = 0;
  private connected = false;
  private listeners = new Map<string, Set<Listener>>();
  /** Known chains and their nodes; a chain may have no node (then it cannot send or read). */
  private readonly nodes = new Map<bigint, string | undefined>();
  private current: bigint;

  /**
   * `network`: the chains it knows with their nodes and the one it starts on, or, as before chains
   * existed, one node URL for chain 1. Without it the wallet is on chain 1 with no node (it signs
   * but cannot send).
   */
  constructor(
    private readonly privateKey: Uint8Array,
    network?: string | DevWalletOptions,
  ) {
    this.address = addressOf(privateKey);
    const options: DevWalletOptions = typeof network === "string" ? { chains: { 1: network } } : (network ?? {});
    for (const [id, url] of Object.entries(options.chains ?? {})) this.nodes.set(BigInt(id), url);
    const first = this.nodes.keys().next();
    this.current = options.chainId !== undefined ? BigInt(options.chainId) : first.done ? 1n : first.value;
    if (!this.nodes.has(this.current)) this.nodes.set(this.current, undefined);
  }

  static random(network?: string | DevWalletOptions): DevWallet {
    return new DevWallet(secp256k1.utils.randomPrivateKey(), network);
  }

  /** The current chain, as `eth_chainId` answers it. */
  get chainId(): string {
    return hexChainId(this.current);
  }

  /** The current chain's JSON-RPC node. */
  get rpcUrl(): string | undefined {
    return this.nodes.get(this.current);
  }

  /** The chains this wallet knows (decimal chain ids), in the order it learned them. */
  get chains(): number[] {
    return [...this.nodes.keys()].map(Number);
  }

  on(event: string, listener: Listener) {
    if (!this.listeners.has(event)) this.listeners.set(event, new Set());
    this.listeners.get(event)!.add(listener);
  }

  removeListener(event: string, listener: Listener) {
    this.listeners.get(event)?.delete(listener);
  }

  emit(event: string, ...args: unknown[]) {
    for (const l of this.listeners.get(event) ?? []) l(...args);
  }

  async request({ method, params }: { method: string; params?: unknown[] }): Promise<unknown> {
    const prompts = PROMPTING.has(method);
    if (prompts) this.prompts++;
    if (prompts && this.holdPrompts) await new Promise<void>((resolve) => this.held.push(resolve));
    if (prompts && this.rejectAll) throw rpcError(4001, "User rejected the request.");
    switch (method) {
      case "eth_requestAccounts":
        this.connected = true;
        if (typeof localStorage !== "undefined") localStorage.setItem("vestibule:devWallet:granted", this.address);
        return [this.address];
      case "eth_accounts":
        // A real wallet remembers the sites it granted across reloads; so does this one.
        const granted = typeof localStorage !== "undefined" && localStorage.getItem("vestibule:devWallet:granted") === this.address;
        return this.connected || granted ? [this.address] : [];
      case "eth_chainId":
        return this.chainId;
      case "wallet_switchEthereumChain":
        return this.switchChain(params);
      case "wallet_addEthereumChain":
        return this.addChain(params);
      case "personal_sign": {
        const [data, address] = (params ?? []) as [string, string];
        if (address?.toLowerCase() !== this.address.toLowerCase()) throw rpcError(4100, "Unknown account");
        const bytes = data.startsWith("0x") ? hexToBytes(data.slice(2)) : utf8ToBytes(data);
        const signature = personalSign(this.privateKey, bytes);
        // Flipping a bit of `s` keeps the signature well-formed but makes it someone else's.
        return this.tamperSignatures ? signature.slice(0, 100) + (signature[100] === "0" ? "1" : "0") + signature.slice(101) : signature;
      }
      case "eth_signTypedData_v4": {
        const [address, json] = (params ?? []) as [string, string | TypedData];
        if (address?.toLowerCase() !== this.address.toLowerCase()) throw rpcError(4100, "Unknown account");
        const data = typeof json === "string" ? (JSON.parse(json) as TypedData) : json;
        return signDigest(this.privateKey, typedDataDigest(data));
      }
      case "eth_sendTransaction": {
        const [tx] = (params ?? []) as [TransactionRequest];
        if (tx?.from?.toLowerCase() !== this.address.toLowerCase()) throw rpcError(4100, "Unknown account");
        const node = this.node();
        // A wallet signs for the chain it is on; a node on another chain would refuse (or replay) it.
        const nodeChain = BigInt((await rpcCall(node, "eth_chainId")) as string);
        if (nodeChain !== this.current) throw rpcError(4901, `The dev wallet is on chain ${BigInt(this.chainId)} but its node is on ${nodeChain}`);
        if (tx.chainId && BigInt(tx.chainId) !== nodeChain) throw rpcError(-32602, `chainId ${tx.chainId} is not the wallet's chain`);
        const { raw } = signTransaction(this.privateKey, await fillTransaction(node, nodeChain, tx));
        return rpcCall(node, "eth_sendRawTransaction", [raw]);
      }
      default:
        if (READ_ONLY.has(method)) return rpcCall(this.node(), method, params ?? []);
        throw rpcError(4200, `The dev wallet does not support ${method}`);
    }
  }

  private node(): string {
    const url = this.rpcUrl;
    if (!url) throw rpcError(4200, `The dev wallet has no JSON-RPC node for chain ${this.current} (give it one in its chains)`);
    return url;
  }

  /** EIP-3326: to a known chain (EIP-1193 `chainChanged` when it changes), 4902 for another. */
  private switchChain(params: unknown[] | undefined): null {
    const [target] = (params ?? []) as [{ chainId?: unknown } | undefined];
    const id = parseChainId(target?.chainId);
    if (!this.nodes.has(id)) {
      throw rpcError(4902, `Unrecognized chain ID ${hexChainId(id)}. Try adding the chain using wallet_addEthereumChain first.`);
    }
    if (id !== this.current) {
      this.current = id;
      this.emit("chainChanged", hexChainId(id));
    }
    return null;
  }

  /**
   * EIP-3085: checks the parameter, then asks the first RPC URL for its chain id (as the EIP asks
   * wallets to) so a wrong URL is refused here, not at the first send. Adding does not switch: the
   * dapp asks for that next (EIP-3085 leaves it to the wallet; this one keeps the two steps apart
   * so that both are seen). A chain it knows already keeps its node.
   */
  private async addChain(params: unknown[] | undefined): Promise<null> {
    const [chain] = (params ?? []) as [AddEthereumChainParameter | undefined];
    if (chain === null || typeof chain !== "object") throw rpcError(-32602, "Invalid params: expected [AddEthereumChainParameter]");
    const id = parseChainId(chain.chainId);
    const rpcUrls = urlList(chain.rpcUrls, "rpcUrls", true);
    urlList(chain.blockExplorerUrls, "blockExplorerUrls", false);
    urlList(chain.iconUrls, "iconUrls", false);
    if (chain.chainName !== undefined && (typeof chain.chainName !== "string" || chain.chainName.trim() === "")) {
      throw rpcError(-32602, "Invalid chainName: a non-empty string");
    }
    if (chain.nativeCurrency !== undefined) {
      const currency = chain.nativeCurrency as { name?: unknown; symbol?: unknown; decimals?: unknown } | null;
      const valid =
        currency !== null &&
        typeof currency === "object" &&
        typeof currency.name === "string" &&
        currency.name !== "" &&
        typeof currency.symbol === "string" &&
        currency.symbol.length >= 2 &&
        currency.symbol.length <= 6 &&
        Number.isInteger(currency.decimals) &&
        (currency.decimals as number) >= 0;
      if (!valid) throw rpcError(-32602, "Invalid nativeCurrency: { name, symbol (2 to 6 characters), decimals (a whole number) }");
    }
    if (this.nodes.get(id)) return null;
    let served: bigint;
    try {
      served = BigInt((await rpcCall(rpcUrls[0], "eth_chainId")) as string);
    } catch (e) {
      throw rpcError(-32602, `Could not read the chain id from ${rpcUrls[0]}: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (served !== id) throw rpcError(-32602, `${rpcUrls[0]} serves chain ${served}, not ${id}`);
    this.nodes.set(id, rpcUrls[0]);
    return null;
  }

  /** Announces this wallet to the page (EIP-6963), now and on every request. */
  announce(target: EventTarget = window) {
    const info = { uuid: "6f0c4a58-6c2e-4f0e-9d6a-0d5e1c3b7a11", name: "Dev Wallet", icon: DEV_ICON, rdns: DEV_WALLET_RDNS };
    const detail = Object.freeze({ info, provider: this });
    const announce = () => target.dispatchEvent(new CustomEvent("eip6963:announceProvider", { detail }));
    target.addEventListener("eip6963:requestProvider", announce);
    announce();
  }
}

const DEV_ICON =
  "data:image/svg+xml;base64," +
  btoa('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="8" fill="#3b6cff"/><text x="16" y="21" font-size="14" text-anchor="middle" fill="#fff" font-family="sans-serif">DW</text></svg>');

// A development wallet: a real EIP-1193 provider holding a secp256k1 key that really signs
// (EIP-191 `personal_sign`, EIP-712 `eth_signTypedData_v4`, and `eth_sendTransaction`: an EIP-1559
// transaction signed here and forwarded to the JSON-RPC node it was given). It announces itself
// through EIP-6963 and can be told to reject every request with 4001, for tests and for trying the
// flows without a browser wallet.

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
const PROMPTING = new Set(["eth_requestAccounts", "personal_sign", "eth_signTypedData_v4", "eth_sendTransaction"]);
/** Methods answered by the node as they are (EIP-1474 reads). */
const READ_ONLY = new Set(["eth_blockNumber", "eth_getBalance", "eth_getTransactionCount", "eth_getTransactionByHash", "eth_getTransactionReceipt", "eth_call", "eth_estimateGas", "eth_gasPrice", "eth_maxPriorityFeePerGas", "eth_getBlockByNumber", "eth_getCode"]);

export class DevWallet {
  readonly address: string;
  chainId = "0x1";
  rejectAll = false;
  /** For tests: keep connect prompts open (as a visitor who has not answered yet) until released. */
  holdPrompts = false;
  private held: Array<() => void> = [];
  release() {
    for (const r of this.held.splice(0)) r();
  }
  /** For tests: return signatures with one byte changed (the server must refuse them). */
  tamperSignatures = false;
  /** Requests that would show a prompt in a real wallet (connect, sign), on this page. */
  prompts = 0;
  private connected = false;
  private listeners = new Map<string, Set<Listener>>();

  /** `rpcUrl`: the JSON-RPC node transactions go to, and read-only calls are answered by. */
  constructor(
    private readonly privateKey: Uint8Array,
    readonly rpcUrl?: string,
  ) {
    this.address = addressOf(privateKey);
  }

  static random(rpcUrl?: string): DevWallet {
    return new DevWallet(secp256k1.utils.randomPrivateKey(), rpcUrl);
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
        if (nodeChain !== BigInt(this.chainId)) throw rpcError(4901, `The dev wallet is on chain ${BigInt(this.chainId)} but its node is on ${nodeChain}`);
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
    if (!this.rpcUrl) throw rpcError(4200, "The dev wallet has no JSON-RPC node to send to (give it an rpcUrl)");
    return this.rpcUrl;
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

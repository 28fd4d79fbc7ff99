// EIP-1559 (type 2) transactions for the dev wallet: fill what the caller left out from a JSON-RPC
// node, sign with the wallet's key, and send the raw transaction to that node. RLP comes from
// @ethereumjs/rlp; the envelope and the signing hash follow EIP-2718 and EIP-1559.

import { RLP } from "@ethereumjs/rlp";
import { secp256k1 } from "@noble/curves/secp256k1";
import { keccak_256 } from "@noble/hashes/sha3";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils";

/** The `eth_sendTransaction` parameter (EIP-1474), every quantity a 0x-prefixed hex string. */
export interface TransactionRequest {
  from: string;
  to?: string | null;
  value?: string;
  data?: string;
  input?: string;
  gas?: string;
  nonce?: string;
  maxFeePerGas?: string;
  maxPriorityFeePerGas?: string;
  chainId?: string;
}

/** A transaction with every field decided, ready to sign. */
export interface Eip1559Transaction {
  chainId: bigint;
  nonce: bigint;
  maxPriorityFeePerGas: bigint;
  maxFeePerGas: bigint;
  gas: bigint;
  to: string | null;
  value: bigint;
  data: string;
}

const EIP1559_TYPE = 0x02;

/** RLP's integer: big-endian, no leading zeros, zero as the empty string. */
function quantity(n: bigint): Uint8Array {
  if (n < 0n) throw new Error("a quantity cannot be negative");
  if (n === 0n) return new Uint8Array();
  const hex = n.toString(16);
  return hexToBytes(hex.length % 2 ? `0${hex}` : hex);
}

function bytes(hex: string): Uint8Array {
  const body = hex.replace(/^0x/, "");
  if (!/^([0-9a-fA-F]{2})*$/.test(body)) throw new Error(`not hex bytes: ${hex}`);
  return hexToBytes(body);
}

function fields(tx: Eip1559Transaction) {
  return [
    quantity(tx.chainId),
    quantity(tx.nonce),
    quantity(tx.maxPriorityFeePerGas),
    quantity(tx.maxFeePerGas),
    quantity(tx.gas),
    tx.to ? bytes(tx.to) : new Uint8Array(),
    quantity(tx.value),
    bytes(tx.data),
    [], // access list
  ];
}

function typed(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(payload.length + 1);
  out[0] = EIP1559_TYPE;
  out.set(payload, 1);
  return out;
}

/** The digest the sender signs: keccak256(0x02 ‖ rlp(fields without the signature)). */
export function signingHash(tx: Eip1559Transaction): Uint8Array {
  return keccak_256(typed(RLP.encode(fields(tx))));
}

/** The signed transaction as `eth_sendRawTransaction` takes it, and its hash. */
export function signTransaction(privateKey: Uint8Array, tx: Eip1559Transaction): { raw: string; hash: string } {
  const sig = secp256k1.sign(signingHash(tx), privateKey);
  const signed = typed(RLP.encode([...fields(tx), quantity(BigInt(sig.recovery)), quantity(sig.r), quantity(sig.s)]));
  return { raw: `0x${bytesToHex(signed)}`, hash: `0x${bytesToHex(keccak_256(signed))}` };
}

export interface RpcErrorShape {
  code: number;
  message: string;
}

/** One JSON-RPC call over HTTP; a node's error keeps its code. */
export async function rpcCall(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  if (!response.ok) throw Object.assign(new Error(`${url} answered HTTP ${response.status}`), { code: -32603 });
  const body = (await response.json()) as { result?: unknown; error?: RpcErrorShape };
  if (body.error) throw Object.assign(new Error(body.error.message), { code: body.error.code, data: body.error });
  return body.result;
}

const big = (hex: unknown) => BigInt(hex as string);

/** Decides every field the request left out by asking the node, the way wallets do. */
export async function fillTransaction(url: string, chainId: bigint, request: TransactionRequest): Promise<Eip1559Transaction> {
  const data = request.data ?? request.input ?? "0x";
  const to = request.to ?? null;
  const value = big(request.value ?? "0x0");
  const [nonce, gas, priority, block] = await Promise.all([
    request.nonce ?? rpcCall(url, "eth_getTransactionCount", [request.from, "pending"]),
    request.gas ?? rpcCall(url, "eth_estimateGas", [{ from: request.from, to, value: request.value ?? "0x0", data }]),
    request.maxPriorityFeePerGas ?? rpcCall(url, "eth_maxPriorityFeePerGas"),
    request.maxFeePerGas ? null : rpcCall(url, "eth_getBlockByNumber", ["latest", false]),
  ]);
  const maxPriorityFeePerGas = big(priority);
  // Room for the base fee to double before the transaction stops being includable.
  const baseFee = block ? big((block as { baseFeePerGas?: string }).baseFeePerGas ?? "0x0") : 0n;
  const maxFeePerGas = request.maxFeePerGas ? big(request.maxFeePerGas) : 2n * baseFee + maxPriorityFeePerGas;
  return { chainId, nonce: big(nonce), maxPriorityFeePerGas, maxFeePerGas, gas: big(gas), to, value, data };
}

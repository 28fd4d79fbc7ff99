// EVM requests as the frame signs them. A request from the host page is parsed ONCE, strictly, into
// the exact object that will be signed (an EIP-1559 transaction with every field decided, or an
// EIP-712 digest), and the approval page is drawn from that object, never from the raw request: so
// what the visitor approves is what is signed. Anything ambiguous is refused with a clear message
// (-32602) before the page is shown: quantities that are not canonical JSON-RPC quantities (0x and
// lowercase hex digits without leading zeros: `BigInt` would read "0X…", " 1\n", "0b1", "0o7" too),
// `data` and `input` that differ, non-string calldata, fields this wallet would not sign as asked
// (gasPrice, an access list, another transaction type or chain).

import { checksumAddress } from "../wallet/devWallet";
import { typedDataDigest, type TypedData, type TypedField } from "../wallet/eip712";
import type { Eip1559Transaction } from "../wallet/transaction";
import { sameAddress } from "./keys";
import { invalid, WalletRefusal } from "./refusal";
import { escapeHidden } from "./text";

export type Rows = Array<[string, string]>;
export type Rpc = (method: string, params: unknown[]) => Promise<unknown>;

const QUANTITY = /^0x(0|[1-9a-f][0-9a-f]*)$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const BYTES = /^0x([0-9a-fA-F]{2})*$/;
const MAX_UINT256 = (1n << 256n) - 1n;
const MAX_UINT64 = (1n << 64n) - 1n;

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype;

const shown = (raw: unknown) => {
  const text = JSON.stringify(raw) ?? String(raw);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
};

/** A JSON-RPC quantity, strictly (EIP-1474): `0x` and lowercase hex digits without leading zeros. */
export function parseQuantity(raw: unknown, name: string, max = MAX_UINT256): bigint {
  if (typeof raw !== "string" || raw.length > 66 || !QUANTITY.test(raw)) {
    throw invalid(`${name} must be a quantity: 0x and lowercase hex digits without leading zeros (got ${shown(raw)})`);
  }
  const n = BigInt(raw);
  if (n > max) throw invalid(`${name} is too large`);
  return n;
}

function parseBytes(raw: unknown, name: string): string {
  if (typeof raw !== "string" || !BYTES.test(raw)) throw invalid(`${name} must be 0x and an even number of hex digits (got ${shown(raw)})`);
  return raw.toLowerCase();
}

function parseAddress(raw: unknown, name: string): string {
  if (typeof raw !== "string" || !ADDRESS.test(raw)) throw invalid(`${name} must be an address: 0x and 40 hex digits (got ${shown(raw)})`);
  return checksumAddress(raw);
}

/** The chain id of a CAIP-2 `eip155:<decimal>` network. */
export function evmChainId(caip2: string): bigint {
  const match = /^eip155:([1-9][0-9]{0,18})$/.exec(caip2);
  if (!match) throw invalid(`${caip2} is not an EVM network`);
  return BigInt(match[1]);
}

// ---- eth_sendTransaction ----------------------------------------------------------------------

/** What the host decided of an eth_sendTransaction; the rest is filled from the chain. */
export interface SendRequest {
  to: string | null;
  value: bigint;
  data: string;
  gas?: bigint;
  nonce?: bigint;
  maxFeePerGas?: bigint;
  maxPriorityFeePerGas?: bigint;
}

const SEND_FIELDS = new Set(["from", "to", "value", "data", "input", "gas", "nonce", "maxFeePerGas", "maxPriorityFeePerGas", "chainId", "type", "accessList"]);

/** The eth_sendTransaction parameter, strictly; `from` (when given) must be the wallet's account. */
export function parseSendRequest(raw: unknown, account: string, chainId: bigint): SendRequest {
  if (!isRecord(raw)) throw invalid("eth_sendTransaction needs a transaction object");
  for (const key of Object.keys(raw)) {
    if (SEND_FIELDS.has(key)) continue;
    const hint = key === "gasPrice" ? " (it sends EIP-1559 transactions: give maxFeePerGas and maxPriorityFeePerGas)" : "";
    throw invalid(`The embedded wallet cannot send a transaction with ${shown(key)}${hint}`);
  }
  if ("from" in raw && !sameAddress(parseAddress(raw.from, "from"), account)) throw new WalletRefusal(4100, "The account is not authorized");
  if ("chainId" in raw && parseQuantity(raw.chainId, "chainId") !== chainId) {
    throw invalid(`The transaction is for chain ${parseQuantity(raw.chainId, "chainId")}, the request for chain ${chainId}`);
  }
  if ("type" in raw && raw.type !== "0x2") throw invalid(`The embedded wallet sends only EIP-1559 transactions (type "0x2"), not type ${shown(raw.type)}`);
  if ("accessList" in raw && !(Array.isArray(raw.accessList) && raw.accessList.length === 0)) throw invalid("The embedded wallet cannot sign a transaction with an access list");
  const data = "data" in raw ? parseBytes(raw.data, "data") : undefined;
  const input = "input" in raw ? parseBytes(raw.input, "input") : undefined;
  if (data !== undefined && input !== undefined && data !== input) throw invalid("data and input differ: which one would be sent is ambiguous");
  const request: SendRequest = {
    to: "to" in raw && raw.to !== null ? parseAddress(raw.to, "to") : null,
    value: "value" in raw ? parseQuantity(raw.value, "value") : 0n,
    data: data ?? input ?? "0x",
  };
  if ("gas" in raw) request.gas = parseQuantity(raw.gas, "gas", MAX_UINT64);
  if ("nonce" in raw) request.nonce = parseQuantity(raw.nonce, "nonce", MAX_UINT64 - 1n);
  if ("maxFeePerGas" in raw) request.maxFeePerGas = parseQuantity(raw.maxFeePerGas, "maxFeePerGas");
  if ("maxPriorityFeePerGas" in raw) request.maxPriorityFeePerGas = parseQuantity(raw.maxPriorityFeePerGas, "maxPriorityFeePerGas");
  if (request.maxFeePerGas !== undefined && request.maxPriorityFeePerGas !== undefined && request.maxPriorityFeePerGas > request.maxFeePerGas) {
    throw invalid("maxPriorityFeePerGas is more than maxFeePerGas");
  }
  return request;
}

/** A node's answer (through the frame API) that must be a quantity. */
function nodeQuantity(v: unknown, what: string): bigint {
  if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  if (typeof v === "string" && v.length <= 66 && QUANTITY.test(v)) return BigInt(v);
  throw new WalletRefusal(-32603, `The node's answer for ${what} was not a quantity`);
}

const hex = (n: bigint) => "0x" + n.toString(16);

/** Decides what the request left out, from the chain, the way wallets do: the whole transaction
 * is known (and shown) before the visitor is asked. */
export async function fillTransaction(rpc: Rpc, chainId: bigint, from: string, request: SendRequest): Promise<Eip1559Transaction> {
  const { to, value, data } = request;
  const [nonce, gas, priority, block] = await Promise.all([
    request.nonce ?? rpc("eth_getTransactionCount", [from, "pending"]).then((v) => nodeQuantity(v, "eth_getTransactionCount")),
    request.gas ?? rpc("eth_estimateGas", [{ from, to, value: hex(value), data }]).then((v) => nodeQuantity(v, "eth_estimateGas")),
    request.maxPriorityFeePerGas ?? rpc("eth_maxPriorityFeePerGas", []).then((v) => nodeQuantity(v, "eth_maxPriorityFeePerGas")),
    request.maxFeePerGas !== undefined ? null : rpc("eth_getBlockByNumber", ["latest", false]),
  ]);
  let maxFeePerGas: bigint;
  let maxPriorityFeePerGas = priority;
  if (request.maxFeePerGas !== undefined) {
    maxFeePerGas = request.maxFeePerGas;
    // The node's tip, when the host set only the cap, cannot be more than the cap.
    if (maxPriorityFeePerGas > maxFeePerGas) maxPriorityFeePerGas = maxFeePerGas;
  } else {
    const baseFee = isRecord(block) && block.baseFeePerGas !== undefined ? nodeQuantity(block.baseFeePerGas, "the base fee") : 0n;
    // Room for the base fee to double before the transaction stops being includable.
    maxFeePerGas = 2n * baseFee + maxPriorityFeePerGas;
  }
  return { chainId, nonce, maxPriorityFeePerGas, maxFeePerGas, gas, to, value, data };
}

/** `n` units of 10^-decimals, exactly (no rounding, trailing zeros dropped). */
export function formatUnits(n: bigint, decimals: number): string {
  const unit = 10n ** BigInt(decimals);
  const fraction = (n % unit).toString().padStart(decimals, "0").replace(/0+$/, "");
  return `${n / unit}${fraction ? "." + fraction : ""}`;
}

const eth = (wei: bigint) => `${formatUnits(wei, 18)} ETH`;
const gwei = (wei: bigint) => `${formatUnits(wei, 9)} gwei`;

/** The approval page's rows for the transaction that will be signed. */
export function transactionRows(tx: Eip1559Transaction, network: string): Rows {
  const bytes = (tx.data.length - 2) / 2;
  const maxFee = tx.gas * tx.maxFeePerGas;
  const rows: Rows = [
    ["To", tx.to ? checksumAddress(tx.to) : "New contract"],
    ["Value", eth(tx.value)],
    ["Data", bytes ? tx.data : "None"],
  ];
  if (bytes) rows.push(["Data size", `${bytes} byte${bytes === 1 ? "" : "s"}`]);
  if (bytes >= 4) rows.push(["Function selector", tx.data.slice(0, 10)]);
  rows.push(
    ["Network", network],
    ["Gas limit", tx.gas.toString()],
    ["Max fee per gas", gwei(tx.maxFeePerGas)],
    ["Max priority fee per gas", gwei(tx.maxPriorityFeePerGas)],
    ["Max network fee", eth(maxFee)],
    ["Max total", eth(tx.value + maxFee)],
    ["Nonce", tx.nonce.toString()],
  );
  return rows;
}

// ---- eth_signTypedData_v4 ---------------------------------------------------------------------
//
// The page shows the typed data as eip712.ts encodes it, read the same way (a list, then a struct of
// `types`, then the atomic types), and refuses what that encoder would read otherwise than a person
// reads it (decision 1504): a bool that is not true or false (the string "false" is hashed as true),
// a missing field (a missing string is hashed as "undefined"), a number past 2^53 (JSON rounds
// it), an integer out of its type's range, an address, bytes or bytesN that is not exactly hex of its
// size, a type it does not know. A key of the message that its type does not name is not signed
// and not shown.

const INTEGER = /^(u?)int([0-9]*)$/;
const DOMAIN_FIELDS: Record<string, string> = { name: "string", version: "string", chainId: "uint256", verifyingContract: "address", salt: "bytes32" };
const SIZED_BYTES = /^bytes([0-9]+)$/;
const INTEGER_TEXT = /^(-?[0-9]{1,78}|0x[0-9a-fA-F]{1,64})$/;

/** An integer of `type` (uintN / intN) as eip712.ts reads it, or a refusal naming `path`. */
function typedInteger(type: string, value: unknown, path: string): bigint {
  const [, unsigned, size] = INTEGER.exec(type) ?? [];
  const bits = size ? Number(size) : 256;
  if (bits % 8 !== 0 || bits < 8 || bits > 256) throw invalid(`The typed data's ${path} has the unknown type ${shown(type)}`);
  const ok = (typeof value === "number" && Number.isSafeInteger(value)) || (typeof value === "string" && INTEGER_TEXT.test(value));
  if (!ok) throw invalid(`The typed data's ${path} must be an integer: a JSON number up to 2^53, or decimal or 0x hex digits in a string (got ${shown(value)})`);
  const n = BigInt(value);
  const limit = 1n << BigInt(unsigned ? bits : bits - 1);
  if (n >= limit || n < (unsigned ? 0n : -limit)) throw invalid(`The typed data's ${path} is out of the range of ${type}`);
  return n;
}

/** A struct of `types` with its type's fields only, each as `typedValue` reads it. */
function typedStruct(types: Record<string, TypedField[]>, type: string, value: unknown, path: string): Record<string, unknown> {
  if (!isRecord(value)) throw invalid(`The typed data's ${path} must be an object (${shown(type)})`);
  // No prototype: a field named "__proto__" is a field here too (and so shown).
  const out: Record<string, unknown> = Object.create(null);
  for (const { name, type: fieldType } of types[type] ?? []) {
    if (!Object.hasOwn(value, name)) throw invalid(`The typed data's ${path}.${shown(name)} is missing`);
    out[name] = typedValue(types, fieldType, value[name], `${path}.${name}`);
  }
  return out;
}

/** A value of `type` as the page shows it (integers as decimal text, addresses checksummed, hex in
 * lowercase, structs with their type's fields only), or a refusal naming `path`. */
function typedValue(types: Record<string, TypedField[]>, type: string, value: unknown, path: string): unknown {
  const list = /^(.*)\[([0-9]*)\]$/.exec(type);
  if (list) {
    if (!Array.isArray(value) || (list[2] !== "" && value.length !== Number(list[2]))) throw invalid(`The typed data's ${path} must be a list of ${list[2] || "any number of"} ${list[1]}`);
    return value.map((item, i) => typedValue(types, list[1], item, `${path}[${i}]`));
  }
  if (types[type]) return typedStruct(types, type, value, path);
  const wrong = () => invalid(`The typed data's ${path} is not a ${shown(type)} (got ${shown(value)})`);
  if (type === "string") {
    if (typeof value !== "string") throw wrong();
    return value;
  }
  if (type === "bytes") return parseBytes(value, `The typed data's ${path}`);
  if (type === "bool") {
    if (typeof value !== "boolean") throw wrong();
    return value;
  }
  if (type === "address") {
    if (typeof value !== "string" || !ADDRESS.test(value)) throw wrong();
    return checksumAddress(value);
  }
  if (INTEGER.test(type)) return typedInteger(type, value, path).toString();
  const sized = SIZED_BYTES.exec(type);
  if (sized && Number(sized[1]) >= 1 && Number(sized[1]) <= 32) {
    if (typeof value !== "string" || value.length !== 2 + 2 * Number(sized[1]) || !BYTES.test(value)) throw wrong();
    return value.toLowerCase();
  }
  throw invalid(`The typed data's ${path} has the unknown type ${shown(type)}`);
}

/** The typed data (a JSON string or an object), hashed now: the digest is what will be signed. */
export function prepareTypedData(raw: unknown, network: string, chainId: bigint): { digest: Uint8Array; rows: Rows } {
  let value: unknown = raw;
  if (typeof raw === "string") {
    try {
      value = JSON.parse(raw);
    } catch {
      throw invalid("eth_signTypedData_v4 needs typed data (JSON)");
    }
  }
  if (!isRecord(value) || !isRecord(value.types) || typeof value.primaryType !== "string" || !isRecord(value.domain) || !isRecord(value.message)) {
    throw invalid("eth_signTypedData_v4 needs typed data: types, primaryType, domain and message");
  }
  // No prototype: a type named "toString" or "__proto__" is only ever the typed data's own.
  const types: Record<string, TypedField[]> = Object.create(null);
  for (const [name, fields] of Object.entries(value.types)) {
    if (!Array.isArray(fields)) throw invalid(`The typed data's type ${shown(name)} is not a list of fields`);
    types[name] = fields.map((f: unknown) => {
      if (!isRecord(f) || typeof f.name !== "string" || typeof f.type !== "string") throw invalid(`The typed data's type ${shown(name)} has a malformed field`);
      return { name: f.name, type: f.type };
    });
  }
  const typed: TypedData = { types, primaryType: value.primaryType, domain: value.domain, message: value.message };
  const domainType = types.EIP712Domain;
  if (!domainType) throw invalid("The typed data has no EIP712Domain type");
  if (!types[typed.primaryType]) throw invalid(`The typed data has no type ${shown(typed.primaryType)} (its primaryType)`);
  // The domain's fields have the types EIP-712 gives them (so the rows below read them as such).
  for (const { name, type } of domainType) {
    if (Object.hasOwn(DOMAIN_FIELDS, name) && DOMAIN_FIELDS[name] !== type) throw invalid(`The typed data's domain field ${name} must be of type ${DOMAIN_FIELDS[name]}, not ${shown(type)}`);
  }
  // Only the domain's fields its type names are signed: the page shows those, as they are encoded.
  const domain = typedStruct(types, "EIP712Domain", typed.domain, "domain");
  const message = typedValue(types, typed.primaryType, typed.message, "message");
  const signed = (name: string) => domainType.some((f) => f.name === name);
  const contract = signed("verifyingContract") ? String(domain.verifyingContract) : "None";
  let chain = "None";
  if (signed("chainId")) {
    const id = BigInt(String(domain.chainId));
    chain = id === chainId ? id.toString() : `${id} (not this network, ${network})`;
  }
  let digest: Uint8Array;
  try {
    digest = typedDataDigest(typed);
  } catch (e) {
    throw invalid(`The typed data cannot be hashed${e instanceof Error ? `: ${e.message}` : ""}`);
  }
  return {
    digest,
    rows: [
      ["Type", escapeHidden(typed.primaryType)],
      ["Domain", signed("name") ? escapeHidden(String(domain.name)) : "None"],
      ["Contract", contract],
      ["Chain ID", chain],
      ["Data", escapeHidden(JSON.stringify(message))],
      ["Network", network],
    ],
  };
}

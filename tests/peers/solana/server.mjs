// A local Solana JSON-RPC peer on LiteSVM: real transactions run by the real Solana runtime (with
// the SPL Token and Associated Token Account programs LiteSVM bundles), behind the JSON-RPC methods
// the dev wallet and the gateway use. LiteSVM is in-process: there are no blocks, leaders or
// votes; each processed transaction advances the slot by one, and everything processed is
// "finalized" at once. The genesis hash is a cluster's (devnet by default), so CAIP-2 ids and
// `getGenesisHash` agree with the network a session names (the chain service sets aside an endpoint
// whose genesis hash does not start with its network's CAIP-2 reference: decision 0915).
//
// The native binding is the package litesvm-linux-x64-gnu itself (the `litesvm` wrapper lists
// per-platform optional packages that the registry reachable here lacks, which breaks `npm ci`).

import { createRequire } from "node:module";
import { createServer } from "node:http";
import { base58, messageSigners, parseTransaction, TOKEN_2022_PROGRAM, TOKEN_PROGRAM, toBytes, transaction } from "./tx.mjs";

const require = createRequire(import.meta.url);
const { LiteSvm } = require("litesvm-linux-x64-gnu");

/** Full genesis hashes of the clusters (a CAIP-2 reference is the first 32 characters). */
export const GENESIS_HASHES = {
  mainnet: "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d",
  devnet: "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG",
  testnet: "4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY",
};

// LiteSVM's error enums, by value (its const enums do not exist at run time).
const TRANSACTION_ERRORS = [
  "AccountInUse", "AccountLoadedTwice", "AccountNotFound", "ProgramAccountNotFound", "InsufficientFundsForFee",
  "InvalidAccountForFee", "AlreadyProcessed", "BlockhashNotFound", "CallChainTooDeep", "MissingSignatureForFee",
  "InvalidAccountIndex", "SignatureFailure", "InvalidProgramForExecution", "SanitizeFailure", "ClusterMaintenance",
  "AccountBorrowOutstanding", "WouldExceedMaxBlockCostLimit", "UnsupportedVersion", "InvalidWritableAccount",
  "WouldExceedMaxAccountCostLimit", "WouldExceedAccountDataBlockLimit", "TooManyAccountLocks",
  "AddressLookupTableNotFound", "InvalidAddressLookupTableOwner", "InvalidAddressLookupTableData",
  "InvalidAddressLookupTableIndex", "InvalidRentPayingAccount", "WouldExceedMaxVoteCostLimit",
  "WouldExceedAccountDataTotalLimit", "MaxLoadedAccountsDataSizeExceeded", "ResanitizationNeeded",
  "InvalidLoadedAccountsDataSizeLimit", "UnbalancedTransaction", "ProgramCacheHitMaxLimit", "CommitCancelled",
];
const INSTRUCTION_ERRORS = [
  "GenericError", "InvalidArgument", "InvalidInstructionData", "InvalidAccountData", "AccountDataTooSmall",
  "InsufficientFunds", "IncorrectProgramId", "MissingRequiredSignature", "AccountAlreadyInitialized",
  "UninitializedAccount", "UnbalancedInstruction", "ModifiedProgramId", "ExternalAccountLamportSpend",
  "ExternalAccountDataModified", "ReadonlyLamportChange", "ReadonlyDataModified", "DuplicateAccountIndex",
  "ExecutableModified", "RentEpochModified", "NotEnoughAccountKeys", "AccountDataSizeChanged", "AccountNotExecutable",
  "AccountBorrowFailed", "AccountBorrowOutstanding", "DuplicateAccountOutOfSync", "InvalidError",
  "ExecutableDataModified", "ExecutableLamportChange", "ExecutableAccountNotRentExempt", "UnsupportedProgramId",
  "CallDepth", "MissingAccount", "ReentrancyNotAllowed", "MaxSeedLengthExceeded", "InvalidSeeds", "InvalidRealloc",
  "ComputationalBudgetExceeded", "PrivilegeEscalation", "ProgramEnvironmentSetupFailure", "ProgramFailedToComplete",
  "ProgramFailedToCompile", "Immutable", "IncorrectAuthority", "AccountNotRentExempt", "InvalidAccountOwner",
  "ArithmeticOverflow", "UnsupportedSysvar", "IllegalOwner", "MaxAccountsDataAllocationsExceeded",
  "MaxAccountsExceeded", "MaxInstructionTraceLengthExceeded", "BuiltinProgramsMustConsumeComputeUnits", "BorshIoError",
];

/** A transaction error as the JSON-RPC API writes it (`"BlockhashNotFound"`,
 * `{"InstructionError":[0,{"Custom":1}]}`). */
function errorJson(err) {
  if (typeof err === "number") return TRANSACTION_ERRORS[err] ?? `TransactionError(${err})`;
  if (err && typeof err.err === "function" && "index" in err) {
    const inner = err.err();
    const json = typeof inner === "number" ? (INSTRUCTION_ERRORS[inner] ?? `InstructionError(${inner})`) : "code" in inner ? { Custom: inner.code } : { BorshIoError: inner.msg };
    return { InstructionError: [err.index, json] };
  }
  if (err && "accountIndex" in err) return { [err.constructor?.name?.replace(/^TransactionError/, "") || "TransactionError"]: { account_index: err.accountIndex } };
  if (err && "index" in err) return { DuplicateInstruction: err.index };
  return String(err);
}

export class RpcError extends Error {
  constructor(code, message, data) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

const INVALID_PARAMS = -32602;

function address(value, what = "pubkey") {
  if (typeof value !== "string") throw new RpcError(INVALID_PARAMS, `Invalid param: ${what} is not a string`);
  let bytes;
  try {
    bytes = base58.decode(value);
  } catch {
    throw new RpcError(INVALID_PARAMS, `Invalid param: Invalid ${what}`);
  }
  if (bytes.length !== 32) throw new RpcError(INVALID_PARAMS, `Invalid param: WrongSize`);
  return bytes;
}

function decodeWire(text, encoding = "base58") {
  if (typeof text !== "string") throw new RpcError(INVALID_PARAMS, "Invalid params: the transaction is not a string");
  try {
    if (encoding === "base64") return new Uint8Array(Buffer.from(text, "base64"));
    if (encoding === "base58") return base58.decode(text);
  } catch {
    throw new RpcError(INVALID_PARAMS, `invalid transaction: failed to decode ${encoding}`);
  }
  throw new RpcError(INVALID_PARAMS, `Invalid params: unsupported encoding ${encoding}`);
}

const u64At = (data, at) => new DataView(data.buffer, data.byteOffset + at, 8).getBigUint64(0, true);
const u32At = (data, at) => new DataView(data.buffer, data.byteOffset + at, 4).getUint32(0, true);
const optionKey = (data, at) => (u32At(data, at) === 1 ? base58.encode(data.slice(at + 4, at + 36)) : null);

function uiAmount(amount, decimals) {
  const text = amount.toString().padStart(decimals + 1, "0");
  const whole = text.slice(0, text.length - decimals);
  const fraction = text.slice(text.length - decimals).replace(/0+$/, "");
  return fraction ? `${whole}.${fraction}` : whole;
}

function tokenAmount(amount, decimals) {
  const text = uiAmount(amount, decimals);
  return { amount: amount.toString(), decimals, uiAmount: Number(text), uiAmountString: text };
}

export function createSolanaPeer({ cluster = "devnet" } = {}) {
  const genesisHash = GENESIS_HASHES[cluster];
  if (!genesisHash) throw new Error(`unknown cluster ${cluster} (mainnet, devnet or testnet)`);
  const svm = new LiteSvm();
  const statuses = new Map();
  const context = () => ({ slot: Number(svm.getClock().slot), apiVersion: "2.3.0" });
  const nextSlot = () => svm.warpToSlot(svm.getClock().slot + 1n);

  const tokenProgram = (owner) => owner === TOKEN_PROGRAM || owner === TOKEN_2022_PROGRAM;
  const mintDecimals = (mint) => {
    const account = svm.getAccount(toBytes(mint));
    return account && account.data().length >= 82 ? account.data()[44] : 0;
  };
  const parsed = (owner, data) => {
    if (!tokenProgram(owner)) return null;
    const program = owner === TOKEN_PROGRAM ? "spl-token" : "spl-token-2022";
    if (data.length === 165 || (owner === TOKEN_2022_PROGRAM && data.length > 165 && data[165] === 2)) {
      const mint = base58.encode(data.slice(0, 32));
      const state = ["uninitialized", "initialized", "frozen"][data[108]] ?? "uninitialized";
      const isNative = u32At(data, 109) === 1;
      const info = { isNative, mint, owner: base58.encode(data.slice(32, 64)), state, tokenAmount: tokenAmount(u64At(data, 64), mintDecimals(mint)) };
      const delegate = optionKey(data, 72);
      if (delegate) Object.assign(info, { delegate, delegatedAmount: tokenAmount(u64At(data, 121), info.tokenAmount.decimals) });
      return { program, parsed: { info, type: "account" }, space: data.length };
    }
    if (data.length === 82 || (owner === TOKEN_2022_PROGRAM && data.length > 165 && data[165] === 1)) {
      const info = {
        decimals: data[44],
        freezeAuthority: optionKey(data, 46),
        isInitialized: data[45] === 1,
        mintAuthority: optionKey(data, 0),
        supply: u64At(data, 36).toString(),
      };
      return { program, parsed: { info, type: "mint" }, space: data.length };
    }
    return null;
  };
  const encodeAccount = (account, encoding = "base58") => {
    const data = account.data();
    const owner = base58.encode(account.owner());
    let encoded;
    if (encoding === "jsonParsed") encoded = parsed(owner, data) ?? [Buffer.from(data).toString("base64"), "base64"];
    else if (encoding === "base64") encoded = [Buffer.from(data).toString("base64"), "base64"];
    else if (encoding === "base58" || encoding === "binary") encoded = encoding === "binary" ? base58.encode(data) : [base58.encode(data), "base58"];
    else throw new RpcError(INVALID_PARAMS, `Invalid params: unsupported encoding ${encoding}`);
    return { data: encoded, executable: account.executable(), lamports: Number(account.lamports()), owner, rentEpoch: Number.MAX_SAFE_INTEGER, space: data.length };
  };
  const accountOf = (pubkey) => svm.getAccount(address(pubkey));

  const run = (wire, simulate) => {
    const { signatures, message } = parseTransaction(wire);
    // LiteSVM aborts the whole process on a wire it cannot deserialize (a non-canonical length, a
    // count that does not match the message): refuse those here, as a node would, instead.
    let canonical = false;
    try {
      canonical = signatures.length === messageSigners(message).required && Buffer.from(transaction(message, signatures)).equals(Buffer.from(wire));
    } catch {
      canonical = false;
    }
    if (!canonical) throw new RpcError(INVALID_PARAMS, "invalid transaction: not a canonically encoded transaction");
    const versioned = (message[0] & 0x80) !== 0;
    const outcome = simulate
      ? versioned ? svm.simulateVersionedTransaction(wire) : svm.simulateLegacyTransaction(wire)
      : versioned ? svm.sendVersionedTransaction(wire) : svm.sendLegacyTransaction(wire);
    const failed = typeof outcome.err === "function";
    const meta = outcome.meta ? outcome.meta() : outcome;
    return {
      signature: signatures[0] ? base58.encode(signatures[0]) : null,
      err: failed ? errorJson(outcome.err()) : null,
      logs: meta.logs(),
      unitsConsumed: Number(meta.computeUnitsConsumed()),
    };
  };

  const methods = {
    getHealth: () => "ok",
    getVersion: () => ({ "solana-core": "2.3.0-litesvm", "feature-set": 0 }),
    getGenesisHash: () => genesisHash,
    getSlot: () => context().slot,
    getBlockHeight: () => context().slot,
    getLatestBlockhash: () => ({ context: context(), value: { blockhash: svm.latestBlockhash(), lastValidBlockHeight: context().slot + 150 } }),
    isBlockhashValid: ([blockhash]) => ({ context: context(), value: blockhash === svm.latestBlockhash() }),
    getBalance: ([pubkey]) => ({ context: context(), value: Number(svm.getBalance(address(pubkey)) ?? 0n) }),
    getAccountInfo: ([pubkey, config = {}]) => {
      const account = accountOf(pubkey);
      return { context: context(), value: account ? encodeAccount(account, config.encoding) : null };
    },
    getMultipleAccounts: ([pubkeys, config = {}]) => {
      if (!Array.isArray(pubkeys) || pubkeys.length > 100) throw new RpcError(INVALID_PARAMS, "Invalid params: at most 100 pubkeys");
      return { context: context(), value: pubkeys.map((p) => { const a = accountOf(p); return a ? encodeAccount(a, config.encoding) : null; }) };
    },
    getTokenAccountsByOwner: ([owner, filter = {}, config = {}]) => {
      const ownerBytes = address(owner, "owner");
      const mint = filter.mint ? base58.encode(address(filter.mint, "mint")) : null;
      const programs = filter.programId ? [filter.programId] : mint ? [base58.encode(svm.getAccount(toBytes(mint))?.owner() ?? toBytes(TOKEN_PROGRAM))] : null;
      if (!programs) throw new RpcError(INVALID_PARAMS, "Invalid params: filter needs mint or programId");
      if (!programs.every(tokenProgram)) throw new RpcError(INVALID_PARAMS, "Invalid params: unrecognized Token program id");
      const value = programs.flatMap((program) =>
        svm.getProgramAccounts(toBytes(program))
          .map((entry) => ({ pubkey: base58.encode(entry.address), account: entry.account() }))
          .filter(({ account }) => {
            const data = account.data();
            return data.length >= 165 && Buffer.from(data.slice(32, 64)).equals(Buffer.from(ownerBytes)) && (!mint || base58.encode(data.slice(0, 32)) === mint);
          })
          .map(({ pubkey, account }) => ({ pubkey, account: encodeAccount(account, config.encoding) })),
      );
      return { context: context(), value };
    },
    getTokenAccountBalance: ([pubkey]) => {
      const account = accountOf(pubkey);
      const info = account && parsed(base58.encode(account.owner()), account.data());
      if (!info || info.parsed.type !== "account") throw new RpcError(INVALID_PARAMS, "Invalid param: not a Token account");
      return { context: context(), value: info.parsed.info.tokenAmount };
    },
    getTokenSupply: ([pubkey]) => {
      const account = accountOf(pubkey);
      const info = account && parsed(base58.encode(account.owner()), account.data());
      if (!info || info.parsed.type !== "mint") throw new RpcError(INVALID_PARAMS, "Invalid param: not a Token mint");
      return { context: context(), value: tokenAmount(BigInt(info.parsed.info.supply), info.parsed.info.decimals) };
    },
    getMinimumBalanceForRentExemption: ([size = 0]) => Number(svm.minimumBalanceForRentExemption(BigInt(size))),
    getFeeForMessage: ([text]) => {
      const message = new Uint8Array(Buffer.from(String(text), "base64"));
      return { context: context(), value: 5000 * messageSigners(message).required };
    },
    requestAirdrop: ([pubkey, lamports]) => {
      if (!Number.isSafeInteger(lamports) || lamports <= 0) throw new RpcError(INVALID_PARAMS, "Invalid params: lamports");
      const outcome = svm.airdrop(address(pubkey), BigInt(lamports));
      if (!outcome || typeof outcome.err === "function") throw new RpcError(-32603, `airdrop failed: ${outcome ? errorJson(outcome.err()) : "no outcome"}`);
      const signature = base58.encode(outcome.signature());
      statuses.set(signature, { slot: context().slot, err: null });
      nextSlot();
      return signature;
    },
    sendTransaction: ([text, config = {}]) => {
      const wire = decodeWire(text, config.encoding);
      const result = run(wire, false);
      if (!result.signature) throw new RpcError(INVALID_PARAMS, "invalid transaction: no signature");
      if (result.err && !config.skipPreflight) {
        throw new RpcError(-32002, `Transaction simulation failed: ${JSON.stringify(result.err)}`, {
          err: result.err, logs: result.logs, accounts: null, unitsConsumed: result.unitsConsumed, returnData: null,
        });
      }
      statuses.set(result.signature, { slot: context().slot, err: result.err });
      nextSlot();
      return result.signature;
    },
    simulateTransaction: ([text, config = {}]) => {
      const wire = decodeWire(text, config.encoding);
      const result = run(wire, true);
      return { context: context(), value: { err: result.err, logs: result.logs, accounts: null, unitsConsumed: result.unitsConsumed, returnData: null } };
    },
    getSignatureStatuses: ([signatures]) => {
      if (!Array.isArray(signatures) || signatures.length > 256) throw new RpcError(INVALID_PARAMS, "Invalid params: at most 256 signatures");
      const value = signatures.map((s) => {
        const status = statuses.get(s);
        if (!status) return null;
        return {
          slot: status.slot,
          confirmations: null,
          err: status.err,
          status: status.err ? { Err: status.err } : { Ok: null },
          confirmationStatus: "finalized",
        };
      });
      return { context: context(), value };
    },
  };

  /** Answers one JSON-RPC 2.0 request object. */
  const answer = (request) => {
    const id = request && typeof request === "object" && "id" in request ? request.id : null;
    if (!request || request.jsonrpc !== "2.0" || typeof request.method !== "string") {
      return { jsonrpc: "2.0", id, error: { code: -32600, message: "Invalid request" } };
    }
    const method = methods[request.method];
    if (!method) return { jsonrpc: "2.0", id, error: { code: -32601, message: "Method not found" } };
    try {
      const params = request.params === undefined ? [] : request.params;
      if (!Array.isArray(params)) throw new RpcError(INVALID_PARAMS, "Invalid params: expected an array");
      return { jsonrpc: "2.0", id, result: method(params) };
    } catch (e) {
      if (e instanceof RpcError) return { jsonrpc: "2.0", id, error: { code: e.code, message: e.message, ...(e.data ? { data: e.data } : {}) } };
      return { jsonrpc: "2.0", id, error: { code: -32603, message: e instanceof Error ? e.message : String(e) } };
    }
  };

  /** Answers a JSON-RPC body (one request or a batch). */
  const handle = (body) => {
    let parsedBody;
    try {
      parsedBody = JSON.parse(body);
    } catch {
      return { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } };
    }
    if (Array.isArray(parsedBody)) return parsedBody.length === 0 ? { jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid request" } } : parsedBody.map(answer);
    return answer(parsedBody);
  };

  const call = (method, params = []) => {
    const response = answer({ jsonrpc: "2.0", id: 1, method, params });
    if (response.error) throw new RpcError(response.error.code, response.error.message, response.error.data);
    return response.result;
  };

  return { svm, cluster, genesisHash, handle, call };
}

/** Serves `peer` over HTTP on `host:port` (0: a free port); CORS open, so a page's wallet can call it. */
export function serve(peer, { host = "127.0.0.1", port = 0 } = {}) {
  const server = createServer((req, res) => {
    const headers = { "access-control-allow-origin": "*", "access-control-allow-headers": "content-type", "access-control-allow-methods": "POST, OPTIONS" };
    if (req.method === "OPTIONS") {
      res.writeHead(204, headers).end();
      return;
    }
    if (req.method !== "POST") {
      res.writeHead(405, headers).end();
      return;
    }
    const chunks = [];
    let size = 0;
    req.on("data", (c) => {
      size += c.length;
      if (size > 1_000_000) req.destroy();
      else chunks.push(c);
    });
    req.on("end", () => {
      const body = JSON.stringify(peer.handle(Buffer.concat(chunks).toString("utf8")));
      res.writeHead(200, { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      const { port: actual } = server.address();
      // Closing ends kept-alive connections too (a gateway's HTTP client keeps them open).
      const close = () => new Promise((ok) => {
        server.close(() => ok());
        server.closeAllConnections();
      });
      resolve({ url: `http://${host}:${actual}`, close });
    });
  });
}

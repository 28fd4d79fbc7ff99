// The session's Solana transaction requests performed with the dev Solana wallet: signed in the
// wallet account's slot (the signature checked with ed25519 over the message), sent through a stub
// node that records what it was given (the real node is the e2e tests' business), the Wallet
// Standard chain derived from the session's network, and the failures as outcomes.
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { ed25519 } from "@noble/curves/ed25519";
import { base58 } from "@scure/base";
import type { Wallet } from "@wallet-standard/base";
import { DevSolanaWallet, GENESIS_HASHES } from "../../wallet/solana/devSolanaWallet";
import { parseTransaction } from "../../wallet/solana/transaction";
import type { WalletRequest } from "../../generated/WalletRequest";
import { performSolana } from "./solanaWallets";
import { base64Decode, base64Encode, readParams } from "./solanaTransactions";

const DEVNET = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";

beforeEach(() => {
  const map = new Map<string, string>();
  Object.assign(globalThis, {
    localStorage: { getItem: (k: string) => map.get(k) ?? null, setItem: (k: string, v: string) => void map.set(k, v), removeItem: (k: string) => void map.delete(k) },
  });
});
afterEach(() => vi.unstubAllGlobals());

const rpc = (method: string, params: unknown): WalletRequest => ({ id: "r1", connectorId: "solana:Dev Solana Wallet", namespace: "solana", kind: { type: "rpc", method, params }, issuedMs: 0 });

/** A legacy transaction paid (and so signed) by `payer`: one signer, the System Program, no instruction. */
function unsigned(payer: string): Uint8Array {
  const message = [1, 0, 1, 2, ...base58.decode(payer), ...new Uint8Array(32), ...new Uint8Array(32).fill(7), 0];
  return Uint8Array.from([1, ...new Uint8Array(64), ...message]);
}

async function connected(rpcUrl?: string): Promise<DevSolanaWallet> {
  const wallet = new DevSolanaWallet(ed25519.utils.randomPrivateKey(), rpcUrl);
  await performSolana({ id: "c", connectorId: "solana:Dev Solana Wallet", namespace: "solana", kind: { type: "connect" }, issuedMs: 0 }, wallet);
  return wallet;
}

function verifies(wire: Uint8Array, address: string): boolean {
  const parsed = parseTransaction(wire);
  return ed25519.verify(parsed.signatures[0], parsed.message, base58.decode(address));
}

it("signs a transaction the server built and answers it in base64", async () => {
  const wallet = await connected();
  const transaction = base64Encode(unsigned(wallet.address));
  const outcome = await performSolana(rpc("solana:signTransaction", { transaction, network: DEVNET, address: wallet.address }), wallet);
  if (outcome.status !== "ok" || outcome.result === null || typeof outcome.result !== "object" || !("signedTransaction" in outcome.result)) {
    throw new Error(`expected a signed transaction, got ${JSON.stringify(outcome)}`);
  }
  expect(verifies(base64Decode(String(outcome.result.signedTransaction)), wallet.address)).toBe(true);
  expect(wallet.prompts).toBe(2);
});

it("performs the session's signTransaction request: signed by the account asked for, on the network's Wallet Standard chain, and not sent", async () => {
  const sent: unknown[] = [];
  vi.stubGlobal("fetch", async (...args: unknown[]) => void sent.push(args));
  const wallet = await connected("http://node.invalid");
  const transaction = base64Encode(unsigned(wallet.address));
  const request: WalletRequest = { id: "r2", connectorId: "solana:Dev Solana Wallet", namespace: "solana", kind: { type: "signTransaction", transaction, address: wallet.address, network: DEVNET }, issuedMs: 0 };
  const outcome = await performSolana(request, wallet);
  if (outcome.status !== "ok" || outcome.result === null || typeof outcome.result !== "object" || !("signedTransaction" in outcome.result)) {
    throw new Error(`expected a signed transaction, got ${JSON.stringify(outcome)}`);
  }
  expect(verifies(base64Decode(String(outcome.result.signedTransaction)), wallet.address)).toBe(true);
  expect(sent, "the server sends it, not the wallet").toEqual([]);
  // Another account, and a network whose chain the wallet lacks, are the wallet's errors.
  const other: WalletRequest = { ...request, kind: { type: "signTransaction", transaction, address: "11111111111111111111111111111111", network: DEVNET } };
  expect(await performSolana(other, wallet)).toMatchObject({ status: "error", code: 4100 });
  const devnetOnly = new DevSolanaWallet(ed25519.utils.randomPrivateKey(), undefined, ["solana:devnet"]);
  await performSolana({ id: "c", connectorId: "x", namespace: "solana", kind: { type: "connect" }, issuedMs: 0 }, devnetOnly);
  const mainnet: WalletRequest = { ...request, kind: { type: "signTransaction", transaction: base64Encode(unsigned(devnetOnly.address)), address: devnetOnly.address, network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" } };
  expect(await performSolana(mainnet, devnetOnly)).toMatchObject({ status: "error", code: 4901 });
});

it("signs and sends through the wallet, on the Wallet Standard chain of the session's network, answering the base58 signature", async () => {
  const sent: unknown[] = [];
  vi.stubGlobal("fetch", async (_url: string, init: { body: string }) => {
    const { method, params } = JSON.parse(init.body);
    if (method === "getGenesisHash") return Response.json({ jsonrpc: "2.0", id: 1, result: GENESIS_HASHES["solana:devnet"] });
    sent.push(params);
    const wire = Uint8Array.from(atob(params[0]), (c) => c.charCodeAt(0));
    return Response.json({ jsonrpc: "2.0", id: 1, result: base58.encode(parseTransaction(wire).signatures[0]) });
  });
  const wallet = await connected("http://node.invalid");
  const transaction = base64Encode(unsigned(wallet.address));
  // The positional form (a one-element array) is accepted too.
  const outcome = await performSolana(rpc("solana:signAndSendTransaction", [{ transaction, network: DEVNET }]), wallet);
  if (outcome.status !== "ok" || outcome.result === null || typeof outcome.result !== "object" || !("signature" in outcome.result)) {
    throw new Error(`expected a signature, got ${JSON.stringify(outcome)}`);
  }
  expect(sent.length).toBe(1);
  const wire = base64Decode((sent[0] as string[])[0]);
  expect(verifies(wire, wallet.address)).toBe(true);
  expect(outcome.result.signature).toBe(base58.encode(parseTransaction(wire).signatures[0]));
});

it("falls back to signing only when the wallet cannot send (the server sends it)", async () => {
  const dev = await connected();
  const { "solana:signAndSendTransaction": _, ...features } = dev.features;
  const signOnly: Wallet = { version: dev.version, name: dev.name, icon: dev.icon, chains: dev.chains, accounts: dev.accounts, features };
  const outcome = await performSolana(rpc("solana:signAndSendTransaction", { transaction: base64Encode(unsigned(dev.address)), network: DEVNET }), signOnly);
  expect(outcome).toMatchObject({ status: "ok", result: { signedTransaction: expect.any(String) } });
});

it("answers a rejection with 4001, another account with 4100, a wallet on another chain with 4901, bad params with -32602", async () => {
  const wallet = await connected();
  const transaction = base64Encode(unsigned(wallet.address));
  wallet.rejectAll = true;
  expect(await performSolana(rpc("solana:signTransaction", { transaction }), wallet)).toEqual({ status: "error", code: 4001, message: "User rejected the request." });
  wallet.rejectAll = false;
  expect(await performSolana(rpc("solana:signTransaction", { transaction, address: "11111111111111111111111111111111" }), wallet)).toMatchObject({ status: "error", code: 4100 });
  const devnetOnly = new DevSolanaWallet(ed25519.utils.randomPrivateKey(), undefined, ["solana:devnet"]);
  await performSolana({ id: "c", connectorId: "x", namespace: "solana", kind: { type: "connect" }, issuedMs: 0 }, devnetOnly);
  const mainnet = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
  expect(await performSolana(rpc("solana:signTransaction", { transaction: base64Encode(unsigned(devnetOnly.address)), network: mainnet }), devnetOnly)).toMatchObject({ status: "error", code: 4901 });
  expect(await performSolana(rpc("solana:signTransaction", {}), wallet)).toMatchObject({ status: "error", code: -32602 });
  expect(await performSolana(rpc("solana:signTransaction", { transaction: "not base64!" }), wallet)).toMatchObject({ status: "error", code: -32602 });
  expect(await performSolana(rpc("solana:signAllTheThings", { transaction }), wallet)).toMatchObject({ status: "error", code: 4200 });
});

it("reads the params as an object or a one-element array", () => {
  expect(readParams({ transaction: "AQ==", chain: "solana:devnet", account: "A" })).toEqual({ transaction: "AQ==", network: "solana:devnet", address: "A" });
  expect(readParams([{ transaction: "AQ==" }])).toEqual({ transaction: "AQ==", network: undefined, address: undefined });
  expect(readParams(null)).toBe("The request has no transaction");
});

// Solana wallet discovery through the Wallet Standard registry, and the session's requests performed
// with the dev Solana wallet (no node needed: connect, silent sync, sign-in messages).
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { ed25519 } from "@noble/curves/ed25519";
import { base58 } from "@scure/base";
import { getWallets } from "@wallet-standard/app";
import type { Wallet } from "@wallet-standard/base";
import { DevSolanaWallet } from "../../wallet/solana/devSolanaWallet";
import { base58Encode, performSolana, SolanaDiscovery, walletChainOf } from "./solanaWallets";
import type { WalletRequest } from "../../generated/WalletRequest";

const unregister: Array<() => void> = [];
const abort = new AbortController();
afterEach(() => {
  for (const u of unregister.splice(0)) u();
});
beforeEach(() => {
  const map = new Map<string, string>();
  Object.assign(globalThis, {
    localStorage: { getItem: (k: string) => map.get(k) ?? null, setItem: (k: string, v: string) => void map.set(k, v), removeItem: (k: string) => void map.delete(k) },
  });
});

const register = (wallet: Wallet) => unregister.push(getWallets().register(wallet));
const request = (kind: WalletRequest["kind"]): WalletRequest => ({ id: "r1", connectorId: "solana:Dev Solana Wallet", namespace: "solana", kind, issuedMs: 0 });
const otherChainWallet = (name: string): Wallet => ({ version: "1.0.0", name, icon: "data:image/svg+xml;base64,", chains: ["sui:mainnet"], features: {}, accounts: [] });

it("finds Solana wallets registered before and after it starts, once per name, and only Solana ones", () => {
  const first = DevSolanaWallet.random();
  register(first);
  register(otherChainWallet("A Sui Wallet"));
  const discovery = new SolanaDiscovery();
  let changes = 0;
  discovery.start(() => changes++, abort.signal);
  expect(discovery.report()).toEqual([{ name: "Dev Solana Wallet", icon: first.icon, kind: "ANNOUNCED", namespace: "solana" }]);
  register(DevSolanaWallet.random()); // the same name again: the first one stays
  expect(discovery.report().length).toBe(1);
  expect(discovery.wallet("solana:Dev Solana Wallet")).toBe(first);
  expect(discovery.wallet("dev.vestibule.wallet")).toBeUndefined();
  expect(changes).toBe(1);
  abort.abort();
});

it("given malformed Wallet Standard wallets, when discovery starts and they register later, then it never throws, warns and keeps the good ones", () => {
  const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
  const features = { "standard:connect": { connect: async () => ({ accounts: [] }) }, "standard:events": { on: () => () => undefined } };
  const solana = (fields: Record<string, unknown>) =>
    Object.defineProperties({ version: "1.0.0", name: "W", icon: "data:image/svg+xml;base64,", chains: ["solana:devnet"], features, accounts: [] }, Object.getOwnPropertyDescriptors(fields)) as unknown as Wallet;
  register(solana({ name: 42 }));
  register(solana({ name: "Bad Chains", chains: "solana:devnet" }));
  const discovery = new SolanaDiscovery();
  let changes = 0;
  const local = new AbortController();
  expect(() => discovery.start(() => changes++, local.signal)).not.toThrow();
  expect(() => {
    register(solana({ name: "No Features", features: null }));
    register(solana({ name: "Throwing", get features(): never { throw new Error("trap"); } }));
    register(solana({ name: " " }));
    register(solana({ name: "n".repeat(65) }));
    register(solana({ name: "Bad Icon", icon: 7 }));
    register(solana({ name: "  Padded\u0085" }));
  }).not.toThrow();
  expect(discovery.report()).toEqual([
    { name: "Bad Icon", kind: "ANNOUNCED", namespace: "solana" },
    { name: "Padded", icon: "data:image/svg+xml;base64,", kind: "ANNOUNCED", namespace: "solana" },
  ]);
  expect(discovery.wallet("solana:Padded")).toBeDefined();
  expect(warn).toHaveBeenCalledTimes(2); // the blank name, the long one (the others are not wallets at all)
  local.abort();
  warn.mockRestore();
});

it("connects, re-syncs silently and signs the session's message", async () => {
  const wallet = DevSolanaWallet.random();
  const synced = await performSolana(request({ type: "sync" }), wallet);
  expect(synced).toEqual({ status: "ok", result: { accounts: [], chains: [] } });
  expect(await performSolana(request({ type: "connect" }), wallet)).toEqual({
    status: "ok",
    result: { accounts: [wallet.address], chains: ["solana:mainnet", "solana:devnet", "solana:testnet"] },
  });
  expect(wallet.prompts).toBe(1);
  expect(await performSolana(request({ type: "sync" }), wallet)).toMatchObject({ status: "ok", result: { accounts: [wallet.address] } });
  expect(wallet.prompts).toBe(1);
  const message = "localhost:3000 wants you to sign in with your Solana account:\n" + wallet.address;
  const signed = await performSolana(request({ type: "signMessage", message, address: wallet.address }), wallet);
  if (signed.status !== "ok" || typeof signed.result !== "string") throw new Error(`expected a signature, got ${JSON.stringify(signed)}`);
  expect(ed25519.verify(base58.decode(signed.result), new TextEncoder().encode(message), base58.decode(wallet.address))).toBe(true);
});

it("answers a rejection with 4001, an unknown account with 4100, a missing wallet with 4900", async () => {
  const wallet = DevSolanaWallet.random();
  wallet.rejectAll = true;
  expect(await performSolana(request({ type: "connect" }), wallet)).toEqual({ status: "error", code: 4001, message: "User rejected the request." });
  expect(await performSolana(request({ type: "signMessage", message: "m", address: "11111111111111111111111111111111" }), wallet)).toMatchObject({ status: "error", code: 4100 });
  expect(await performSolana(request({ type: "connect" }), undefined)).toMatchObject({ status: "error", code: 4900 });
  expect(await performSolana(request({ type: "rpc", method: "getBalance", params: [] }), wallet)).toMatchObject({ status: "error", code: 4200 });
});

it("names the Wallet Standard chain of each cluster's CAIP-2 id", () => {
  expect(walletChainOf("solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1")).toBe("solana:devnet");
  expect(walletChainOf("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp")).toBe("solana:mainnet");
  expect(walletChainOf("solana:localnet")).toBeUndefined();
});

it("encodes base58 as the reference implementation does", () => {
  for (const bytes of [new Uint8Array(0), Uint8Array.of(0), Uint8Array.of(0, 0, 1), new Uint8Array(32).fill(255), ed25519.utils.randomPrivateKey(), new Uint8Array(64).map((_, i) => i * 7)]) {
    expect(base58Encode(bytes)).toBe(base58.encode(bytes));
  }
});

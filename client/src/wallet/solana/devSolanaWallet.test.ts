// The dev Solana wallet against the local Solana peer (LiteSVM from tests/peers): real ed25519
// signatures over messages and transactions (legacy and v0), transactions the peer executes, the
// chain check, rejections, silent connects and account changes.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ed25519 } from "@noble/curves/ed25519";
import { hexToBytes } from "@noble/hashes/utils";
import type { WalletAccount } from "@wallet-standard/base";
import { SOLANA_DEV_KEY, startSolanaPeer, type SolanaPeer } from "../../../../tests/peers/solana.mjs";
import { associatedTokenAddress, base58, compileMessage, instructions, parseTransaction, randomKeypair } from "../../../../tests/peers/solana/tx.mjs";
import { DevSolanaWallet } from "./devSolanaWallet";
import { parseTransaction as parseInWallet } from "./transaction";

const seed = hexToBytes(SOLANA_DEV_KEY.secretKey);
let peer: SolanaPeer;

beforeAll(async () => {
  peer = await startSolanaPeer();
}, 30_000);
afterAll(() => peer?.stop());

// The wallet remembers grants in localStorage, which Node does not have: a memory one per test.
beforeEach(() => {
  const map = new Map<string, string>();
  Object.assign(globalThis, {
    localStorage: { getItem: (k: string) => map.get(k) ?? null, setItem: (k: string, v: string) => void map.set(k, v), removeItem: (k: string) => void map.delete(k) },
  });
});

const lamports = async (address: string) => (await peer.rpc<{ value: number }>("getBalance", [address])).value;
const blockhash = async () => (await peer.rpc<{ value: { blockhash: string } }>("getLatestBlockhash")).value.blockhash;
const unsigned = (message: Uint8Array, signers = 1) => {
  const out = new Uint8Array(1 + 64 * signers + message.length);
  out[0] = signers;
  out.set(message, 1 + 64 * signers);
  return out;
};
/** A v0 message: the version prefix, the legacy body, and no address-table lookups. */
const v0 = (legacy: Uint8Array) => Uint8Array.from([0x80, ...legacy, 0]);

async function connected(wallet = new DevSolanaWallet(seed, peer.url)): Promise<[DevSolanaWallet, WalletAccount]> {
  const { accounts } = await wallet.features["standard:connect"].connect();
  return [wallet, accounts[0]];
}

describe("DevSolanaWallet", () => {
  it("holds the dev key: its address is the key file's", () => {
    expect(new DevSolanaWallet(seed).address).toBe(SOLANA_DEV_KEY.address);
  });

  it("connects with a prompt, reconnects silently without one, and remembers the grant", async () => {
    const wallet = new DevSolanaWallet(seed, peer.url);
    expect((await wallet.features["standard:connect"].connect({ silent: true })).accounts).toEqual([]);
    expect(wallet.prompts).toBe(0);
    const changes: number[] = [];
    wallet.features["standard:events"].on("change", ({ accounts }) => changes.push(accounts?.length ?? -1));
    const { accounts } = await wallet.features["standard:connect"].connect();
    expect(accounts.map((a) => a.address)).toEqual([SOLANA_DEV_KEY.address]);
    expect(accounts[0].chains).toEqual(["solana:mainnet", "solana:devnet", "solana:testnet"]);
    expect(wallet.prompts).toBe(1);
    // A new page: another instance with the same key answers a silent connect without prompting.
    const reloaded = new DevSolanaWallet(seed, peer.url);
    expect((await reloaded.features["standard:connect"].connect({ silent: true })).accounts.map((a) => a.address)).toEqual([SOLANA_DEV_KEY.address]);
    expect(reloaded.prompts).toBe(0);
    await wallet.features["standard:disconnect"].disconnect();
    expect(wallet.accounts).toEqual([]);
    expect(changes).toEqual([1, 0]);
  });

  it("signs messages with ed25519; tampering and rejection are available to tests", async () => {
    const [wallet, account] = await connected();
    const message = new TextEncoder().encode("example.com wants you to sign in with your Solana account:");
    const [out] = await wallet.features["solana:signMessage"].signMessage({ account, message });
    expect(out.signatureType).toBe("ed25519");
    expect(ed25519.verify(out.signature, message, base58.decode(SOLANA_DEV_KEY.address))).toBe(true);
    wallet.tamperSignatures = true;
    const [bad] = await wallet.features["solana:signMessage"].signMessage({ account, message });
    expect(ed25519.verify(bad.signature, message, base58.decode(SOLANA_DEV_KEY.address))).toBe(false);
    wallet.rejectAll = true;
    await expect(wallet.features["solana:signMessage"].signMessage({ account, message })).rejects.toMatchObject({ code: 4001 });
    const stranger = { ...account, address: randomKeypair().address };
    wallet.rejectAll = false;
    await expect(wallet.features["solana:signMessage"].signMessage({ account: stranger, message })).rejects.toMatchObject({ code: 4100 });
  });

  it("signs a legacy transaction in its slot; the peer executes it", async () => {
    const [wallet, account] = await connected();
    const to = randomKeypair().address;
    const message = compileMessage({ payer: account.address, instructions: [instructions.transfer(account.address, to, 1_234_567)], recentBlockhash: await blockhash() });
    const [{ signedTransaction }] = await wallet.features["solana:signTransaction"].signTransaction({ account, transaction: unsigned(message), chain: "solana:devnet" });
    const { signatures } = parseTransaction(signedTransaction);
    expect(ed25519.verify(signatures[0], message, base58.decode(account.address))).toBe(true);
    const signature = await peer.rpc<string>("sendTransaction", [Buffer.from(signedTransaction).toString("base64"), { encoding: "base64" }]);
    expect(signature).toBe(base58.encode(signatures[0]));
    expect(await lamports(to)).toBe(1_234_567);
  });

  it("signs and sends SOL and SPL transfers, v0 included, to its node; the node confirms them", async () => {
    const [wallet, account] = await connected();
    const to = randomKeypair().address;
    const sol = compileMessage({ payer: account.address, instructions: [instructions.transfer(account.address, to, 1_000_000)], recentBlockhash: await blockhash() });
    const [{ signature }] = await wallet.features["solana:signAndSendTransaction"].signAndSendTransaction({ account, transaction: unsigned(v0(sol)), chain: "solana:devnet" });
    expect(parseInWallet(unsigned(v0(sol))).version).toBe(0);
    const statuses = await peer.rpc<{ value: Array<{ confirmationStatus: string; err: unknown } | null> }>("getSignatureStatuses", [[base58.encode(signature)]]);
    expect(statuses.value[0]).toMatchObject({ confirmationStatus: "finalized", err: null });
    expect(await lamports(to)).toBe(1_000_000);

    const mint = peer.mint ?? "";
    const destination = associatedTokenAddress(to, mint);
    const spl = compileMessage({
      payer: account.address,
      instructions: [instructions.createAssociatedTokenAccountIdempotent(account.address, to, mint), instructions.transferChecked(peer.tokenAccount ?? "", mint, destination, account.address, 1_500_000n, 6)],
      recentBlockhash: await blockhash(),
    });
    await wallet.features["solana:signAndSendTransaction"].signAndSendTransaction({ account, transaction: unsigned(spl), chain: "solana:devnet" });
    const balance = await peer.rpc<{ value: { uiAmountString: string } }>("getTokenAccountBalance", [destination]);
    expect(balance.value.uiAmountString).toBe("1.5");
  });

  it("refuses to send to a node of another cluster, and what it cannot read", async () => {
    const [wallet, account] = await connected();
    const message = compileMessage({ payer: account.address, instructions: [instructions.transfer(account.address, account.address, 1)], recentBlockhash: await blockhash() });
    await expect(wallet.features["solana:signAndSendTransaction"].signAndSendTransaction({ account, transaction: unsigned(message), chain: "solana:mainnet" })).rejects.toMatchObject({ code: 4901 });
    await expect(wallet.features["solana:signTransaction"].signTransaction({ account, transaction: Uint8Array.of(1, 2, 3) })).rejects.toMatchObject({ code: -32602 });
    const other = compileMessage({ payer: randomKeypair().address, instructions: [], recentBlockhash: await blockhash() });
    await expect(wallet.features["solana:signTransaction"].signTransaction({ account, transaction: unsigned(other) })).rejects.toMatchObject({ code: -32602 });
  });

  it("reports an account change as a change event", async () => {
    const [wallet] = await connected();
    const seen: string[][] = [];
    wallet.features["standard:events"].on("change", ({ accounts }) => seen.push((accounts ?? []).map((a) => a.address)));
    const next = randomKeypair();
    wallet.switchAccount(next.seed);
    expect(seen).toEqual([[next.address]]);
  });
});

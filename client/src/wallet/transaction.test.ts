import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RLP } from "@ethereumjs/rlp";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils";
import { DevWallet, recoverDigest } from "./devWallet";
import { rpcCall, signingHash, signTransaction, type Eip1559Transaction } from "./transaction";
import { ANVIL_KEY_0, startAnvil, waitForReceipt, type Anvil } from "../../../tests/peers/anvil.mjs";

// Tests that talk to a real anvil: a generous bound for a loaded machine (vitest's default is 5 s).
const ANVIL_TEST_TIMEOUT_MS = 30_000;

const RECIPIENT = "0x000000000000000000000000000000000000dEaD";

describe("EIP-1559 signing", () => {
  it("writes a type-2 envelope whose signature recovers to the sender from the signing hash", () => {
    const key = hexToBytes(ANVIL_KEY_0);
    const tx: Eip1559Transaction = { chainId: 1n, nonce: 0n, maxPriorityFeePerGas: 1n, maxFeePerGas: 2n, gas: 21000n, to: RECIPIENT, value: 5n, data: "0x" };
    const { raw, hash } = signTransaction(key, tx);
    expect(raw.startsWith("0x02")).toBe(true);
    expect(hash).toMatch(/^0x[0-9a-f]{64}$/);
    // RFC 6979 nonces: the same transaction signs to the same bytes.
    expect(signTransaction(key, tx).raw).toBe(raw);
    const decoded = RLP.decode(hexToBytes(raw.slice(4))) as Uint8Array[];
    expect(decoded.length).toBe(12);
    const [yParity, r, s] = decoded.slice(9).map((b) => bytesToHex(b));
    const signature = `0x${r.padStart(64, "0")}${s.padStart(64, "0")}${(27 + Number(`0x${yParity || "0"}`)).toString(16)}`;
    expect(recoverDigest(signingHash(tx), signature)).toBe(new DevWallet(key).address);
  });
});

describe("DevWallet eth_sendTransaction against anvil", () => {
  let anvil: Anvil;
  beforeAll(async () => {
    anvil = await startAnvil(1);
  }, 30_000);
  afterAll(() => anvil?.stop());

  it("signs, sends to the node, and the node mines it from the wallet's address", async () => {
    const wallet = new DevWallet(hexToBytes(ANVIL_KEY_0), anvil.url);
    const before = BigInt((await wallet.request({ method: "eth_getBalance", params: [RECIPIENT, "latest"] })) as string);
    const hash = (await wallet.request({ method: "eth_sendTransaction", params: [{ from: wallet.address, to: RECIPIENT, value: "0x2386f26fc10000" }] })) as string;
    expect(hash).toMatch(/^0x[0-9a-f]{64}$/);
    const receipt = await waitForReceipt(anvil.url, hash);
    expect(receipt.status).toBe("0x1");
    expect(receipt.from.toLowerCase()).toBe(wallet.address.toLowerCase());
    expect(receipt.to?.toLowerCase()).toBe(RECIPIENT.toLowerCase());
    const after = BigInt((await wallet.request({ method: "eth_getBalance", params: [RECIPIENT, "latest"] })) as string);
    expect(after - before).toBe(10_000_000_000_000_000n);
    expect(wallet.prompts).toBe(1);
    // A second transaction takes the next nonce from the node.
    const second = (await wallet.request({ method: "eth_sendTransaction", params: [{ from: wallet.address, to: RECIPIENT, value: "0x1" }] })) as string;
    const tx = (await rpcCall(anvil.url, "eth_getTransactionByHash", [second])) as { nonce: string; type: string };
    expect(tx.nonce).toBe("0x1");
    expect(tx.type).toBe("0x2");
  }, ANVIL_TEST_TIMEOUT_MS);

  it("rejects with 4001 when told to, and refuses another sender or a node on another chain", async () => {
    const wallet = new DevWallet(hexToBytes(ANVIL_KEY_0), anvil.url);
    wallet.rejectAll = true;
    await expect(wallet.request({ method: "eth_sendTransaction", params: [{ from: wallet.address, to: RECIPIENT }] })).rejects.toMatchObject({ code: 4001 });
    wallet.rejectAll = false;
    await expect(wallet.request({ method: "eth_sendTransaction", params: [{ from: RECIPIENT, to: RECIPIENT }] })).rejects.toMatchObject({ code: 4100 });
    // A wallet that believes its node serves chain 137 while it serves chain 1.
    const misconfigured = new DevWallet(hexToBytes(ANVIL_KEY_0), { chains: { 137: anvil.url } });
    await expect(misconfigured.request({ method: "eth_sendTransaction", params: [{ from: misconfigured.address, to: RECIPIENT }] })).rejects.toMatchObject({ code: 4901 });
  }, ANVIL_TEST_TIMEOUT_MS);

  it("passes the node's error on with its code (insufficient funds)", async () => {
    const wallet = new DevWallet(hexToBytes("11".repeat(32)), anvil.url);
    await expect(wallet.request({ method: "eth_sendTransaction", params: [{ from: wallet.address, to: RECIPIENT, value: "0xde0b6b3a7640000" }] })).rejects.toHaveProperty("code");
  }, ANVIL_TEST_TIMEOUT_MS);

  it("without a node, says it has none", async () => {
    const wallet = new DevWallet(hexToBytes(ANVIL_KEY_0));
    await expect(wallet.request({ method: "eth_sendTransaction", params: [{ from: wallet.address, to: RECIPIENT }] })).rejects.toMatchObject({ code: 4200 });
  });
});

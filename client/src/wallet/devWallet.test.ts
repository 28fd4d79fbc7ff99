import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hexToBytes, utf8ToBytes } from "@noble/hashes/utils";
import { addressOf, DevWallet, recoverDigest, recoverPersonalSign } from "./devWallet";
import { typedDataDigest } from "./eip712";
import { networkOf } from "./inject";
import { rpcCall } from "./transaction";
import { ANVIL_KEY_0, startAnvil, waitForReceipt, type Anvil } from "../../../tests/peers/anvil.mjs";

// Tests that talk to a real anvil: a generous bound for a loaded machine (vitest's default is 5 s).
const ANVIL_TEST_TIMEOUT_MS = 30_000;

const RECIPIENT = "0x000000000000000000000000000000000000dEaD";

const key = (n: number) => {
  const k = new Uint8Array(32);
  k[31] = n;
  return k;
};

describe("DevWallet", () => {
  it("derives the well-known address of private key 1 (EIP-55 checksummed)", () => {
    expect(addressOf(key(1))).toBe("0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf");
  });

  it("really signs: personal_sign recovers to its address", async () => {
    const wallet = new DevWallet(key(7));
    const message = "localhost:3000 wants you to sign in with your Ethereum account:\n" + wallet.address;
    const hex = "0x" + Array.from(utf8ToBytes(message), (b) => b.toString(16).padStart(2, "0")).join("");
    const signature = (await wallet.request({ method: "personal_sign", params: [hex, wallet.address] })) as string;
    expect(signature).toMatch(/^0x[0-9a-f]{130}$/);
    expect(recoverPersonalSign(utf8ToBytes(message), signature)).toBe(wallet.address);
  });

  it("rejects with 4001 when told to, and answers accounts only after connecting", async () => {
    const wallet = new DevWallet(key(9));
    expect(await wallet.request({ method: "eth_accounts" })).toEqual([]);
    wallet.rejectAll = true;
    await expect(wallet.request({ method: "eth_requestAccounts" })).rejects.toMatchObject({ code: 4001 });
    wallet.rejectAll = false;
    expect(await wallet.request({ method: "eth_requestAccounts" })).toEqual([wallet.address]);
    expect(await wallet.request({ method: "eth_accounts" })).toEqual([wallet.address]);
  });
});

describe("DevWallet typed data", () => {
  it("signs EIP-712 typed data (eth_signTypedData_v4) so that the digest recovers to its address", async () => {
    const wallet = new DevWallet(key(11));
    const data = {
      types: { EIP712Domain: [{ name: "name", type: "string" }, { name: "chainId", type: "uint256" }], Hello: [{ name: "to", type: "address" }, { name: "amount", type: "uint256" }] },
      primaryType: "Hello",
      domain: { name: "Vestibule", chainId: 1 },
      message: { to: wallet.address, amount: "1000000000000000000" },
    };
    const signature = (await wallet.request({ method: "eth_signTypedData_v4", params: [wallet.address, JSON.stringify(data)] })) as string;
    expect(recoverDigest(typedDataDigest(data), signature)).toBe(wallet.address);
  });
});

describe("DevWallet chains (EIP-3326 switch, EIP-3085 add)", () => {
  // Two real nodes: anvil funds its first default account on every chain it serves.
  let first: Anvil;
  let second: Anvil;
  beforeAll(async () => {
    [first, second] = await Promise.all([startAnvil(31337), startAnvil(31338)]);
  }, 30_000);
  afterAll(() => Promise.all([first?.stop(), second?.stop()]));

  const add = (url: string, extra: Record<string, unknown> = {}) => ({
    method: "wallet_addEthereumChain",
    params: [{ chainId: "0x7a6a", chainName: "Devnet 31338", rpcUrls: [url], nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, ...extra }],
  });
  const switchTo = (chainId: string) => ({ method: "wallet_switchEthereumChain", params: [{ chainId }] });

  it("reports its current chain and switches among the chains it knows, emitting chainChanged once per change", async () => {
    const wallet = new DevWallet(hexToBytes(ANVIL_KEY_0), { chains: { 31337: first.url, 31338: second.url } });
    const changes: unknown[] = [];
    wallet.on("chainChanged", (id) => changes.push(id));
    expect(await wallet.request({ method: "eth_chainId" })).toBe("0x7a69");
    expect(await wallet.request(switchTo("0x7a6a"))).toBeNull();
    expect(await wallet.request({ method: "eth_chainId" })).toBe("0x7a6a");
    expect(wallet.rpcUrl).toBe(second.url);
    // Already there: nothing changes, nothing is emitted.
    await wallet.request(switchTo("0x7a6a"));
    await wallet.request(switchTo("0x7a69"));
    expect(changes).toEqual(["0x7a6a", "0x7a69"]);
    expect(wallet.prompts).toBe(3);
  }, ANVIL_TEST_TIMEOUT_MS);

  it("answers 4902 for a chain it does not know, then adds it (checking the node's chain id) and switches", async () => {
    const wallet = new DevWallet(hexToBytes(ANVIL_KEY_0), { chains: { 31337: first.url } });
    const changes: unknown[] = [];
    wallet.on("chainChanged", (id) => changes.push(id));
    await expect(wallet.request(switchTo("0x7a6a"))).rejects.toMatchObject({ code: 4902 });
    // A node serving another chain is refused at once, not at the first send.
    await expect(wallet.request(add(first.url))).rejects.toMatchObject({ code: -32602, message: expect.stringContaining("serves chain 31337") });
    expect(wallet.chains).toEqual([31337]);
    expect(await wallet.request(add(second.url))).toBeNull();
    // Adding does not switch; the dapp asks for that.
    expect(await wallet.request({ method: "eth_chainId" })).toBe("0x7a69");
    expect(changes).toEqual([]);
    await wallet.request(switchTo("0x7a6a"));
    expect(await wallet.request({ method: "eth_chainId" })).toBe("0x7a6a");
    expect(changes).toEqual(["0x7a6a"]);
    expect(wallet.chains).toEqual([31337, 31338]);
  }, ANVIL_TEST_TIMEOUT_MS);

  it("refuses malformed switch and add parameters with -32602 (EIP-3085, EIP-3326)", async () => {
    const wallet = new DevWallet(hexToBytes(ANVIL_KEY_0), { chains: { 31337: first.url } });
    for (const chainId of [undefined, 31338, "31338", "0x07a6a", "0x", "0x0", "7a6a", "0xzz", "0x10000000000000"]) {
      await expect(wallet.request(switchTo(chainId as string)), `switch ${String(chainId)}`).rejects.toMatchObject({ code: -32602 });
      await expect(wallet.request(add(second.url, { chainId })), `add ${String(chainId)}`).rejects.toMatchObject({ code: -32602 });
    }
    const invalid: Record<string, unknown>[] = [
      { rpcUrls: undefined },
      { rpcUrls: [] },
      { rpcUrls: ["ws://127.0.0.1:8545"] },
      { rpcUrls: ["not a url"] },
      { rpcUrls: second.url },
      { chainName: "" },
      { chainName: 7 },
      { nativeCurrency: { name: "Ether", symbol: "E", decimals: 18 } },
      { nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 1.5 } },
      { nativeCurrency: { symbol: "ETH", decimals: 18 } },
      { blockExplorerUrls: ["javascript:alert(1)"] },
      { iconUrls: "https://example.com/icon.svg" },
    ];
    for (const extra of invalid) {
      await expect(wallet.request(add(second.url, extra)), JSON.stringify(extra)).rejects.toMatchObject({ code: -32602 });
    }
    await expect(wallet.request({ method: "wallet_addEthereumChain", params: [] })).rejects.toMatchObject({ code: -32602 });
    // A node that does not answer.
    await expect(wallet.request(add("http://127.0.0.1:9/"))).rejects.toMatchObject({ code: -32602 });
    expect(wallet.chains).toEqual([31337]);
  }, ANVIL_TEST_TIMEOUT_MS);

  it("rejects switching and adding with 4001 when told to", async () => {
    const wallet = new DevWallet(hexToBytes(ANVIL_KEY_0), { chains: { 31337: first.url, 31338: second.url } });
    wallet.rejectAll = true;
    await expect(wallet.request(switchTo("0x7a6a"))).rejects.toMatchObject({ code: 4001 });
    await expect(wallet.request(add(second.url))).rejects.toMatchObject({ code: 4001 });
    expect(await wallet.request({ method: "eth_chainId" })).toBe("0x7a69");
  }, ANVIL_TEST_TIMEOUT_MS);

  it("sends and reads on the current chain's node", async () => {
    const wallet = new DevWallet(hexToBytes(ANVIL_KEY_0), { chains: { 31337: first.url } });
    const send = () => wallet.request({ method: "eth_sendTransaction", params: [{ from: wallet.address, to: RECIPIENT, value: "0x1" }] }) as Promise<string>;
    const onFirst = await send();
    expect((await waitForReceipt(first.url, onFirst)).status).toBe("0x1");
    await wallet.request(add(second.url));
    await wallet.request(switchTo("0x7a6a"));
    const onSecond = await send();
    expect((await waitForReceipt(second.url, onSecond)).status).toBe("0x1");
    // Each transaction is on its own chain only, and reads follow the switch.
    expect(await rpcCall(first.url, "eth_getTransactionByHash", [onSecond])).toBeNull();
    expect(await wallet.request({ method: "eth_getTransactionByHash", params: [onFirst] })).toBeNull();
    expect(await wallet.request({ method: "eth_getTransactionByHash", params: [onSecond] })).toMatchObject({ chainId: "0x7a6a" });
    await wallet.request(switchTo("0x7a69"));
    expect(await wallet.request({ method: "eth_getTransactionByHash", params: [onFirst] })).toMatchObject({ chainId: "0x7a69" });
  }, ANVIL_TEST_TIMEOUT_MS);

  it("keeps the one-node form: a URL alone is chain 1's node; no node at all means chain 1 without one", () => {
    expect(new DevWallet(key(3), "http://127.0.0.1:1").chainId).toBe("0x1");
    expect(new DevWallet(key(3), "http://127.0.0.1:1").rpcUrl).toBe("http://127.0.0.1:1");
    expect(new DevWallet(key(3)).chainId).toBe("0x1");
    expect(new DevWallet(key(3)).rpcUrl).toBeUndefined();
    expect(new DevWallet(key(3), { chains: { 10: "http://a", 31338: "http://b" }, chainId: 31338 }).rpcUrl).toBe("http://b");
  });

  it("reads the injected script's config: chains, or one node for chain 1 (or chainId)", () => {
    expect(networkOf({ chains: { 31337: "http://a" }, chainId: 31337 })).toEqual({ chains: { 31337: "http://a" }, chainId: 31337 });
    expect(networkOf({ rpcUrl: "http://a" })).toEqual({ chains: { 1: "http://a" }, chainId: 1 });
    expect(networkOf({ rpcUrl: "http://a", chainId: 31337 })).toEqual({ chains: { 31337: "http://a" }, chainId: 31337 });
    expect(networkOf({})).toEqual({ chains: {}, chainId: 1 });
  });
});

// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from "vitest";
import { getWallets } from "@wallet-standard/app";
import { DEV_SWITCH, devnetNetworks, fetchDevnet, installDevSolanaWallet, installDevWallet, type Devnet } from "./devWallet";

// The dev wallet of tests/peers/dev-wallet.json, as devnet.json carries it.
const DEVNET: Devnet = {
  devWallet: "0xeee4E1bC283Ff3c3305d56a2D3f17398913755dC",
  devWalletKey: "0x938aebad6588b9f24117fde0f95d7836c7c0d2bf29559bce9c73de5f80e680f6",
  networks: {
    "eip155:31337": { chainId: 31337, rpcUrl: "http://127.0.0.1:40001" },
    "eip155:31338": { chainId: 31338, rpcUrl: "http://127.0.0.1:40002" },
  },
};

// The same devnet with its Solana peer (tests/peers/solana-dev-key.json's key).
const WITH_SOLANA: Devnet = {
  ...DEVNET,
  networks: {
    ...DEVNET.networks,
    "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1": {
      cluster: "devnet",
      rpcUrl: "http://127.0.0.1:40003",
      token: { address: "FcEvp9HB7FVro6bnsU38WcGyHnQ7DDbDnTBtGoRnB5gR", name: "Vestibule Demo SPL", symbol: "VDS", decimals: 6 },
    },
  },
  solanaWallet: "DfLZkegN9CjeTdnot8VD3Ga3xftbuB8VsHVY1iQAfQpb",
  solanaWalletKey: "42fd27d188a71d5402db7ef98482150036271486a07e919427150dedf7613389",
};

afterEach(() => {
  localStorage.clear();
  delete (window as { __devWallet?: unknown }).__devWallet;
  delete (window as { __devSolanaWallet?: unknown }).__devSolanaWallet;
  vi.unstubAllGlobals();
});

describe("the demo's dev wallet", () => {
  it("with a devnet: on by default, the devnet's funded key, on its first chain and knowing both", () => {
    const wallet = installDevWallet(new URLSearchParams(), DEVNET);
    expect(wallet?.address).toBe(DEVNET.devWallet);
    expect(wallet?.chainId).toBe("0x7a69");
    expect(wallet?.chains).toEqual([31337, 31338]);
    expect(wallet?.rpcUrl).toBe("http://127.0.0.1:40001");
  });

  it("stays off when the visitor switched it off, and leaves an injected wallet alone", () => {
    localStorage.setItem(DEV_SWITCH, "off");
    expect(installDevWallet(new URLSearchParams(), DEVNET)).toBeNull();
    localStorage.setItem(DEV_SWITCH, "on");
    Object.assign(window, { __devWallet: { injected: true } });
    expect(installDevWallet(new URLSearchParams(), DEVNET)).toBeNull();
  });

  it("without a devnet: off unless switched on, then a remembered random key on chain 1 with ?rpc=", () => {
    expect(installDevWallet(new URLSearchParams(), null)).toBeNull();
    localStorage.setItem(DEV_SWITCH, "on");
    const wallet = installDevWallet(new URLSearchParams("rpc=http://127.0.0.1:8545"), null);
    expect(wallet?.address).not.toBe(DEVNET.devWallet);
    expect(wallet?.rpcUrl).toBe("http://127.0.0.1:8545");
    expect(wallet?.chainId).toBe("0x1");
    delete (window as { __devWallet?: unknown }).__devWallet;
    expect(installDevWallet(new URLSearchParams(), null)?.address).toBe(wallet?.address);
  });

  it("gives the session the devnet's chains as custom networks", () => {
    expect(devnetNetworks(DEVNET)).toEqual([
      { caipNetworkId: "eip155:31337", name: "Devnet 31337", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: ["http://127.0.0.1:40001"], blockExplorers: [], testnet: true },
      { caipNetworkId: "eip155:31338", name: "Devnet 31338", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: ["http://127.0.0.1:40002"], blockExplorers: [], testnet: true },
    ]);
  });

  it("reads /devnet.json, and takes a 404 or an unreadable answer as no devnet", async () => {
    const answers = [new Response(JSON.stringify(DEVNET)), new Response("{}", { status: 404 }), new Response("not json")];
    const fetch = vi.fn(async () => answers.shift()!);
    vi.stubGlobal("fetch", fetch);
    expect(await fetchDevnet()).toEqual(DEVNET);
    expect(await fetchDevnet()).toBeNull();
    expect(await fetchDevnet()).toBeNull();
    expect(fetch).toHaveBeenCalledWith("/devnet.json", { cache: "no-store" });
  });

  it("leaves the Solana peer out of the EVM chains and the dev wallet's chains", () => {
    expect(devnetNetworks(WITH_SOLANA).map((n) => (typeof n === "string" ? n : n.caipNetworkId))).toEqual(["eip155:31337", "eip155:31338"]);
    expect(installDevWallet(new URLSearchParams(), WITH_SOLANA)?.chains).toEqual([31337, 31338]);
  });

  it("registers the devnet's funded dev Solana wallet, sending to the peer, when the page asks for its cluster", () => {
    expect(installDevSolanaWallet(new URLSearchParams(), WITH_SOLANA)).toBeNull();
    expect(installDevSolanaWallet(new URLSearchParams("solana=devnet"), DEVNET)).toBeNull();
    localStorage.setItem(DEV_SWITCH, "off");
    expect(installDevSolanaWallet(new URLSearchParams("solana=devnet"), WITH_SOLANA)).toBeNull();
    localStorage.removeItem(DEV_SWITCH);
    const wallet = installDevSolanaWallet(new URLSearchParams("solana=devnet"), WITH_SOLANA);
    expect(wallet?.address).toBe(WITH_SOLANA.solanaWallet);
    expect(wallet?.rpcUrl).toBe("http://127.0.0.1:40003");
    expect(wallet?.chains).toEqual(["solana:devnet"]);
    expect(getWallets().get()).toContain(wallet);
    // Once per page.
    expect(installDevSolanaWallet(new URLSearchParams("solana=devnet"), WITH_SOLANA)).toBeNull();
  });
});

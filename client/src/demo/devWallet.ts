// The demo's visible "dev wallet" switch: a development wallet that really signs, remembered in
// localStorage across reloads. With the gateway's devnet (`./scripts/run`, which serves
// /devnet.json; decision 0909) it is the devnet's funded wallet on both chains and is on unless the
// visitor switched it off; without one it has a random key and sends to `?rpc=<node URL>` if given.

import { secp256k1 } from "@noble/curves/secp256k1";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils";
import type { NetworkOption } from "../generated/NetworkOption";
import { DevWallet } from "../wallet/devWallet";

export const DEV_SWITCH = "vestibule:demo:devWallet";
export const DEV_KEY = "vestibule:demo:devWalletKey";
// The JSON-RPC node the dev wallet sends transactions to (`?rpc=http://127.0.0.1:8545`, remembered).
export const DEV_RPC = "vestibule:demo:devWalletRpc";
export const DEV_REJECTS = "vestibule:demo:devWalletRejects";

/** `/devnet.json` as tests/peers/scripts/devnet-setup.mjs writes it (the fields the demo reads). */
export interface Devnet {
  devWallet: string;
  devWalletKey: string;
  networks: Record<string, { chainId: number; rpcUrl: string; token?: { address: string; name: string; symbol: string; decimals: number } }>;
}

/** The gateway's devnet, or null when it runs without one (404) or cannot say. */
export async function fetchDevnet(): Promise<Devnet | null> {
  try {
    const response = await fetch("/devnet.json", { cache: "no-store" });
    if (!response.ok) return null;
    const devnet = (await response.json()) as Devnet;
    return typeof devnet.devWalletKey === "string" && devnet.networks && Object.keys(devnet.networks).length > 0 ? devnet : null;
  } catch {
    return null;
  }
}

/** The devnet's chains as the session's networks (the catalogue does not list local chains). */
export function devnetNetworks(devnet: Devnet): NetworkOption[] {
  return Object.entries(devnet.networks).map(([caipNetworkId, n]) => ({
    caipNetworkId,
    name: `Devnet ${n.chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: [n.rpcUrl],
    blockExplorers: [],
    testnet: true,
  }));
}

export function installDevWallet(params: URLSearchParams, devnet: Devnet | null): DevWallet | null {
  const rpc = params.get("rpc");
  if (rpc) localStorage.setItem(DEV_RPC, rpc);
  const choice = localStorage.getItem(DEV_SWITCH);
  // With a devnet, the dev wallet is the one wallet that holds anything there: on by default.
  if (choice !== "on" && !(devnet && choice !== "off")) return null;
  // A dev wallet injected into the page (as the end-to-end tests do) is the page's wallet.
  if ((window as { __devWallet?: unknown }).__devWallet) return null;
  let wallet: DevWallet;
  if (devnet) {
    const chains = Object.fromEntries(Object.values(devnet.networks).map((n) => [n.chainId, n.rpcUrl]));
    wallet = new DevWallet(hexToBytes(devnet.devWalletKey.replace(/^0x/, "")), { chains });
  } else {
    // The same key after a reload, so the visitor stays connected to the same account.
    let key = localStorage.getItem(DEV_KEY);
    if (!key) localStorage.setItem(DEV_KEY, (key = bytesToHex(secp256k1.utils.randomPrivateKey())));
    wallet = new DevWallet(hexToBytes(key.replace(/^0x/, "")), localStorage.getItem(DEV_RPC) ?? undefined);
  }
  wallet.rejectAll = localStorage.getItem(DEV_REJECTS) === "on";
  wallet.announce();
  return wallet;
}

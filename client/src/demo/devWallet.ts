// The demo's visible "dev wallet" switch: a development wallet that really signs, remembered in
// localStorage across reloads. With the gateway's devnet (`./scripts/run`, which serves
// /devnet.json; decision 0910) it is the devnet's funded wallet on both chains and is on unless the
// visitor switched it off; without one it has a random key and sends to `?rpc=<node URL>` if given.
// When the devnet has the local Solana peer and the page asks for that cluster (`?solana=devnet`),
// the dev Solana wallet (the devnet's funded key, sending to the peer) registers too.

import { secp256k1 } from "@noble/curves/secp256k1";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils";
import type { NetworkOption } from "../generated/NetworkOption";
import { DevWallet } from "../wallet/devWallet";
import { DevSolanaWallet } from "../wallet/solana/devSolanaWallet";
import { registerWallet } from "@wallet-standard/wallet";

export const DEV_SWITCH = "vestibule:demo:devWallet";
export const DEV_KEY = "vestibule:demo:devWalletKey";
// The JSON-RPC node the dev wallet sends transactions to (`?rpc=http://127.0.0.1:8545`, remembered).
export const DEV_RPC = "vestibule:demo:devWalletRpc";
export const DEV_REJECTS = "vestibule:demo:devWalletRejects";

export interface DevnetToken {
  address: string;
  name: string;
  symbol: string;
  decimals: number;
}

/** A network of the devnet: an anvil chain (`eip155:…`, with its chainId) or the Solana peer
 * (`solana:…`, with its cluster; its token's address is the demo mint). */
export interface DevnetNetwork {
  chainId?: number;
  cluster?: string;
  rpcUrl: string;
  token?: DevnetToken;
}

/** `/devnet.json` as tests/peers/scripts/devnet-setup.mjs writes it (the fields the demo reads). */
export interface Devnet {
  devWallet: string;
  devWalletKey: string;
  networks: Record<string, DevnetNetwork>;
  solanaWallet?: string;
  solanaWalletKey?: string;
}

/** The devnet's anvil chains. */
export function evmChains(devnet: Devnet): Array<[string, DevnetNetwork & { chainId: number }]> {
  return Object.entries(devnet.networks).flatMap(([id, n]) => (id.startsWith("eip155:") && typeof n.chainId === "number" ? [[id, { ...n, chainId: n.chainId }]] : []));
}

/** The devnet's Solana network (the local peer), if it has one. */
export function solanaNetwork(devnet: Devnet | null): [string, DevnetNetwork & { cluster: string }] | null {
  const found = Object.entries(devnet?.networks ?? {}).find(([id, n]) => id.startsWith("solana:") && typeof n.cluster === "string");
  return found ? [found[0], { ...found[1], cluster: found[1].cluster ?? "" }] : null;
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
  return evmChains(devnet).map(([caipNetworkId, n]) => ({
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
    const chains = Object.fromEntries(evmChains(devnet).map(([, n]) => [n.chainId, n.rpcUrl]));
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

/** The dev Solana wallet of the devnet's Solana peer, registered through the Wallet Standard, when
 * the page asks for the peer's cluster (`?solana=devnet`) and the dev wallet is not switched off;
 * null otherwise, or when a test injected one (`window.__devSolanaWallet`). */
export function installDevSolanaWallet(params: URLSearchParams, devnet: Devnet | null): DevSolanaWallet | null {
  const peer = solanaNetwork(devnet);
  if (!devnet?.solanaWalletKey || !peer || params.get("solana") !== peer[1].cluster) return null;
  if (localStorage.getItem(DEV_SWITCH) === "off") return null;
  if ((window as { __devSolanaWallet?: unknown }).__devSolanaWallet) return null;
  const wallet = new DevSolanaWallet(hexToBytes(devnet.solanaWalletKey.replace(/^0x/, "")), peer[1].rpcUrl, [`solana:${peer[1].cluster}`]);
  wallet.rejectAll = localStorage.getItem(DEV_REJECTS) === "on";
  Object.assign(window, { __devSolanaWallet: wallet });
  registerWallet(wallet);
  return wallet;
}

// The dev wallet as a script of its own (`dist/dev-wallet.js`): injected into a page, it creates a
// DevWallet, exposes it as `window.__devWallet` and announces it through EIP-6963, as a wallet
// extension would. Configured by `window.__devWalletConfig` when set before it runs:
//   { key?: hex private key (default: a random one),
//     chains?: { [chainId]: JSON-RPC node URL } (the chains it knows), chainId?: the one it starts on
//       (default: the first of chains),
//     rpcUrl?: a node for chain 1 (or for `chainId`) when `chains` is not given,
//     rejects?: boolean }

import { hexToBytes } from "@noble/hashes/utils";
import { DevWallet, type DevWalletOptions } from "./devWallet";

interface DevWalletConfig {
  key?: string;
  chains?: Record<string, string>;
  chainId?: number;
  rpcUrl?: string;
  rejects?: boolean;
}

/** The wallet's chains from the page's config: `chains` when given, else `rpcUrl` for one chain. */
export function networkOf(config: DevWalletConfig): DevWalletOptions {
  if (config.chains) return { chains: config.chains, chainId: config.chainId };
  const chainId = config.chainId ?? 1;
  return { chains: config.rpcUrl ? { [chainId]: config.rpcUrl } : {}, chainId };
}

const page = globalThis as unknown as { __devWallet?: DevWallet; __devWalletConfig?: DevWalletConfig; window?: unknown };
// Once per page, even if the script is included twice; only in a page (unit tests import networkOf).
if (page.window !== undefined && !page.__devWallet) {
  const config = page.__devWalletConfig ?? {};
  const network = networkOf(config);
  const wallet = config.key ? new DevWallet(hexToBytes(config.key.replace(/^0x/, "")), network) : DevWallet.random(network);
  wallet.rejectAll = config.rejects === true;
  page.__devWallet = wallet;
  wallet.announce();
}

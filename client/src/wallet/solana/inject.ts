// The dev Solana wallet as a script of its own (`dist/dev-solana-wallet.js`): injected into a page,
// it creates a DevSolanaWallet, exposes it as `window.__devSolanaWallet` and registers it through
// the Wallet Standard, as a wallet extension would. Configured by `window.__devSolanaWalletConfig`
// when set before it runs: { key?: hex ed25519 seed (default: a random one), rpcUrl?: the node it
// sends transactions to, rejects?: boolean, chains?: Wallet Standard chains (default: the three
// clusters) }.

import { hexToBytes } from "@noble/hashes/utils";
import type { IdentifierString } from "@wallet-standard/base";
import { registerWallet } from "@wallet-standard/wallet";
import { DevSolanaWallet, SOLANA_CHAINS } from "./devSolanaWallet";

interface DevSolanaWalletConfig {
  key?: string;
  rpcUrl?: string;
  rejects?: boolean;
  chains?: IdentifierString[];
}

const page = window as unknown as { __devSolanaWallet?: DevSolanaWallet; __devSolanaWalletConfig?: DevSolanaWalletConfig };
// Once per page, even if the script is included twice.
if (!page.__devSolanaWallet) {
  const config = page.__devSolanaWalletConfig ?? {};
  const seed = config.key ? hexToBytes(config.key.replace(/^0x/, "")) : undefined;
  const wallet = seed ? new DevSolanaWallet(seed, config.rpcUrl, config.chains ?? SOLANA_CHAINS) : DevSolanaWallet.random(config.rpcUrl);
  wallet.rejectAll = config.rejects === true;
  page.__devSolanaWallet = wallet;
  registerWallet(wallet);
}

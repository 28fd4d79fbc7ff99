// The dev wallet as a script of its own (`dist/dev-wallet.js`): injected into a page, it creates a
// DevWallet, exposes it as `window.__devWallet` and announces it through EIP-6963, as a wallet
// extension would. Configured by `window.__devWalletConfig` when set before it runs:
//   { key?: hex private key (default: a random one), rpcUrl?: JSON-RPC node, rejects?: boolean }

import { hexToBytes } from "@noble/hashes/utils";
import { DevWallet } from "./devWallet";

interface DevWalletConfig {
  key?: string;
  rpcUrl?: string;
  rejects?: boolean;
}

const page = window as unknown as { __devWallet?: DevWallet; __devWalletConfig?: DevWalletConfig };
// Once per page, even if the script is included twice.
if (!page.__devWallet) {
  const config = page.__devWalletConfig ?? {};
  const wallet = config.key ? new DevWallet(hexToBytes(config.key.replace(/^0x/, "")), config.rpcUrl) : DevWallet.random(config.rpcUrl);
  wallet.rejectAll = config.rejects === true;
  page.__devWallet = wallet;
  wallet.announce();
}

// The demo's visible "dev wallet" switch: a development wallet that really signs (and, with
// `?rpc=<node URL>`, sends transactions there), remembered in localStorage across reloads.

import { secp256k1 } from "@noble/curves/secp256k1";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils";
import { DevWallet } from "../wallet/devWallet";

export const DEV_SWITCH = "vestibule:demo:devWallet";
export const DEV_KEY = "vestibule:demo:devWalletKey";
// The JSON-RPC node the dev wallet sends transactions to (`?rpc=http://127.0.0.1:8545`, remembered).
export const DEV_RPC = "vestibule:demo:devWalletRpc";
export const DEV_REJECTS = "vestibule:demo:devWalletRejects";

export function installDevWallet(params: URLSearchParams): DevWallet | null {
  const rpc = params.get("rpc");
  if (rpc) localStorage.setItem(DEV_RPC, rpc);
  if (localStorage.getItem(DEV_SWITCH) !== "on") return null;
  // The same key after a reload, so the visitor stays connected to the same account.
  let key = localStorage.getItem(DEV_KEY);
  if (!key) localStorage.setItem(DEV_KEY, (key = bytesToHex(secp256k1.utils.randomPrivateKey())));
  const wallet = new DevWallet(hexToBytes(key.replace(/^0x/, "")), localStorage.getItem(DEV_RPC) ?? undefined);
  wallet.rejectAll = localStorage.getItem(DEV_REJECTS) === "on";
  wallet.announce();
  return wallet;
}

// Each route's title in the modal's header (spec section 2's views, and the routes of later features).

import type { Namespace } from "../generated/Namespace";
import type { View } from "../generated/View";

/** How each chain namespace is named to a visitor. */
export const NAMESPACE_NAMES: Record<Namespace, string> = {
  eip155: "Ethereum",
  solana: "Solana",
  polkadot: "Polkadot",
  bip122: "Bitcoin",
  cosmos: "Cosmos",
};

export const VIEW_TITLES: Record<View, string> = {
  Connect: "Connect wallet",
  AllWallets: "All wallets",
  ConnectingWallet: "Connecting",
  Networks: "Networks",
  Account: "Account",
  SwitchNetwork: "Switch network",
  SwitchActiveChain: "Switch chain",
  SIWXSignMessage: "Sign in with your wallet",
  ApproveTransaction: "Approve transaction",
  UpdateEmailWallet: "Update email",
  EmailVerifyOtp: "Confirm email",
  EmailVerifyDevice: "Register device",
  ConnectingSocial: "Connecting",
  ConnectingFarcaster: "Farcaster",
  UpdateEmailPrimaryOtp: "Confirm current email",
  UpdateEmailSecondaryOtp: "Confirm new email",
  Swap: "Swap",
  Send: "Send",
  Receive: "Receive",
};

/** A type guard over the generated `View` union: the router chart's states are views. */
export function isView(value: string): value is View {
  return Object.hasOwn(VIEW_TITLES, value);
}

// The view the router chart is in. Swap, Send and Receive are parts (loaded only when their feature
// is enabled and the view is opened; the server navigates to them only then); Networks and
// SwitchNetwork, SwitchActiveChain and ApproveTransaction are chunks of their own too (needed only
// after connecting or when switching namespace);
// so are the embedded wallet's views (email code, social wait, email change). A table rather than one
// Suspense per case: the modal chunk that carries this has little room.

import { Suspense, type ComponentType } from "react";
import type { View } from "../../generated/View";
import { useRoute } from "../../context/widgetContext";
import { PartFallback } from "../../parts/PartFallback/PartFallback";
import {
  ApproveTransaction,
  ConnectingFarcaster,
  ConnectingSocial,
  EmailVerifyOtp,
  Networks,
  Receive,
  Send,
  SwitchActiveChain,
  SwitchNetwork,
  Swap,
  UpdateEmailOtp,
  UpdateEmailWallet,
} from "../../parts/parts";
import { Account } from "../Account/Account";
import { Connect } from "../Connect/Connect";
import { ConnectingWallet } from "../ConnectingWallet/ConnectingWallet";
import { SIWXSignMessage } from "../SIWXSignMessage/SIWXSignMessage";

/** Each view: its component, and for a lazily loaded one what its loading mark names. */
const VIEWS: Record<View, [ComponentType, string?]> = {
  Connect: [Connect],
  AllWallets: [Connect],
  ConnectingWallet: [ConnectingWallet],
  Account: [Account],
  SIWXSignMessage: [SIWXSignMessage],
  SwitchActiveChain: [SwitchActiveChain, "network switch"],
  Swap: [Swap, "swap"],
  Networks: [Networks, "networks"],
  SwitchNetwork: [SwitchNetwork, "network switch"],
  Send: [Send, "send"],
  Receive: [Receive, "receive"],
  ApproveTransaction: [ApproveTransaction, "approval"],
  EmailVerifyOtp: [EmailVerifyOtp, "email code"],
  EmailVerifyDevice: [EmailVerifyOtp, "email code"],
  ConnectingSocial: [ConnectingSocial, "sign-in"],
  ConnectingFarcaster: [ConnectingFarcaster, "sign-in"],
  UpdateEmailWallet: [UpdateEmailWallet, "email code"],
  UpdateEmailPrimaryOtp: [UpdateEmailOtp, "email code"],
  UpdateEmailSecondaryOtp: [UpdateEmailOtp, "email code"],
};

export function CurrentView() {
  const [View, label] = VIEWS[useRoute()];
  return label ? (
    <Suspense fallback={<PartFallback label={label} />}>
      <View />
    </Suspense>
  ) : (
    <View />
  );
}

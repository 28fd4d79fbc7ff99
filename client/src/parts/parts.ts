// The widget's optional parts (spec section 2: email, socials, swaps, send, receive, on-ramp,
// activity and pay load only when the feature is enabled). Each is its own chunk, imported the
// first time a view draws it, which views do only when the session's options enable the feature.
// A feature issue adds its part here the same way.

import { lazy } from "react";

export const EmailLogin = lazy(() => import("./EmailLogin/EmailLogin").then((m) => ({ default: m.EmailLogin })));
export const SocialLogin = lazy(() => import("./SocialLogin/SocialLogin").then((m) => ({ default: m.SocialLogin })));
// The embedded wallet's email code step (EmailVerifyOtp and EmailVerifyDevice).
export const EmailVerifyOtp = lazy(() => import("./EmailVerifyOtp/EmailVerifyOtp").then((m) => ({ default: m.EmailVerifyOtp })));
// The embedded wallet's other views: the social popup's wait, the email change (form, then the codes
// to the current and the new address), and the Account's embedded user.
export const ConnectingSocial = lazy(() => import("./ConnectingSocial/ConnectingSocial").then((m) => ({ default: m.ConnectingSocial })));
// A Farcaster login: the relay's URL as a link and a QR code (no popup).
export const ConnectingFarcaster = lazy(() => import("./ConnectingFarcaster/ConnectingFarcaster").then((m) => ({ default: m.ConnectingFarcaster })));
export const UpdateEmailWallet = lazy(() => import("./UpdateEmailWallet/UpdateEmailWallet").then((m) => ({ default: m.UpdateEmailWallet })));
export const UpdateEmailOtp = lazy(() => import("./UpdateEmailOtp/UpdateEmailOtp").then((m) => ({ default: m.UpdateEmailOtp })));
export const EmbeddedAccount = lazy(() => import("./EmbeddedAccount/EmbeddedAccount").then((m) => ({ default: m.EmbeddedAccount })));
export const TokenBalances = lazy(() => import("./TokenBalances/TokenBalances").then((m) => ({ default: m.TokenBalances })));
export const Activity = lazy(() => import("./Activity/Activity").then((m) => ({ default: m.Activity })));
export const Swap = lazy(() => import("./Swap/Swap").then((m) => ({ default: m.Swap })));
export const Send = lazy(() => import("./Send/Send").then((m) => ({ default: m.Send })));
// Receive carries the QR library: only its chunk has it.
export const Receive = lazy(() => import("./Receive/Receive").then((m) => ({ default: m.Receive })));

// Views needed only once an account is connected and the visitor asks for another network: their
// own chunks too, so the modal chunk (on the path to the first Connect drawn) does not carry them.
export const Networks = lazy(() => import("../views/Networks/Networks").then((m) => ({ default: m.Networks })));
export const SwitchNetwork = lazy(() => import("../views/SwitchNetwork/SwitchNetwork").then((m) => ({ default: m.SwitchNetwork })));
// Asked only when a host or the visitor switches to a namespace with no account yet.
export const SwitchActiveChain = lazy(() => import("../views/SwitchActiveChain/SwitchActiveChain").then((m) => ({ default: m.SwitchActiveChain })));
// The host app's signing and sending requests: shown only once a wallet is connected and the host
// asks, so a chunk of its own as well.
export const ApproveTransaction = lazy(() =>
  import("../views/ApproveTransaction/ApproveTransaction").then((m) => ({ default: m.ApproveTransaction })),
);

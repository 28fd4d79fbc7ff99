// The view the router chart is in. Swap, Send and Receive are parts (loaded only when their feature
// is enabled and the view is opened; the server navigates to them only then); Networks and
// SwitchNetwork and ApproveTransaction are chunks of their own too (needed only after connecting);
// so are the embedded wallet's views (email code, social wait, email change).

import { Suspense } from "react";
import { useRoute } from "../../context/widgetContext";
import { PartFallback } from "../../parts/PartFallback/PartFallback";
import { ApproveTransaction, ConnectingSocial, EmailVerifyOtp, Networks, Receive, Send, SwitchNetwork, Swap, UpdateEmailOtp, UpdateEmailWallet } from "../../parts/parts";
import { Account } from "../Account/Account";
import { Connect } from "../Connect/Connect";
import { ConnectingWallet } from "../ConnectingWallet/ConnectingWallet";
import { SIWXSignMessage } from "../SIWXSignMessage/SIWXSignMessage";
import { SwitchActiveChain } from "../SwitchActiveChain/SwitchActiveChain";

export function CurrentView() {
  const route = useRoute();
  switch (route) {
    case "Connect":
    case "AllWallets":
      return <Connect />;
    case "ConnectingWallet":
      return <ConnectingWallet />;
    case "Account":
      return <Account />;
    case "SIWXSignMessage":
      return <SIWXSignMessage />;
    case "SwitchActiveChain":
      return <SwitchActiveChain />;
    case "Swap":
      return (
        <Suspense fallback={<PartFallback label="swap" />}>
          <Swap />
        </Suspense>
      );
    case "Networks":
      return (
        <Suspense fallback={<PartFallback label="networks" />}>
          <Networks />
        </Suspense>
      );
    case "SwitchNetwork":
      return (
        <Suspense fallback={<PartFallback label="network switch" />}>
          <SwitchNetwork />
        </Suspense>
      );
    case "Send":
      return (
        <Suspense fallback={<PartFallback label="send" />}>
          <Send />
        </Suspense>
      );
    case "Receive":
      return (
        <Suspense fallback={<PartFallback label="receive" />}>
          <Receive />
        </Suspense>
      );
    case "ApproveTransaction":
      return (
        <Suspense fallback={<PartFallback label="approval" />}>
          <ApproveTransaction />
        </Suspense>
      );
    case "EmailVerifyOtp":
    case "EmailVerifyDevice":
      return (
        <Suspense fallback={<PartFallback label="email code" />}>
          <EmailVerifyOtp />
        </Suspense>
      );
    case "ConnectingSocial":
      return (
        <Suspense fallback={<PartFallback label="social login" />}>
          <ConnectingSocial />
        </Suspense>
      );
    case "UpdateEmailWallet":
      return (
        <Suspense fallback={<PartFallback label="email update" />}>
          <UpdateEmailWallet />
        </Suspense>
      );
    case "UpdateEmailPrimaryOtp":
    case "UpdateEmailSecondaryOtp":
      return (
        <Suspense fallback={<PartFallback label="email code" />}>
          <UpdateEmailOtp step={route === "UpdateEmailPrimaryOtp" ? "primary" : "secondary"} />
        </Suspense>
      );
  }
}

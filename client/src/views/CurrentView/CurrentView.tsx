// The view the router chart is in. Swap is a part (loaded only when swaps are enabled and opened).

import { Suspense } from "react";
import { useRoute } from "../../context/widgetContext";
import { PartFallback } from "../../parts/PartFallback/PartFallback";
import { Swap } from "../../parts/parts";
import { Account } from "../Account/Account";
import { Connect } from "../Connect/Connect";
import { ConnectingWallet } from "../ConnectingWallet/ConnectingWallet";
import { SIWXSignMessage } from "../SIWXSignMessage/SIWXSignMessage";
import { SwitchActiveChain } from "../SwitchActiveChain/SwitchActiveChain";
import { Unavailable } from "../Unavailable/Unavailable";

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
    case "SwitchNetwork":
    case "Send":
    case "Receive":
    case "ApproveTransaction":
    case "UpdateEmailWallet":
      return <Unavailable view={route} />;
  }
}

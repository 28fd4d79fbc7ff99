// The wagmi example (`/wagmi.html`): a wagmi + viem dapp whose connect modal and provider are
// Vestibule (`vestibule()` connector). `?rpc=<node URL>` is the chain's JSON-RPC node (anvil in the
// tests); the page shows wagmi's connection (`useConnection`, formerly `useAccount`) and sends a
// transaction with `useSendTransaction`, then waits for its receipt.

import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { createConfig, http, useConnection, useConnectors, useConnect, useDisconnect, useSendTransaction, useWaitForTransactionReceipt, WagmiProvider } from "wagmi";
import { mainnet } from "wagmi/chains";
import { vestibule, VESTIBULE_CONNECTOR_ID } from "../wagmi/vestibule";
import "./wagmi.css";

const rpc = new URLSearchParams(location.search).get("rpc") ?? "http://127.0.0.1:8545";
const config = createConfig({
  chains: [mainnet],
  connectors: [vestibule({ projectId: "demo", options: { themeMode: "light" } })],
  transports: { [mainnet.id]: http(rpc) },
  // Only the Vestibule connector: wallets reach this page through the modal.
  multiInjectedProviderDiscovery: false,
});
const queryClient = new QueryClient();

function Dapp() {
  const connection = useConnection();
  const connectors = useConnectors();
  const connect = useConnect();
  const disconnect = useDisconnect();
  const send = useSendTransaction();
  const receipt = useWaitForTransactionReceipt({ hash: send.data });
  const connector = connectors.find((c) => c.id === VESTIBULE_CONNECTOR_ID);
  return (
    <main className="wagmi">
      <h1>wagmi + Vestibule</h1>
      <p>A wagmi dapp whose connect modal and provider are Vestibule.</p>
      <dl>
        <dt>wagmi status</dt>
        <dd data-testid="wagmi-status">{connection.status}</dd>
        <dt>Address</dt>
        <dd data-testid="wagmi-address">{connection.address ?? "—"}</dd>
        <dt>Chain id</dt>
        <dd data-testid="wagmi-chain">{connection.chainId ?? "—"}</dd>
        <dt>Connector</dt>
        <dd data-testid="wagmi-connector">{connection.connector?.name ?? "—"}</dd>
      </dl>
      {connection.status === "connected" ? (
        <p className="wagmi__actions">
          <button
            data-testid="wagmi-send"
            onClick={() => connection.address && send.mutate({ to: connection.address, value: 0n })}
          >
            Send 0 ETH to yourself
          </button>
          <button onClick={() => disconnect.mutate({})}>Disconnect</button>
        </p>
      ) : (
        <p>
          <button data-testid="wagmi-connect" disabled={!connector || connect.isPending} onClick={() => connector && connect.mutate({ connector })}>
            Connect with Vestibule
          </button>
        </p>
      )}
      <dl>
        <dt>Transaction</dt>
        <dd data-testid="wagmi-tx">{send.data ?? (send.error ? `error: ${send.error.message.split("\n")[0]}` : "—")}</dd>
        <dt>Receipt</dt>
        <dd data-testid="wagmi-receipt">{receipt.data ? receipt.data.status : receipt.isLoading ? "waiting" : "—"}</dd>
        <dt>Last connect error</dt>
        <dd data-testid="wagmi-connect-error">{connect.error ? connect.error.message.split("\n")[0] : "—"}</dd>
      </dl>
    </main>
  );
}

const root = document.getElementById("root");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <WagmiProvider config={config}>
        <QueryClientProvider client={queryClient}>
          <Dapp />
        </QueryClientProvider>
      </WagmiProvider>
    </StrictMode>,
  );
}

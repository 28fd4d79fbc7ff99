// The demo host app served at `/`: a small dapp page with a connect button, the address, chain and
// status, mirroring the server's session. A visible "dev wallet" switch adds a development wallet
// that really signs, for trying the flows without a browser wallet.

import { StrictMode, useState, useSyncExternalStore } from "react";
import { createRoot } from "react-dom/client";
import { hexToBytes, bytesToHex } from "@noble/hashes/utils";
import { secp256k1 } from "@noble/curves/secp256k1";
import { DevWallet } from "../wallet/devWallet";
import { createWidget } from "../widget";
import { createProvider } from "../provider";
import { truncateAddress } from "../views/views";
import { WidgetRoot } from "../views/WidgetRoot";

const DEV_SWITCH = "vestibule:demo:devWallet";
const DEV_KEY = "vestibule:demo:devWalletKey";
// The JSON-RPC node the dev wallet sends transactions to (`?rpc=http://127.0.0.1:8545`, remembered).
const DEV_RPC = "vestibule:demo:devWalletRpc";
const rpcParam = new URLSearchParams(location.search).get("rpc");
if (rpcParam) localStorage.setItem(DEV_RPC, rpcParam);
const devOn = localStorage.getItem(DEV_SWITCH) === "on";
if (devOn) {
  // The same key after a reload, so the visitor stays connected to the same account.
  let key = localStorage.getItem(DEV_KEY);
  if (!key) localStorage.setItem(DEV_KEY, (key = bytesToHex(secp256k1.utils.randomPrivateKey())));
  const wallet = new DevWallet(hexToBytes(key), localStorage.getItem(DEV_RPC) ?? undefined);
  wallet.rejectAll = localStorage.getItem("vestibule:demo:devWalletRejects") === "on";
  (window as unknown as { __devWallet: DevWallet }).__devWallet = wallet;
  wallet.announce();
}

const params = new URLSearchParams(location.search);
const scheme = location.protocol === "https:" ? "wss" : "ws";
const widget = createWidget({
  gatewayUrl: `${scheme}://${location.host}/ws`,
  projectId: params.get("projectId") ?? "demo",
  options: {
    themeMode: params.get("theme") === "light" ? "light" : "dark",
    // `?email=on&socials=google,x` turn on the email and social connect methods.
    ...(params.get("email") || params.get("socials")
      ? { features: { email: params.get("email") === "on", socials: (params.get("socials") ?? "").split(",").filter(Boolean) } }
      : {}),
    ...(params.get("siwx") ? { siwx: { required: params.get("siwx") === "required", signOutOnDisconnect: false } } : {}),
  } as never,
});
const provider = createProvider(widget);
(window as unknown as { __vestibule: unknown; __provider: unknown }).__vestibule = widget;
(window as unknown as { __provider: unknown }).__provider = provider;

/** A 0-value transaction to oneself through the host provider: the wallet signs, its node mines. */
async function sendTestTransaction(from: string): Promise<string> {
  return (await provider.request({ method: "eth_sendTransaction", params: [{ from, to: from, value: "0x0" }] })) as string;
}

let version = 0;
widget.subscribe(() => version++);

function App() {
  useSyncExternalStore(widget.subscribe, () => version);
  const state = widget.state();
  const ns = state?.connection.activeNamespace;
  const conn = ns ? state?.connection.namespaces[ns] : undefined;
  const [tx, setTx] = useState("—");
  return (
    <main style={{ font: "15px system-ui, sans-serif", maxWidth: 640, margin: "2rem auto" }}>
      <h1>Demo dapp</h1>
      <label>
        <input
          type="checkbox"
          checked={devOn}
          onChange={(e) => {
            localStorage.setItem(DEV_SWITCH, e.target.checked ? "on" : "off");
            location.reload();
          }}
        />{" "}
        dev wallet
      </label>
      <p>
        <button onClick={() => widget.open()} aria-label="Connect" data-testid="connect">
          {conn?.status === "connected" ? "Account" : "Connect"}
        </button>
      </p>
      <dl>
        <dt>Status</dt>
        <dd data-testid="status">{conn?.status ?? "disconnected"}</dd>
        <dt>Address</dt>
        <dd data-testid="address">{conn?.address ? truncateAddress(conn.address) : "—"}</dd>
        <dt>Chain</dt>
        <dd data-testid="chain">{conn?.network?.name ?? "—"}</dd>
        <dt>Last error</dt>
        <dd data-testid="error">{state?.connection.namespaces.eip155?.lastError ?? "—"}</dd>
        <dt>Signed in</dt>
        <dd data-testid="signed-in">{state && Object.keys(state.siwx.sessions).length > 0 ? "yes" : "no"}</dd>
        <dt>Last transaction</dt>
        <dd data-testid="tx" style={{ wordBreak: "break-all" }}>{tx}</dd>
      </dl>
      {conn?.status === "connected" && conn.address && ns === "eip155" && (
        <button
          data-testid="send-tx"
          onClick={() => {
            setTx("waiting for the wallet…");
            sendTestTransaction(conn.address!).then(setTx, (e: { code?: number; message?: string }) => setTx(`error ${e.code ?? ""}: ${e.message ?? e}`));
          }}
        >
          Send a test transaction (0 ETH to yourself)
        </button>
      )}
      <WidgetRoot widget={widget} />
    </main>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);

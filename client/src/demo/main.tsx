// The demo host app served at `/`: a small dapp page with a connect button, the address, chain and
// status, mirroring the server's session. A visible "dev wallet" switch adds a development wallet
// that really signs, for trying the flows without a browser wallet.

import { StrictMode, useSyncExternalStore } from "react";
import { createRoot } from "react-dom/client";
import { hexToBytes, bytesToHex } from "@noble/hashes/utils";
import { secp256k1 } from "@noble/curves/secp256k1";
import { DevWallet } from "../wallet/devWallet";
import { createWidget } from "../widget";
import { truncateAddress } from "../views/views";
import { WidgetRoot } from "../views/WidgetRoot";

const DEV_SWITCH = "vestibule:demo:devWallet";
const DEV_KEY = "vestibule:demo:devWalletKey";
const devOn = localStorage.getItem(DEV_SWITCH) === "on";
if (devOn) {
  // The same key after a reload, so the visitor stays connected to the same account.
  let key = localStorage.getItem(DEV_KEY);
  if (!key) localStorage.setItem(DEV_KEY, (key = bytesToHex(secp256k1.utils.randomPrivateKey())));
  const wallet = new DevWallet(hexToBytes(key));
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
    ...(params.get("siwx") ? { siwx: { required: params.get("siwx") === "required", signOutOnDisconnect: false } } : {}),
  } as never,
});
(window as unknown as { __vestibule: unknown }).__vestibule = widget;

let version = 0;
widget.subscribe(() => version++);

function App() {
  useSyncExternalStore(widget.subscribe, () => version);
  const state = widget.state();
  const ns = state?.connection.activeNamespace;
  const conn = ns ? state?.connection.namespaces[ns] : undefined;
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
      </dl>
      <WidgetRoot widget={widget} />
    </main>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);

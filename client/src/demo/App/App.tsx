// The demo dapp's page: a header with the connect button, the wallet's state as the session mirrors
// it, a test transaction through the host provider, the embed snippet, and links to the replay
// timeline and the other examples. The widget comes from the React entry (`VestibuleProvider`).

import { useCallback, useEffect, useState } from "react";
import { createInspection, debugHandle } from "../../core/debug";
import type { Widget, WidgetOptions } from "../../core/widget";
import { useVestibule, VestibuleProvider } from "../../react";
import { truncateAddress } from "../../views/Account/Account";
import { DEV_SWITCH, evmChains, solanaNetwork, type Devnet } from "../devWallet";
import "./App.css";

const SNIPPET = `<script src="https://your-gateway.example/vestibule.js"></script>
<script>
  const vestibule = Vestibule.create({ projectId: "your-project", themeMode: "dark" });
  document.querySelector("#connect").onclick = () =>
    vestibule.provider.request({ method: "eth_requestAccounts" });
</script>`;

function Dapp({ theme, devWallet, devnet }: { theme: "dark" | "light"; devWallet: boolean; devnet: Devnet | null }) {
  const { state, open, provider } = useVestibule();
  const ns = state?.connection.activeNamespace;
  const conn = ns ? state?.connection.namespaces[ns] : undefined;
  const connected = conn?.status === "connected";
  const [tx, setTx] = useState("—");
  const [copied, setCopied] = useState(false);
  const signedIn = state ? Object.keys(state.siwx.sessions).length > 0 : false;
  const sendTestTransaction = async (from: string) => {
    setTx("waiting for the wallet…");
    try {
      const hash = await provider?.request({ method: "eth_sendTransaction", params: [{ from, to: from, value: "0x0" }] });
      setTx(String(hash));
    } catch (e) {
      const code = e !== null && typeof e === "object" && "code" in e ? String(e.code) : "";
      setTx(`error ${code}: ${e instanceof Error ? e.message : String(e)}`);
    }
  };
  const otherTheme = theme === "dark" ? "light" : "dark";
  const themeHref = (() => {
    const p = new URLSearchParams(location.search);
    p.set("theme", otherTheme);
    return `?${p}`;
  })();
  return (
    <div className="demo">
      <header className="demo__header">
        <a className="demo__brand" href="/">
          <span className="demo__logo" aria-hidden="true" />
          Vestibule <span className="demo__tag">demo dapp</span>
        </a>
        <nav className="demo__nav" aria-label="Examples">
          <a href="/replay.html">Replay timeline</a>
          <a href="/embed-example.html">Script tag example</a>
          <a href="/wagmi.html">wagmi example</a>
          <a href={themeHref}>{otherTheme === "light" ? "Light" : "Dark"} theme</a>
        </nav>
        <button className="demo__connect" onClick={open} data-testid="connect">
          {connected && conn?.address ? truncateAddress(conn.address) : "Connect"}
        </button>
      </header>

      <main className="demo__main">
        <section className="demo__hero">
          <h1>A connect-wallet modal whose session lives on the server</h1>
          <p>
            Every click is a command to a session actor; the modal you see is the server's state, streamed as hash-checked diffs and mirrored here in
            XState. Reload the page mid-flow: the session resumes where it was.
          </p>
        </section>

        <div className="demo__grid">
          <section className="demo__card" aria-labelledby="wallet-title">
            <h2 id="wallet-title">Your wallet</h2>
            <dl className="demo__facts">
              <dt>Status</dt>
              <dd>
                <span className="demo__dot" data-on={connected} aria-hidden="true" />
                <span data-testid="status">{conn?.status ?? "disconnected"}</span>
              </dd>
              <dt>Address</dt>
              <dd data-testid="address" title={conn?.address ?? ""}>
                {conn?.address ? truncateAddress(conn.address) : "—"}
              </dd>
              <dt>Chain</dt>
              <dd data-testid="chain">{conn?.network?.name ?? "—"}</dd>
              <dt>Signed in</dt>
              <dd data-testid="signed-in">{signedIn ? "yes" : "no"}</dd>
              <dt>Last error</dt>
              <dd data-testid="error">{state?.connection.namespaces.eip155?.lastError ?? "—"}</dd>
            </dl>
          </section>

          <section className="demo__card" aria-labelledby="try-title">
            <h2 id="try-title">Try it</h2>
            <label className="demo__switch">
              <input
                type="checkbox"
                checked={devWallet}
                onChange={(e) => {
                  localStorage.setItem(DEV_SWITCH, e.target.checked ? "on" : "off");
                  location.reload();
                }}
              />
              <span>Dev wallet (a wallet in this page that really signs)</span>
            </label>
            {devnet ? (
              <p className="demo__hint" data-testid="devnet">
                Local devnet: chains {evmChains(devnet).map(([, n]) => n.chainId).join(" and ")}. The dev wallet holds ETH and{" "}
                {evmChains(devnet)[0]?.[1].token?.symbol ?? "the demo token"} on each: connect, send, and switch chains in the modal.
                {solanaNetwork(devnet) ? (
                  <>
                    {" "}
                    Solana: <a href="?solana=devnet">with the local Solana peer</a>, the Dev Solana Wallet holds SOL and{" "}
                    {solanaNetwork(devnet)?.[1].token?.symbol ?? "the demo SPL token"}.
                  </>
                ) : null}
              </p>
            ) : null}
            <p className="demo__hint">
              Sign-in: <a href="?siwx=optional">optional</a> · <a href="?siwx=required">required</a> · Email and socials:{" "}
              <a href="?email=on&amp;socials=google,x,discord">on</a>
            </p>
            {connected && conn?.address && ns === "eip155" ? (
              <button className="demo__button" data-testid="send-tx" onClick={() => void sendTestTransaction(conn.address ?? "")}>
                Send a test transaction (0 ETH to yourself)
              </button>
            ) : (
              <p className="demo__hint">Connect to send a test transaction.</p>
            )}
            <p className="demo__tx">
              Last transaction: <code data-testid="tx">{tx}</code>
            </p>
          </section>

          <section className="demo__card demo__card--wide" aria-labelledby="embed-title">
            <div className="demo__card-head">
              <h2 id="embed-title">Embed it</h2>
              <button
                className="demo__button demo__button--small"
                onClick={() => void navigator.clipboard?.writeText(SNIPPET).then(() => setCopied(true), () => setCopied(false))}
              >
                {copied ? "Copied" : "Copy"}
              </button>
            </div>
            <pre className="demo__code" tabIndex={0} aria-label="Embed snippet">
              <code>{SNIPPET}</code>
            </pre>
            <p className="demo__hint">
              The script is a small loader: it opens the session's socket at once and loads the modal's code when it is first needed. React apps use{" "}
              <code>VestibuleProvider</code>, wagmi apps the Vestibule connector.
            </p>
          </section>
        </div>
      </main>
      <footer className="demo__footer">
        Sessions are replayable: open the <a href="/replay.html">replay timeline</a> with the gateway's admin token.
      </footer>
    </div>
  );
}

export function App({
  widgetOptions,
  theme,
  devWallet,
  devnet = null,
}: {
  widgetOptions: WidgetOptions;
  theme: "dark" | "light";
  devWallet: boolean;
  devnet?: Devnet | null;
}) {
  const [inspection] = useState(createInspection);
  // The debug handle and the host provider, for tests and developers.
  const onWidget = useCallback(
    (widget: Widget | null) => {
      Object.assign(window, { __vestibule: widget ? debugHandle(widget, inspection) : undefined });
    },
    [inspection],
  );
  return (
    <VestibuleProvider options={{ ...widgetOptions, inspect: inspection.inspect }} onWidget={onWidget}>
      <ProviderHandle />
      <Dapp theme={theme} devWallet={devWallet} devnet={devnet} />
    </VestibuleProvider>
  );
}

function ProviderHandle() {
  const { provider, solana } = useVestibule();
  useEffect(() => {
    Object.assign(window, { __provider: provider, __solana: solana });
  }, [provider, solana]);
  return null;
}

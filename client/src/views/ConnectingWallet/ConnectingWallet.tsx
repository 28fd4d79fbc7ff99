// While the wallet is asked to connect: which wallet, and where to continue.

import { useSessionSelector } from "../../context/widgetContext";
import { Spinner } from "../../components/Spinner/Spinner";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import css from "./ConnectingWallet.css?inline";

export function ConnectingWallet() {
  const name = useSessionSelector((s) => {
    const id = s.router.stack[s.router.stack.length - 1]?.params?.connectorId;
    return s.connection.connectors.find((c) => c.id === id)?.name;
  });
  return (
    <section className="vst-connecting" aria-label="Connecting" aria-busy="true">
      <Stylesheet id="connecting" css={css} />
      <Spinner size="large" />
      <p className="vst-connecting__title">Continue in {name ?? "your wallet"}…</p>
      <p className="vst-muted">Accept the connection request in the wallet.</p>
    </section>
  );
}

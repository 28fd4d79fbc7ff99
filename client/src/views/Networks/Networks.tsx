// The Networks view (spec §2, §4 Network switch paths): the session's networks of the active
// account's namespace (eip155, or solana: a Solana account's cluster is the session's to move),
// the current one marked. Choosing another sends `SwitchNetwork`; for an EVM browser wallet the
// server asks the wallet and shows SwitchNetwork while it is pending. An account on a chain outside the session's networks is on the synthetic
// unsupported network, and the server brings the visitor here to pick one. With the host's
// `enableNetworkSwitch` off, the list only informs: the switch has to be made in the wallet. A
// network the account's wallet does not list (`signableNetworks`, a Solana wallet's chains) is
// shown but cannot be chosen: the server would refuse it.

import type { SessionState } from "../../generated/SessionState";
import { useRegion, useSessionSelector, useWidget } from "../../context/widgetContext";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import css from "./Networks.css?inline";

export function Networks() {
  const widget = useWidget();
  // The active account's namespace: eip155, or solana (whose cluster the session moves itself).
  const namespaceOf = (s: SessionState) => (s.connection.activeNamespace === "solana" ? "solana" : "eip155");
  const networks = useSessionSelector(
    (s) => s.networks.filter((n) => n.caipNetworkId.startsWith(`${namespaceOf(s)}:`)),
    (a, b) => a?.map((n) => n.caipNetworkId).join() === b?.map((n) => n.caipNetworkId).join(),
  );
  const current = useSessionSelector((s) => s.connection.namespaces[namespaceOf(s)]?.network) ?? null;
  const connected = useSessionSelector((s) => s.connection.namespaces[namespaceOf(s)]?.status === "connected") ?? false;
  const signable = useSessionSelector((s) => s.connection.namespaces[namespaceOf(s)]?.signableNetworks) ?? null;
  const enabled = useSessionSelector((s) => s.options.enableNetworkSwitch) ?? false;
  const switching = useRegion("networkSwitch");
  const busy = switching === "switching" || switching === "adding";
  const canGoBack = useSessionSelector((s) => s.router.stack.length > 1) ?? false;
  const unsupported = current !== null && !current.supported;
  return (
    <section className="vst-networks" aria-label="Networks" data-testid="networks">
      <Stylesheet id="networks" css={css} />
      {unsupported && (
        <p className="vst-networks__unsupported" role="alert" data-testid="networks-unsupported">
          Your wallet is on {current.name}, which this app does not support. {enabled ? "Switch to one of these networks." : "Switch to one of these networks in your wallet."}
        </p>
      )}
      {!enabled && !unsupported && <p className="vst-muted">Switch networks in your wallet.</p>}
      <ul className="vst-networks__list" aria-label="Networks">
        {(networks ?? []).map((n) => {
          const isCurrent = current?.caipNetworkId === n.caipNetworkId;
          const walletLacks = signable !== null && !signable.includes(n.caipNetworkId);
          return (
            <li key={n.caipNetworkId}>
              <button
                type="button"
                className="vst-button vst-networks__network"
                aria-current={isCurrent ? "true" : undefined}
                data-network={n.caipNetworkId}
                disabled={!enabled || !connected || busy || walletLacks}
                onClick={() => widget.send({ type: "SwitchNetwork", network: n.caipNetworkId })}
              >
                <span className="vst-networks__mark" aria-hidden="true">
                  {n.name.slice(0, 1)}
                </span>
                <span className="vst-networks__name">{n.name}</span>
                {n.testnet && <span className="vst-networks__badge">Testnet</span>}
                {walletLacks && <span className="vst-networks__badge">Not in your wallet</span>}
                {isCurrent && <span className="vst-networks__current">Connected</span>}
              </button>
            </li>
          );
        })}
      </ul>
      {canGoBack && (
        <button type="button" className="vst-button" data-variant="quiet" onClick={() => widget.send({ type: "GoBack" })}>
          Back
        </button>
      )}
    </section>
  );
}

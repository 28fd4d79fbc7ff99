// The SwitchNetwork view (spec §2, §4, §8): shown by the server while the connected wallet is asked
// to switch chains, or to add the chain first when it answered 4902 (it did not know it). The
// networkSwitch chart says which; a failure shows the wallet's error as the server words it, with
// Retry (`RetrySwitchNetwork`, the same target again) and Back to the networks.

import { useRegion, useSessionSelector, useWidget } from "../../context/widgetContext";
import { Spinner } from "../../components/Spinner/Spinner";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import css from "./SwitchNetwork.css?inline";

export function SwitchNetwork() {
  const widget = useWidget();
  const status = useRegion("networkSwitch");
  const target = useSessionSelector((s) => s.networks.find((n) => n.caipNetworkId === s.networkSwitch.target)?.name ?? s.networkSwitch.target);
  const error = useSessionSelector((s) => s.networkSwitch.error);
  const code = useSessionSelector((s) => s.networkSwitch.code);
  const canGoBack = useSessionSelector((s) => s.router.stack.length > 1) ?? false;
  const name = target ?? "the network";
  return (
    <section className="vst-switch-network" aria-label="Switch network" data-testid="switch-network" data-status={status}>
      <Stylesheet id="switch-network" css={css} />
      <span className="vst-switch-network__mark" aria-hidden="true">
        {status === "failed" ? "!" : <Spinner size="large" />}
      </span>
      <h3 className="vst-switch-network__title">
        {status === "adding" ? `Add ${name}` : status === "failed" ? `Could not switch to ${name}` : `Switch to ${name}`}
      </h3>
      {status === "switching" && (
        <p className="vst-muted" role="status">
          Approve the switch to {name} in your wallet.
        </p>
      )}
      {status === "adding" && (
        <p className="vst-muted" role="status">
          Your wallet does not know {name} yet. Approve adding it in your wallet; the switch follows.
        </p>
      )}
      {status === "failed" && (
        <p className="vst-switch-network__error" role="alert" data-testid="switch-network-error">
          {error ?? "The wallet did not switch"}
          {code !== null && code !== undefined && <span className="vst-muted"> (code {code})</span>}
        </p>
      )}
      {status === "idle" && <p className="vst-muted">No network switch is pending.</p>}
      <div className="vst-switch-network__actions">
        {canGoBack && (
          <button type="button" className="vst-button" data-variant="quiet" onClick={() => widget.send({ type: "GoBack" })}>
            Back
          </button>
        )}
        {status === "failed" && (
          <button type="button" className="vst-button" data-variant="primary" onClick={() => widget.send({ type: "RetrySwitchNetwork" })}>
            Retry
          </button>
        )}
      </div>
    </section>
  );
}

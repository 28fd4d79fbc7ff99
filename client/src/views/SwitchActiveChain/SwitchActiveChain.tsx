// SwitchActiveChain (spec section 2): the visitor asked for a chain namespace where no account is
// connected. The view names the namespace and network of its params and offers to connect a wallet
// there (`ConfirmSwitchActiveChain`: the namespace becomes active and the view goes to where the
// params say, Connect), or to go back.

import { useId } from "react";
import { useSessionSelector, useWidget } from "../../context/widgetContext";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import { NAMESPACE_NAMES } from "../titles";
import css from "./SwitchActiveChain.css?inline";

export function SwitchActiveChain() {
  const widget = useWidget();
  const params = useSessionSelector((s) => s.router.stack.at(-1)?.params);
  const networkName = useSessionSelector((s) => s.networks.find((n) => n.caipNetworkId === params?.network)?.name);
  const canGoBack = useSessionSelector((s) => s.router.stack.length > 1) ?? false;
  const id = useId();
  const namespace = params?.switchToChain;
  const chain = namespace ? NAMESPACE_NAMES[namespace] : "another chain";
  const a = /^[AEIOU]/.test(chain) ? "an" : "a";
  return (
    <section className="vst-switch-chain" aria-labelledby={`${id}-title`} data-testid="switch-active-chain" data-namespace={namespace ?? ""}>
      <Stylesheet id="switch-active-chain" css={css} />
      <span className="vst-switch-chain__mark" data-namespace={namespace ?? ""} aria-hidden="true">
        {chain.slice(0, 1)}
      </span>
      <h3 id={`${id}-title`} className="vst-switch-chain__title">
        Switch to {chain}
      </h3>
      <p className="vst-muted vst-switch-chain__text" data-testid="switch-active-chain-network">
        No {chain} account is connected{networkName ? ` for ${networkName}` : ""}. Connect {a} {chain} wallet to use it; your other accounts stay
        connected.
      </p>
      <div className="vst-switch-chain__actions">
        <button
          type="button"
          className="vst-button"
          data-variant="quiet"
          onClick={() => widget.send(canGoBack ? { type: "GoBack" } : { type: "CloseModal" })}
        >
          {canGoBack ? "Back" : "Cancel"}
        </button>
        <button type="button" className="vst-button" data-variant="primary" onClick={() => widget.send({ type: "ConfirmSwitchActiveChain" })}>
          Connect {a} {chain} wallet
        </button>
      </div>
    </section>
  );
}

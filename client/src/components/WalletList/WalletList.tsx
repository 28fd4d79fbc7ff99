// The wallet connect method: the connector groups the server derived, in its order and only when
// they have entries (spec section 2), each wallet a button that selects its connector.

import type { ConnectorGroup } from "../../generated/ConnectorGroup";
import type { ConnectorGroupView } from "../../generated/ConnectorGroupView";
import { useWidget } from "../../context/widgetContext";
import { Stylesheet } from "../Stylesheet/Stylesheet";
import css from "./WalletList.css?inline";

const GROUP_TITLES: Record<ConnectorGroup, string> = {
  walletConnect: "WalletConnect",
  recent: "Recent",
  injected: "Installed",
  featured: "Featured",
  custom: "More wallets",
  external: "External",
  recommended: "Recommended",
};

function WalletMark({ name, icon }: { name: string; icon: string | null }) {
  if (icon) return <img className="vst-wallet__icon" src={icon} alt="" width={28} height={28} />;
  return (
    <span className="vst-wallet__icon" data-placeholder="" aria-hidden="true">
      {name.slice(0, 1).toUpperCase()}
    </span>
  );
}

export function WalletList({ groups }: { groups: ConnectorGroupView[] }) {
  const widget = useWidget();
  if (groups.length === 0) {
    return (
      <p className="vst-wallets__empty vst-muted">
        <Stylesheet id="wallet-list" css={css} />
        No wallet found in this browser.
      </p>
    );
  }
  return (
    <div className="vst-wallets">
      <Stylesheet id="wallet-list" css={css} />
      {groups.map((g) => (
        <div key={g.group} role="group" aria-label={GROUP_TITLES[g.group]} data-connector-group={g.group} className="vst-wallets__group">
          <h3 className="vst-wallets__title">{GROUP_TITLES[g.group]}</h3>
          {g.entries.map((e) => (
            <button
              key={e.walletId}
              type="button"
              className="vst-button vst-wallet"
              disabled={!e.connectorId}
              onClick={() => e.connectorId && widget.send({ type: "SelectConnector", connectorId: e.connectorId })}
            >
              <WalletMark name={e.name} icon={e.icon} />
              {/* The name is the visible text, read as "Connect <wallet>" (WCAG 2.5.3: label in name). */}
              <span className="vst-wallet__name">
                <span className="vst-visually-hidden">Connect </span>
                {e.name}
              </span>
              {e.namespaces.includes("solana") && <span className="vst-wallet__badge" data-namespace="solana">Solana</span>}
              {!e.installed && <span className="vst-wallet__badge">Not installed</span>}
            </button>
          ))}
        </div>
      ))}
    </div>
  );
}

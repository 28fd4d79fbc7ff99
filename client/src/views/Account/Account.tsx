// The Account view: in a multichain session the chain namespaces to switch between, the active
// account's address (first 4 and last 6 characters, spec section 5), its native balance, its network
// (a button to the Networks view when the host enables network switching), the wallet features
// (Receive, Send; in `walletFeaturesOrder`; Send on the namespaces that have it, eip155 and solana), the tabs (Tokens, NFTs, Activity; Activity only with
// the activity feature on a namespace that has it, spec section 9: eip155, as a part) and
// Disconnect (the active namespace's connection). With the embedded wallet (connector auth), its user
// (a part: parts/EmbeddedAccount).

import { Suspense, useEffect, useId, useState } from "react";
import { DISPLAY } from "../../generated/constants";
import type { WalletFeature } from "../../generated/WalletFeature";
import { useSessionSelector, useWidget } from "../../context/widgetContext";
import { NamespaceSwitch } from "../../components/NamespaceSwitch/NamespaceSwitch";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import { PartFallback } from "../../parts/PartFallback/PartFallback";
import { Activity, EmbeddedAccount, TokenBalances } from "../../parts/parts";
import { EMBEDDED_CONNECTOR } from "../../core/effects/secureFrameHost";
import css from "./Account.css?inline";

/** Spec: an address shows its first 4 and last 6 characters. */
export function truncateAddress(address: string): string {
  const { addressHeadChars: head, addressTailChars: tail } = DISPLAY;
  return address.length > head + tail + 2 ? `${address.slice(0, head)}…${address.slice(-tail)}` : address;
}

/** One of eight gradients for the avatar, picked from the address. */
function avatarOf(address: string): number {
  let h = 0;
  for (const c of address.toLowerCase()) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return h % 8;
}

/** Where the connected account's balances can come from, as the server decides it. */
export type BalancesSource = "served" | "unsupported" | "unserved" | "namespace";

/** Mirrors the server's rule (`SessionState::chain_supported`): balances are fetched only for an
 * account of a namespace with balances (spec section 9: eip155 and solana) on one of the session's
 * networks that the chain service serves. */
export function useBalancesSource(): BalancesSource | undefined {
  return useSessionSelector((s): BalancesSource => {
    const ns = s.connection.activeNamespace;
    const network = ns && s.connection.activeFeatures.balance ? s.connection.namespaces[ns]?.network : null;
    if (!network) return "namespace";
    if (!network.supported) return "unsupported";
    return s.chainService.networks.includes(network.caipNetworkId) ? "served" : "unserved";
  });
}

export function usd(value: string): string {
  return `$${value}`;
}

type Tab = "Tokens" | "NFTs" | "Activity";

/** Spec section 9's default order of the wallet features. */
const FEATURES_ORDER: WalletFeature[] = ["onramp", "swaps", "receive", "send"];
/** The wallet features this widget has views for (on-ramp and swaps are not built yet). */
const FEATURE_VIEWS = { receive: "Receive", send: "Send" } as const;
type Built = keyof typeof FEATURE_VIEWS;
const isBuilt = (f: WalletFeature): f is Built => Object.hasOwn(FEATURE_VIEWS, f);

/** The wallet feature buttons, in the host's order: Send only for an account of a namespace with
 * transfers (spec section 9: eip155 and solana, the server's `activeFeatures`), Receive for any
 * connected account. */
function useWalletFeatures(): Built[] {
  return (
    useSessionSelector(
      (s) => {
        const f = s.options.features;
        const enabled: Record<Built, boolean> = {
          receive: f.receive,
          send: f.send && s.connection.activeFeatures.send,
        };
        return (f.walletFeaturesOrder ?? FEATURES_ORDER).filter(isBuilt).filter((x) => enabled[x]);
      },
      (a, b) => a?.join() === b?.join(),
    ) ?? []
  );
}

export function Account() {
  const widget = useWidget();
  const conn = useSessionSelector((s) => (s.connection.activeNamespace ? s.connection.namespaces[s.connection.activeNamespace] : undefined));
  const namespace = useSessionSelector((s) => s.connection.activeNamespace);
  const activity = useSessionSelector((s) => s.options.features.activity && s.connection.activeFeatures.activity) ?? false;
  const tabs: Tab[] = activity ? ["Tokens", "NFTs", "Activity"] : ["Tokens", "NFTs"];
  // Which tab shows is this page's own concern (the session has no state for it).
  const [chosen, setTab] = useState<Tab>("Tokens");
  const tab = tabs.includes(chosen) ? chosen : "Tokens";
  const id = useId();
  const address = conn?.address ?? null;
  const features = useWalletFeatures();
  const source = useBalancesSource();
  const native = useSessionSelector((s) => s.balances.native);
  const totalUsd = useSessionSelector((s) => s.balances.totalUsd);
  const canSwitch = useSessionSelector((s) => s.options.enableNetworkSwitch && (s.connection.activeNamespace === "eip155" || s.connection.activeNamespace === "solana")) ?? false;
  const network = conn?.network ?? null;
  // Spec section 8: balances are kept 30 s and a failure blocks a retry 30 s; the server applies
  // both, so asking whenever the view shows is safe.
  useEffect(() => {
    if (source === "served") widget.send({ type: "RefreshBalances" });
  }, [widget, source, address, network?.caipNetworkId]);
  return (
    <section className="vst-account" aria-label="Account">
      <Stylesheet id="account" css={css} />
      <NamespaceSwitch />
      <div className="vst-account__identity">
        <span className="vst-account__avatar" data-avatar={address ? avatarOf(address) : 0} aria-hidden="true" />
        <p className="vst-account__address" data-testid="account-address" title={address ?? ""}>
          {address ? truncateAddress(address) : "Not connected"}
        </p>
        {conn?.connectorId === EMBEDDED_CONNECTOR && (
          <Suspense>
            <EmbeddedAccount />
          </Suspense>
        )}
        {source === "served" && native && (
          <p className="vst-account__balance" data-testid="account-balance" title={`${native.quantity} ${native.symbol}`}>
            {native.display} {native.symbol}
            {totalUsd !== null && totalUsd !== undefined && <span className="vst-muted vst-account__fiat"> · {usd(totalUsd)}</span>}
          </p>
        )}
        {canSwitch ? (
          <button
            type="button"
            className="vst-account__network"
            data-testid="account-network"
            data-supported={network?.supported ?? true}
            aria-label={`Network: ${network?.name ?? "none"}. Switch network`}
            onClick={() => widget.send({ type: "Navigate", view: "Networks" })}
          >
            {network?.name ?? ""}
          </button>
        ) : (
          <p className="vst-account__network vst-muted" data-testid="account-network">
            {network?.name ?? ""}
          </p>
        )}
      </div>
      {features.length > 0 && (
        <div className="vst-account__features" role="group" aria-label="Wallet features">
          {features.map((f) => (
            <button key={f} type="button" className="vst-button" onClick={() => widget.send({ type: "Navigate", view: FEATURE_VIEWS[f] })}>
              {FEATURE_VIEWS[f]}
            </button>
          ))}
        </div>
      )}
      <div role="tablist" aria-label="Account tabs" className="vst-account__tabs">
        {tabs.map((t) => (
          <button
            key={t}
            type="button"
            id={`${id}-tab-${t}`}
            role="tab"
            className="vst-account__tab"
            aria-selected={t === tab}
            aria-controls={`${id}-panel`}
            tabIndex={t === tab ? 0 : -1}
            onClick={() => setTab(t)}
            onKeyDown={(e) => {
              if (e.key !== "ArrowRight" && e.key !== "ArrowLeft") return;
              const next = tabs[(tabs.indexOf(t) + (e.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length];
              setTab(next);
              e.currentTarget.parentElement?.querySelector<HTMLElement>(`[id="${id}-tab-${next}"]`)?.focus();
            }}
          >
            {t}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`${id}-panel`} aria-labelledby={`${id}-tab-${tab}`} className="vst-account__panel" tabIndex={0}>
        {tab === "Activity" ? (
          <Suspense fallback={<PartFallback label="activity" />}>
            <Activity />
          </Suspense>
        ) : tab === "Tokens" ? (
          <Suspense fallback={<PartFallback label="balances" />}>
            <TokenBalances />
          </Suspense>
        ) : (
          <p className="vst-muted">NFTs are not available on this deployment yet.</p>
        )}
      </div>
      <button type="button" className="vst-button" data-variant="quiet" onClick={() => widget.send(namespace ? { type: "Disconnect", namespace } : { type: "Disconnect" })}>
        Disconnect
      </button>
    </section>
  );
}

// The Account view: in a multichain session the chain namespaces to switch between, the active
// account's address (first 4 and last 6 characters, spec section 5), its network, the tabs (Tokens,
// NFTs, Activity; Activity only with the activity feature on a namespace that has it, spec section
// 9: eip155, as a part) and Disconnect (the active namespace's connection).

import { Suspense, useId, useState } from "react";
import { DISPLAY } from "../../generated/constants";
import { useSessionSelector, useWidget } from "../../context/widgetContext";
import { NamespaceSwitch } from "../../components/NamespaceSwitch/NamespaceSwitch";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import { PartFallback } from "../../parts/PartFallback/PartFallback";
import { Activity } from "../../parts/parts";
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

type Tab = "Tokens" | "NFTs" | "Activity";
const UNAVAILABLE: Record<Exclude<Tab, "Activity">, string> = {
  Tokens: "Token balances are not available on this deployment yet.",
  NFTs: "NFTs are not available on this deployment yet.",
};

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
  return (
    <section className="vst-account" aria-label="Account">
      <Stylesheet id="account" css={css} />
      <NamespaceSwitch />
      <div className="vst-account__identity">
        <span className="vst-account__avatar" data-avatar={address ? avatarOf(address) : 0} aria-hidden="true" />
        <p className="vst-account__address" data-testid="account-address" title={address ?? ""}>
          {address ? truncateAddress(address) : "Not connected"}
        </p>
        <p className="vst-account__network vst-muted" data-testid="account-network">
          {conn?.network?.name ?? ""}
        </p>
      </div>
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
        ) : (
          <p className="vst-muted">{UNAVAILABLE[tab]}</p>
        )}
      </div>
      <button type="button" className="vst-button" data-variant="quiet" onClick={() => widget.send(namespace ? { type: "Disconnect", namespace } : { type: "Disconnect" })}>
        Disconnect
      </button>
    </section>
  );
}

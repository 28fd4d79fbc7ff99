// The Connect view: the connect methods in the order the server derived (spec section 2: email,
// social, wallet; wallet first when an injected or announced wallet is shown; `connectMethodsOrder`
// overrides), each only when enabled. Email and social are parts, loaded only when enabled. Sent
// here by SwitchActiveChain, the route names a namespace (`switchToChain`): the wallet list shows
// only that namespace's wallets, with a way back to all of them (Connect again without it).

import { Fragment, Suspense } from "react";
import { useSessionSelector, useWidget } from "../../context/widgetContext";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import { WalletList } from "../../components/WalletList/WalletList";
import { PartFallback } from "../../parts/PartFallback/PartFallback";
import { EmailLogin, SocialLogin } from "../../parts/parts";
import { NAMESPACE_NAMES } from "../titles";
import css from "./Connect.css?inline";

export function Connect() {
  const view = useSessionSelector((s) => s.connectView);
  const socials = useSessionSelector((s) => s.options.features.socials) ?? [];
  const namespace = useSessionSelector((s) => s.router.stack.at(-1)?.params?.switchToChain);
  const widget = useWidget();
  if (!view) return null;
  const groups = namespace
    ? view.groups.map((g) => ({ ...g, entries: g.entries.filter((e) => e.namespaces.includes(namespace)) })).filter((g) => g.entries.length > 0)
    : view.groups;
  return (
    <section className="vst-connect" aria-label="Connect wallet">
      <Stylesheet id="connect" css={css} />
      {view.methods.map((method, i) => (
        <Fragment key={method}>
          {i > 0 && (
            <div className="vst-connect__divider" aria-hidden="true">
              or
            </div>
          )}
          {/* Each method's slot is there at once, in order, while a part's chunk loads. */}
          <div className="vst-connect__method" data-connect-method={method}>
            {method === "email" && (
              <Suspense fallback={<PartFallback label="email login" />}>
                <EmailLogin />
              </Suspense>
            )}
            {method === "social" && (
              <Suspense fallback={<PartFallback label="social login" />}>
                <SocialLogin providers={socials} />
              </Suspense>
            )}
            {method === "wallet" && namespace && (
              <div className="vst-connect__filter" data-testid="connect-namespace" data-namespace={namespace}>
                <span className="vst-muted">{NAMESPACE_NAMES[namespace]} wallets</span>
                <button type="button" className="vst-button" data-variant="quiet" onClick={() => widget.send({ type: "Navigate", view: "Connect", replace: true })}>
                  Show all wallets
                </button>
              </div>
            )}
            {method === "wallet" && <WalletList groups={groups} />}
          </div>
        </Fragment>
      ))}
    </section>
  );
}

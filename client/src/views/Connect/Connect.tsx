// The Connect view: the connect methods in the order the server derived (spec section 2: email,
// social, wallet; wallet first when an injected or announced wallet is shown; `connectMethodsOrder`
// overrides), each only when enabled. Email and social are parts, loaded only when enabled.

import { Fragment, Suspense } from "react";
import { useSessionSelector } from "../../context/widgetContext";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import { WalletList } from "../../components/WalletList/WalletList";
import { PartFallback } from "../../parts/PartFallback/PartFallback";
import { EmailLogin, SocialLogin } from "../../parts/parts";
import css from "./Connect.css?inline";

export function Connect() {
  const view = useSessionSelector((s) => s.connectView);
  const socials = useSessionSelector((s) => s.options.features.socials) ?? [];
  if (!view) return null;
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
            {method === "wallet" && <WalletList groups={view.groups} />}
          </div>
        </Fragment>
      ))}
    </section>
  );
}

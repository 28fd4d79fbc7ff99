// While a social login waits for the provider's popup (spec §4 Social login): which window to
// continue in, the session's message (Popup closed, Failed to connect, ...), and Back, which cancels
// the login (the popup, followed by core/effects/socialPopup.ts, closes with it).

import { useSessionSelector, useWidget } from "../../context/widgetContext";
import { Spinner } from "../../components/Spinner/Spinner";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import { providerName } from "../SocialLogin/providers";
import css from "./ConnectingSocial.css?inline";

export function ConnectingSocial() {
  const widget = useWidget();
  const method = useSessionSelector((s) => s.embedded.login.method);
  const message = useSessionSelector((s) => s.embedded.login.message);
  return (
    <section className="vst-social-wait" aria-label="Connecting" aria-busy={!message} data-testid="connecting-social">
      <Stylesheet id="connecting-social" css={css} />
      <Spinner size="large" />
      <p className="vst-social-wait__title">Continue in the {providerName(method)} window</p>
      {message && (
        <p className="vst-social-wait__message" role="alert">
          {message}
        </p>
      )}
      <button type="button" className="vst-button" data-variant="quiet" onClick={() => widget.send({ type: "CancelEmbeddedLogin" })}>
        Back
      </button>
    </section>
  );
}

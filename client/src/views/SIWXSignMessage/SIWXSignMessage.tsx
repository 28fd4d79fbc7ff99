// Sign-in with the wallet: the server's exact message, Sign (disabled while the mirrored sign-in
// chart is signing or verifying), Cancel, and the error the state carries ("Signature declined").

import { useId } from "react";
import { useRegion, useSessionSelector, useWidget } from "../../context/widgetContext";
import { Spinner } from "../../components/Spinner/Spinner";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import css from "./SIWXSignMessage.css?inline";

export function SIWXSignMessage() {
  const widget = useWidget();
  const status = useRegion("siwx");
  const message = useSessionSelector((s) => s.siwx.challenge?.message) ?? "";
  const error = useSessionSelector((s) => s.siwx.error);
  const busy = status === "signing" || status === "verifying";
  const id = useId();
  return (
    <section className="vst-siwx" aria-label="Sign in">
      <Stylesheet id="siwx" css={css} />
      <p id={`${id}-intro`} className="vst-muted vst-siwx__intro">
        Sign this message to prove you own the account. It costs nothing and sends no transaction.
      </p>
      <pre className="vst-siwx__message" data-testid="siwx-message" tabIndex={0} aria-label="Message to sign" aria-describedby={`${id}-intro`}>
        {message}
      </pre>
      {error && (
        <p role="alert" className="vst-siwx__error" data-testid="siwx-error">
          {error}
        </p>
      )}
      <div className="vst-siwx__actions">
        <button type="button" className="vst-button" data-variant="quiet" onClick={() => widget.send({ type: "SiwxCancel" })}>
          Cancel
        </button>
        <button type="button" className="vst-button" data-variant="primary" disabled={busy} aria-busy={busy} onClick={() => widget.send({ type: "SiwxSign" })}>
          {busy && <Spinner />}
          {busy ? "Signing…" : "Sign"}
        </button>
      </div>
    </section>
  );
}

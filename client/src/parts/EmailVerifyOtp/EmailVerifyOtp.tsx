// The email code step (views EmailVerifyOtp and EmailVerifyDevice, spec §4 Email login): the code
// the visitor typed goes to the secure frame (CONNECT_OTP), which sends it to the embedded service
// itself; the session only learns the outcome. What went wrong (Invalid code, Code expired, the
// resend cooldown) is the session's message; a frame that cannot be reached answers here.

import { useId, useState } from "react";
import { useSessionSelector, useWidget } from "../../context/widgetContext";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import css from "./EmailVerifyOtp.css?inline";

const EMAIL_SHOWN = 30;

/** An address longer than 30 characters, cut with an ellipsis (spec §4). */
export function truncateEmail(email: string): string {
  return email.length > EMAIL_SHOWN ? `${email.slice(0, EMAIL_SHOWN)}…` : email;
}

export function EmailVerifyOtp() {
  const widget = useWidget();
  const id = useId();
  const login = useSessionSelector((s) => s.embedded.login);
  const [failure, setFailure] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const email = login?.email ?? "";
  const message = login?.message ?? failure;
  return (
    <form
      className="vst-otp"
      aria-label={login?.step === "verifyDevice" ? "Verify this device" : "Verify your email"}
      data-testid="email-verify-otp"
      onSubmit={(e) => {
        e.preventDefault();
        const otp = new FormData(e.currentTarget).get("otp");
        const challengeId = login?.challengeId;
        if (typeof otp !== "string" || !challengeId || busy) return;
        if (!widget.embedded) return setFailure("The embedded wallet is not available");
        setBusy(true);
        setFailure(null);
        widget.embedded
          .request("CONNECT_OTP", { challengeId, otp })
          .catch((error: unknown) => setFailure(error instanceof Error ? error.message : "Failed to connect"))
          .finally(() => setBusy(false));
      }}
    >
      <Stylesheet id="email-verify-otp" css={css} />
      <p className="vst-otp__lead">
        {login?.step === "verifyDevice" ? "This is a new device. " : ""}Enter the code sent to <strong>{truncateEmail(email)}</strong>
      </p>
      <label htmlFor={id} className="vst-otp__label">
        Code
      </label>
      <input id={id} className="vst-input vst-otp__input" name="otp" inputMode="numeric" autoComplete="one-time-code" pattern="[0-9]{6}" maxLength={6} required />
      {message && (
        <p className="vst-otp__message" role="alert">
          {message}
        </p>
      )}
      <button type="submit" className="vst-button" data-variant="primary" disabled={busy}>
        {busy ? "Verifying…" : "Verify"}
      </button>
      <div className="vst-otp__actions">
        <button type="button" className="vst-button" data-variant="quiet" onClick={() => email && widget.send({ type: "ConnectEmail", email })}>
          Resend code
        </button>
        <button type="button" className="vst-button" data-variant="quiet" onClick={() => widget.send({ type: "CancelEmbeddedLogin" })}>
          Back
        </button>
      </div>
    </form>
  );
}

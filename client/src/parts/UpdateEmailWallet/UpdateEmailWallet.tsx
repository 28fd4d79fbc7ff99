// The email change's first step (view UpdateEmailWallet, spec §4 Email update): the new address goes
// to the session (UpdateEmail), which validates it (spec §5 Email) and has the embedded service mail
// a code to the current address. The session's message (invalid address, Not connected to email or
// social, ...) is shown; the browser's own check only saves a round trip.

import { useId } from "react";
import { useSessionSelector, useWidget } from "../../context/widgetContext";
import { BackToAccount } from "../../components/BackToAccount/BackToAccount";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import { truncateEmail } from "../CodeEntry/CodeEntry";
import css from "../CodeEntry/CodeEntry.css?inline";

export function UpdateEmailWallet() {
  const widget = useWidget();
  const id = useId();
  const current = useSessionSelector((s) => s.embedded.user?.email);
  const update = useSessionSelector((s) => s.embedded.update);
  const sending = update?.status === "sending";
  return (
    <form
      className="vst-otp"
      aria-label="Update email"
      data-testid="update-email-wallet"
      onSubmit={(e) => {
        e.preventDefault();
        const email = new FormData(e.currentTarget).get("email");
        if (typeof email === "string" && !sending) widget.send({ type: "UpdateEmail", email: email.trim() });
      }}
    >
      <Stylesheet id="code-entry" css={css} />
      {current && (
        <p className="vst-otp__lead">
          Current email: <strong>{truncateEmail(current)}</strong>
        </p>
      )}
      <label htmlFor={id} className="vst-otp__label">
        New email
      </label>
      <input id={id} className="vst-input" name="email" type="email" required autoComplete="email" placeholder="you@example.com" />
      {update?.message && (
        <p className="vst-otp__message" role="alert">
          {update.message}
        </p>
      )}
      <button type="submit" className="vst-button" data-variant="primary" disabled={sending}>
        {sending ? "Saving…" : "Save"}
      </button>
      <BackToAccount />
    </form>
  );
}

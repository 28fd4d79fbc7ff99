// The email connect method (a part: loaded only when the email feature is on). The server validates
// the address; the browser's own check only saves a round trip.

import { useId } from "react";
import { useWidget } from "../../context/widgetContext";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import css from "./EmailLogin.css?inline";

export function EmailLogin() {
  const widget = useWidget();
  const id = useId();
  return (
    <form
      className="vst-email"
      aria-label="Continue with email"
      onSubmit={(e) => {
        e.preventDefault();
        const email = new FormData(e.currentTarget).get("email");
        if (typeof email === "string") widget.send({ type: "ConnectEmail", email });
      }}
    >
      <Stylesheet id="email-login" css={css} />
      <label htmlFor={id} className="vst-email__label">
        Email
      </label>
      <input id={id} className="vst-input" name="email" type="email" required autoComplete="email" placeholder="you@example.com" />
      <button type="submit" className="vst-button" data-variant="primary">
        Continue with email
      </button>
    </form>
  );
}

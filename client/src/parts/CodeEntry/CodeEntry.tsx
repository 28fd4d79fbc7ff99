// The code step shared by the embedded wallet's views (the login's EmailVerifyOtp / EmailVerifyDevice
// and the email change's UpdateEmailPrimaryOtp / UpdateEmailSecondaryOtp): a six-digit code the
// visitor types, handed to `submit` (which sends it to the secure frame, never to the session). The
// message shown is the session's when it has one, else the frame's failure.

import { useId, useState, type ReactNode } from "react";
import { DISPLAY } from "../../generated/constants";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import css from "./CodeEntry.css?inline";

/** An address longer than 30 characters, cut with an ellipsis (spec §5 Display). */
export function truncateEmail(email: string): string {
  return email.length > DISPLAY.maxEmailChars ? `${email.slice(0, DISPLAY.maxEmailChars)}…` : email;
}

export interface CodeEntryProps {
  /** The form's accessible name. */
  label: string;
  testId: string;
  lead: ReactNode;
  /** The session's message (Invalid code, ...), shown before the frame's failure. */
  message?: string;
  /** Sends the code; a rejection's message is shown. */
  submit(otp: string): Promise<unknown> | null;
  /** Further buttons under the form (Resend code, Back). */
  children?: ReactNode;
}

export function CodeEntry({ label, testId, lead, message, submit, children }: CodeEntryProps) {
  const id = useId();
  const [failure, setFailure] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const shown = message ?? failure;
  return (
    <form
      className="vst-otp"
      aria-label={label}
      data-testid={testId}
      onSubmit={(e) => {
        e.preventDefault();
        const otp = new FormData(e.currentTarget).get("otp");
        if (typeof otp !== "string" || busy) return;
        const sent = submit(otp);
        if (!sent) return;
        setBusy(true);
        setFailure(null);
        sent
          .catch((error: unknown) => setFailure(error instanceof Error ? error.message : "Failed to connect"))
          .finally(() => setBusy(false));
      }}
    >
      <Stylesheet id="code-entry" css={css} />
      <p className="vst-otp__lead">{lead}</p>
      <label htmlFor={id} className="vst-otp__label">
        Code
      </label>
      <input id={id} className="vst-input vst-otp__input" name="otp" inputMode="numeric" autoComplete="one-time-code" pattern="[0-9]{6}" maxLength={6} required />
      {shown && (
        <p className="vst-otp__message" role="alert">
          {shown}
        </p>
      )}
      <button type="submit" className="vst-button" data-variant="primary" disabled={busy}>
        {busy ? "Verifying…" : "Verify"}
      </button>
      {children && <div className="vst-otp__actions">{children}</div>}
    </form>
  );
}

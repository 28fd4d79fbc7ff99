// The email code step (views EmailVerifyOtp and EmailVerifyDevice, spec §4 Email login): the code
// the visitor typed goes to the secure frame (CONNECT_OTP), which sends it to the embedded service
// itself; the session only learns the outcome. What went wrong (Invalid code, Code expired, the
// resend cooldown) is the session's message; a frame that cannot be reached answers here.

import { useSessionSelector, useWidget } from "../../context/widgetContext";
import { CodeEntry, truncateEmail } from "../CodeEntry/CodeEntry";

export { truncateEmail };

export function EmailVerifyOtp() {
  const widget = useWidget();
  const login = useSessionSelector((s) => s.embedded.login);
  const email = login?.email ?? "";
  const device = login?.step === "verifyDevice";
  return (
    <CodeEntry
      label={device ? "Verify this device" : "Verify your email"}
      testId="email-verify-otp"
      lead={
        <>
          {device ? "This is a new device. " : ""}Enter the code sent to <strong>{truncateEmail(email)}</strong>
        </>
      }
      message={login?.message}
      submit={(otp) => {
        const challengeId = login?.challengeId;
        if (!challengeId) return null;
        if (!widget.embedded) return Promise.reject(new Error("The embedded wallet is not available"));
        return widget.embedded.request("CONNECT_OTP", { challengeId, otp });
      }}
    >
      <button type="button" className="vst-button" data-variant="quiet" onClick={() => email && widget.send({ type: "ConnectEmail", email })}>
        Resend code
      </button>
      <button type="button" className="vst-button" data-variant="quiet" onClick={() => widget.send({ type: "CancelEmbeddedLogin" })}>
        Back
      </button>
    </CodeEntry>
  );
}

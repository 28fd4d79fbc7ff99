// The email change's code steps (views UpdateEmailPrimaryOtp and UpdateEmailSecondaryOtp, spec §4
// Email update): the code mailed to the current address, then the one mailed to the new address. The
// code goes to the secure frame (UPDATE_EMAIL_OTP), which sends it to the embedded service; the
// session learns the outcome from the service. Its message is shown, else the frame's failure.

import { useRoute, useSessionSelector, useWidget } from "../../context/widgetContext";
import { CodeEntry, truncateEmail } from "../CodeEntry/CodeEntry";

export function UpdateEmailOtp() {
  const widget = useWidget();
  const step = useRoute() === "UpdateEmailSecondaryOtp" ? "secondary" : "primary";
  const email = useSessionSelector((s) => (step === "primary" ? s.embedded.user?.email : s.embedded.update.newEmail)) ?? "";
  const message = useSessionSelector((s) => s.embedded.update.message);
  return (
    <CodeEntry
      // Keyed by the step: the secondary code starts from an empty form.
      key={step}
      label={step === "primary" ? "Confirm your current email" : "Confirm your new email"}
      testId={step === "primary" ? "update-email-primary-otp" : "update-email-secondary-otp"}
      lead={
        <>
          Enter the code sent to <strong>{truncateEmail(email)}</strong>
        </>
      }
      message={message}
      submit={(otp) =>
        widget.embedded ? widget.embedded.request("UPDATE_EMAIL_OTP", { step, otp }) : Promise.reject(new Error("The embedded wallet is not available"))
      }
    />
  );
}

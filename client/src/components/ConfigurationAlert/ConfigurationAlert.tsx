// Drawn without a session when the gateway refuses the page (spec section 8's alerts: "Invalid App
// Configuration", "Invalid Project ID", "Project ID Not Configured", ...), in the theme the host
// asked for.

import { useId } from "react";
import type { Refusal } from "../../core/refusal";
import type { ProtocolErrorCode } from "../../generated/ProtocolErrorCode";
import { Stylesheet } from "../Stylesheet/Stylesheet";
import css from "./ConfigurationAlert.css?inline";

/** The alert's title for a refusal; a refusal from `/ws/check` already carries it. */
const TITLES: Partial<Record<ProtocolErrorCode, string>> = {
  bad_hello: "Invalid App Configuration",
  invalid_options: "Invalid App Configuration",
  unsupported_protocol: "Server Error",
};

export function ConfigurationAlert({ refusal }: { refusal: Refusal }) {
  const id = useId();
  const title = TITLES[refusal.code] ?? refusal.message;
  return (
    <div className="vst-alert" role="alertdialog" aria-labelledby={`${id}-title`} aria-describedby={`${id}-text`}>
      <Stylesheet id="alert" css={css} />
      <strong id={`${id}-title`} className="vst-alert__title">
        {title}
      </strong>
      <p id={`${id}-text`} className="vst-alert__text">
        {title === refusal.message
          ? "The widget cannot start on this page. Check the project id and the allowed origins in the gateway's configuration."
          : refusal.message}
      </p>
    </div>
  );
}

// The social connect method (a part: loaded only when socials are configured): one button per
// provider, in the order the host configured. A click opens the popup at once (inside the click, or
// the browser blocks it) and then asks the session (core/effects/socialPopup.ts).

import { useRef } from "react";
import type { SocialProvider } from "../../generated/SocialProvider";
import { useWidget } from "../../context/widgetContext";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import { startSocialLogin, type SocialPopup } from "../../core/effects/socialPopup";
import { SOCIAL_NAMES } from "./providers";
import css from "./SocialLogin.css?inline";

export function SocialLogin({ providers }: { providers: SocialProvider[] }) {
  const widget = useWidget();
  // The login this page started: a second click (before the session moves on) replaces it.
  const started = useRef<SocialPopup | null>(null);
  return (
    <div className="vst-social" role="group" aria-label="Social login">
      <Stylesheet id="social-login" css={css} />
      {providers.map((provider) => (
        <button
          key={provider}
          type="button"
          className="vst-button vst-social__button"
          aria-label={`Continue with ${SOCIAL_NAMES[provider]}`}
          onClick={() => {
            started.current?.stop(true);
            // Farcaster opens no popup: the modal shows the relay's URL (ConnectingFarcaster).
            if (provider === "farcaster") {
              started.current = null;
              widget.send({ type: "ConnectSocial", provider });
              return;
            }
            started.current = startSocialLogin(widget, provider);
          }}
        >
          {SOCIAL_NAMES[provider]}
        </button>
      ))}
    </div>
  );
}

// The social connect method (a part: loaded only when socials are configured): one button per
// provider, in the order the host configured.

import type { SocialProvider } from "../../generated/SocialProvider";
import { useWidget } from "../../context/widgetContext";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import css from "./SocialLogin.css?inline";

const SOCIAL_NAMES: Record<SocialProvider, string> = {
  google: "Google",
  x: "X",
  farcaster: "Farcaster",
  discord: "Discord",
  apple: "Apple",
  github: "GitHub",
  facebook: "Facebook",
};

export function SocialLogin({ providers }: { providers: SocialProvider[] }) {
  const widget = useWidget();
  return (
    <div className="vst-social" role="group" aria-label="Social login">
      <Stylesheet id="social-login" css={css} />
      {providers.map((provider) => (
        <button
          key={provider}
          type="button"
          className="vst-button vst-social__button"
          aria-label={`Continue with ${SOCIAL_NAMES[provider]}`}
          onClick={() => widget.send({ type: "ConnectSocial", provider })}
        >
          {SOCIAL_NAMES[provider]}
        </button>
      ))}
    </div>
  );
}

// How each social provider is named to a visitor (the buttons and the ConnectingSocial view).

import type { LoginMethod } from "../../generated/LoginMethod";
import type { SocialProvider } from "../../generated/SocialProvider";

export const SOCIAL_NAMES: Record<SocialProvider, string> = {
  google: "Google",
  x: "X",
  farcaster: "Farcaster",
  discord: "Discord",
  apple: "Apple",
  github: "GitHub",
  facebook: "Facebook",
};

/** The provider of a social login, by name. */
export function providerName(method: LoginMethod | undefined): string {
  return method && method !== "email" ? SOCIAL_NAMES[method] : "provider";
}

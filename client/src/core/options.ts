// What a host may pass as session options: any part of the generated `SessionOptions` (the server
// fills in the rest with its defaults and validates the whole).

import type { SessionOptions } from "../generated/SessionOptions";

type DeepPartial<T> = T extends readonly unknown[] ? T : T extends object ? { [K in keyof T]?: DeepPartial<T[K]> } : T;

export type SessionOptionsInput = DeepPartial<SessionOptions>;

/** Every option the session accepts: the compiler checks this list against the generated
 * `SessionOptions` (a field added in Rust and missing here, or a name here the Rust type lacks, fails
 * the type check). */
export const SESSION_OPTION_NAMES = {
  networks: true, defaultNetwork: true, metadata: true, features: true, includeWalletIds: true, excludeWalletIds: true,
  featuredWalletIds: true, customWallets: true, termsConditionsUrl: true, privacyPolicyUrl: true, enableWalletConnect: true,
  enableEip6963: true, enableInjected: true, enableWallets: true, enableNetworkSwitch: true, allowUnsupportedChain: true,
  defaultAccountTypes: true, themeMode: true, themeVariables: true, siwx: true, siweConfig: true, debug: true,
} as const satisfies Record<keyof SessionOptions, true>;

export function isSessionOption(name: string): name is keyof SessionOptions {
  return Object.hasOwn(SESSION_OPTION_NAMES, name);
}

// The package's entry for bundlers: the React entry, the controller and the generated types.
export { VestibuleProvider, useVestibule, type UseVestibule, type VestibuleProviderProps } from "./react";
export { createWidget, type Widget, type WidgetOptions } from "./core/widget";
export { createProvider, ProviderRpcError, requestConnection, type HostProvider } from "./core/provider";
export { createSolanaProvider, type SolanaHostProvider, type SolanaEvent } from "./core/solanaProvider";
export type { SessionOptionsInput } from "./core/options";
export type * from "./generated";

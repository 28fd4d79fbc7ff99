// The package's entry for bundlers and React hosts.
export { create, type CreateOptions, type VestibuleInstance } from "./embed";
export { VestibuleProvider, useVestibule } from "./react";
export { createWidget, type Widget, type WidgetOptions } from "./widget";
export type * from "./generated";

// Generated from the Rust definitions by `vestibule-codegen`. Do not edit by hand.

/** The EVM methods the embedded wallet performs (after the visitor's approval in the frame); the session refuses any other with 4200. */
export const EMBEDDED_EVM_METHODS = ["personal_sign","eth_signTypedData_v4","eth_sendTransaction"] as const;

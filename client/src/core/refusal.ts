// Why the gateway refused this page or closed its connection: a `/ws/check` refusal or a protocol
// `error` frame. Codes are the generated `ProtocolErrorCode` (a refused command's code is
// `CommandError.code`, the generated `RefusalCode`).

import { PROTOCOL_ERROR_CODES } from "../generated/constants";
import type { ProtocolErrorCode } from "../generated/ProtocolErrorCode";

export interface Refusal {
  code: ProtocolErrorCode;
  message: string;
}

/** `/ws/check` refusals that no retry can fix: the page shows the configuration alert. */
export const PERMANENT_REFUSALS: readonly ProtocolErrorCode[] = ["project_id_not_configured", "invalid_project_id", "invalid_app_configuration"];

/** A code read from the network, if the server can send it. */
export function protocolErrorCode(code: unknown): ProtocolErrorCode | undefined {
  return PROTOCOL_ERROR_CODES.find((known) => known === code);
}

// Why the gateway or the session said no: a machine-readable code and the catalogue's message.
// The codes are strings on the wire today (`CommandError.code`, `/ws/check`'s `code`); when the
// generated `RefusalCode` union lands, this line becomes
//   export type { RefusalCode } from "../generated/RefusalCode";
// and every use below is checked against it.

export type RefusalCode = string;

export interface Refusal {
  code: RefusalCode;
  message: string;
}

/** `/ws/check` refusals that no retry can fix: the page shows the configuration alert. */
export const PERMANENT_REFUSALS: readonly RefusalCode[] = ["project_id_not_configured", "invalid_project_id", "invalid_app_configuration"];

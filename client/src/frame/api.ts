// The frame API on the frame's own origin (docs/embedded-wallet.md, "Frame API"): JSON over POST,
// the frame token in the body of every call after registration. A refusal keeps the server's code
// (`otp_wrong`, `otp_expired`, `email_cooldown`, …) and its `Retry-After` so the frame can answer
// the host in words.

import type { Sealed } from "./hpke";
import { isSealed } from "./hpke";

export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    /** The refusal's `Retry-After` in whole seconds, when it had one (`email_cooldown`, the rate limits). */
    readonly retryAfterSecs?: number,
  ) {
    super(message);
  }
}

export interface LoginWallet {
  walletId: string;
  eip155Address: string;
  solanaAddress: string;
  serverShare: Sealed;
  recoveryShare?: Sealed;
}

export interface LoginResult {
  userId: string;
  email?: string;
  username?: string;
  wallet: LoginWallet | null;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
const str = (v: unknown): v is string => typeof v === "string" && v.length > 0;

export function readLoginResult(body: unknown): LoginResult {
  if (!isObject(body) || !str(body.userId)) throw new ApiError("bad_answer", "The server's answer was not understood");
  const w = body.wallet;
  let wallet: LoginWallet | null = null;
  if (isObject(w)) {
    if (!str(w.walletId) || !str(w.eip155Address) || !str(w.solanaAddress) || !isSealed(w.serverShare) || (w.recoveryShare !== undefined && w.recoveryShare !== null && !isSealed(w.recoveryShare)))
      throw new ApiError("bad_answer", "The server's answer was not understood");
    wallet = {
      walletId: w.walletId,
      eip155Address: w.eip155Address,
      solanaAddress: w.solanaAddress,
      serverShare: w.serverShare,
      ...(isSealed(w.recoveryShare) ? { recoveryShare: w.recoveryShare } : {}),
    };
  } else if (w !== null && w !== undefined) throw new ApiError("bad_answer", "The server's answer was not understood");
  return { userId: body.userId, ...(str(body.email) ? { email: body.email } : {}), ...(str(body.username) ? { username: body.username } : {}), wallet };
}

export type Post = (path: string, body: Record<string, unknown>) => Promise<unknown>;

/** POSTs JSON to the frame origin's `/api/...`; a 4xx/5xx throws its `{ error: { code, message } }`. */
export function createPost(fetchImpl: typeof fetch, origin: string): Post {
  return async (path, body) => {
    let response: Response;
    try {
      response = await fetchImpl(`${origin}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), credentials: "omit" });
    } catch {
      throw new ApiError("network", "Network Error - Could not reach the embedded wallet");
    }
    const answer: unknown = await response.json().catch(() => null);
    if (!response.ok) {
      const error = isObject(answer) && isObject(answer.error) ? answer.error : {};
      throw new ApiError(
        str(error.code) ? error.code : "http_" + response.status,
        str(error.message) ? error.message : `The embedded wallet refused (HTTP ${response.status})`,
        seconds(response.headers.get("retry-after"), RETRY_AFTER),
      );
    }
    return answer;
  };
}

/** A `Retry-After` of delay-seconds (the frame API sends no HTTP date), and a wait in a text. */
const RETRY_AFTER = /^\s*(\d+(?:\.\d+)?)\s*$/;
const IN_TEXT = /(\d+(?:\.\d+)?) seconds?\b/;

/** The wait `pattern` finds in `text`, in whole seconds rounded up; undefined when there is none. */
function seconds(text: string | null, pattern: RegExp): number | undefined {
  const n = Math.ceil(Number(text?.match(pattern)?.[1]));
  return n > 0 ? n : undefined;
}

/** The visitor-facing words for the OTP refusals (spec §8). */
export function otpErrorMessage(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.code === "otp_wrong") return "Invalid code";
    if (error.code === "otp_expired") return "Code expired";
    if (error.code === "otp_attempts") return "Too many attempts";
    // The wait is the header's (the service rounds it up), else the one in the service's text.
    const wait = error.code === "email_cooldown" ? (error.retryAfterSecs ?? seconds(error.message, IN_TEXT)) : undefined;
    if (wait) return `Please try again after ${wait} seconds`;
    return error.message;
  }
  return error instanceof Error ? error.message : "Failed to connect";
}

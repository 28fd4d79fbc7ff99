// The frame API's refusals in the visitor's words (spec §8): the OTP codes, and the email cooldown
// as "Please try again after {n} seconds" with n the seconds left (the refusal's `Retry-After`, else
// the wait in the service's own text), not the service's sentence.

import { expect, it } from "vitest";
import { ApiError, createPost, otpErrorMessage } from "./api";

const ORIGIN = "https://frame.example";

/** What the frame's post throws for one refusal of the embedded service. */
async function refusal(status: number, error: { code: string; message: string }, headers: Record<string, string> = {}): Promise<unknown> {
  const post = createPost(async () => Response.json({ error }, { status, headers }), ORIGIN);
  return post("/api/email/update/verify", { frameToken: "t", step: "primary", otp: "123456" }).then(
    () => expect.unreachable(),
    (e: unknown) => e,
  );
}

const COOLDOWN = (n: number) => ({ code: "email_cooldown", message: `A code was sent moments ago; please try again after ${n} seconds` });

it("says Please try again after {n} seconds for the email cooldown, n from Retry-After", async () => {
  const e = await refusal(429, COOLDOWN(20), { "Retry-After": "17" });
  expect(e).toBeInstanceOf(ApiError);
  expect(e).toMatchObject({ code: "email_cooldown", retryAfterSecs: 17 });
  expect(otpErrorMessage(e)).toBe("Please try again after 17 seconds");
});

it("takes n from the service's text when there is no usable Retry-After", async () => {
  expect(otpErrorMessage(await refusal(429, COOLDOWN(23)))).toBe("Please try again after 23 seconds");
  expect(otpErrorMessage(await refusal(429, COOLDOWN(9), { "Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT" }))).toBe("Please try again after 9 seconds");
  expect(otpErrorMessage(new ApiError("email_cooldown", "please try again after 1.2 seconds"))).toBe("Please try again after 2 seconds");
  // No wait anywhere: the service's words, rather than a made-up number.
  expect(otpErrorMessage(new ApiError("email_cooldown", "A code was sent moments ago"))).toBe("A code was sent moments ago");
});

it("keeps the OTP codes' words and passes other refusals through, Retry-After or not", async () => {
  expect(otpErrorMessage(await refusal(400, { code: "otp_wrong", message: "wrong code" }))).toBe("Invalid code");
  expect(otpErrorMessage(new ApiError("otp_expired", "expired"))).toBe("Code expired");
  expect(otpErrorMessage(new ApiError("otp_attempts", "attempts"))).toBe("Too many attempts");
  const limited = await refusal(429, { code: "email_rate_limited", message: "Too many codes were requested from your network; please try again in 2 minutes" }, { "Retry-After": "120" });
  expect(limited).toMatchObject({ retryAfterSecs: 120 });
  expect(otpErrorMessage(limited)).toBe("Too many codes were requested from your network; please try again in 2 minutes");
  expect(await refusal(409, { code: "email_taken", message: "That email belongs to another account" })).toMatchObject({ retryAfterSecs: undefined });
});

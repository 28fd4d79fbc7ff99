// @vitest-environment happy-dom
// The email code step: the code goes to the secure frame (never to the session), the session's
// message is shown, Resend asks for a new code, Back cancels, the address is cut past 30 characters.

import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, beforeAll, expect, it } from "vitest";
import type { SessionState } from "../../generated/SessionState";
import type { EmbeddedHost } from "../../core/effects/secureFrameHost";
import { fakeFrame, withEmbedded } from "../../testing/embedded";
import { WidgetContext } from "../../context/widgetContext";
import { connectedState, onView, stateView, type StateView } from "../../testing/stateView";
import { EmailVerifyOtp, truncateEmail } from "./EmailVerifyOtp";

const EMAIL = "a.very.long.address.for.testing@example.com";
let base: SessionState;
let view: StateView | null = null;
beforeAll(async () => {
  base = onView(await connectedState(), "EmailVerifyOtp", ["Connect"]);
});
afterEach(() => {
  cleanup();
  view?.stop();
  view = null;
});

function awaitingOtp(message?: string): SessionState {
  return withEmbedded(base, {
    login: { status: "awaitingOtp", method: "email", email: EMAIL, challengeId: "c1", step: "verifyOtp", ...(message ? { message } : {}) },
  });
}

function draw(state: SessionState, embedded: EmbeddedHost) {
  view = stateView(state);
  // Drawn directly: the router chart that routes to it is the session's (generated from Rust).
  render(
    <WidgetContext.Provider value={{ ...view.model, embedded }}>
      <EmailVerifyOtp />
    </WidgetContext.Provider>,
  );
  return view;
}

it("truncates addresses past 30 characters", () => {
  expect(truncateEmail("short@example.com")).toBe("short@example.com");
  expect(truncateEmail(EMAIL)).toBe("a.very.long.address.for.testin…");
});

it("sends the code to the frame (CONNECT_OTP with the challenge), not to the session", async () => {
  const frame = fakeFrame({ CONNECT_OTP: async () => ({ address: "0xabc" }) });
  const v = draw(awaitingOtp(), frame.host);
  await screen.findByTestId("email-verify-otp");
  expect(screen.getByText(/Enter the code sent to/).textContent).toContain("a.very.long.address.for.testin…");
  fireEvent.change(screen.getByRole("textbox", { name: "Code" }), { target: { value: "123456" } });
  await act(async () => fireEvent.click(screen.getByRole("button", { name: "Verify" })));
  expect(frame.requests).toEqual([{ type: "CONNECT_OTP", payload: { challengeId: "c1", otp: "123456" } }]);
  expect(JSON.stringify(v.commands)).not.toContain("123456");
});

it("shows the session's message, and the frame's failure when the session has none", async () => {
  draw(awaitingOtp("Invalid code"), fakeFrame().host);
  expect((await screen.findByRole("alert")).textContent).toBe("Invalid code");
  cleanup();
  view?.stop();
  draw(
    awaitingOtp(),
    fakeFrame({
      CONNECT_OTP: async () => {
        throw new Error("Embedded Wallet Request Timed Out");
      },
    }).host,
  );
  fireEvent.change(await screen.findByRole("textbox", { name: "Code" }), { target: { value: "654321" } });
  await act(async () => fireEvent.click(screen.getByRole("button", { name: "Verify" })));
  expect(screen.getByRole("alert").textContent).toBe("Embedded Wallet Request Timed Out");
});

it("Resend asks for a new code (ConnectEmail); Back cancels the login", async () => {
  const v = draw(awaitingOtp(), fakeFrame().host);
  fireEvent.click(await screen.findByRole("button", { name: "Resend code" }));
  fireEvent.click(screen.getByRole("button", { name: "Back" }));
  expect(v.commands).toEqual([{ type: "ConnectEmail", email: EMAIL }, { type: "CancelEmbeddedLogin" }]);
});

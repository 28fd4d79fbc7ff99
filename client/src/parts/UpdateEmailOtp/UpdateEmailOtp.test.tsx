// @vitest-environment happy-dom
// The email change's code steps: the code to the current address (primary), then to the new one
// (secondary), each sent to the frame as UPDATE_EMAIL_OTP, never to the session; failures shown.

import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, beforeAll, expect, it } from "vitest";
import type { SessionState } from "../../generated/SessionState";
import type { UpdateStep } from "../../generated/UpdateStep";
import { WidgetContext } from "../../context/widgetContext";
import { fakeFrame, withEmbedded, type FakeFrame } from "../../testing/embedded";
import { connectedState, onView, stateView, type StateView } from "../../testing/stateView";
import { UpdateEmailOtp } from "./UpdateEmailOtp";

const CURRENT = "a.very.long.current.address.for.tests@example.com";
const NEW = "new@example.com";
const USER = { userId: "u1", email: CURRENT, provider: "email" as const, preferredAccountType: "eoa" as const };
let base: SessionState;
let view: StateView | null = null;
beforeAll(async () => {
  base = await connectedState();
});
afterEach(() => {
  cleanup();
  view?.stop();
  view = null;
});

function draw(state: SessionState, step: UpdateStep, frame: FakeFrame) {
  // The step is the route's (the router chart, mirrored from the state).
  view = stateView(onView(state, step === "primary" ? "UpdateEmailPrimaryOtp" : "UpdateEmailSecondaryOtp", ["Account", "UpdateEmailWallet"]));
  render(
    <WidgetContext.Provider value={{ ...view.model, embedded: frame.host }}>
      <UpdateEmailOtp />
    </WidgetContext.Provider>,
  );
  return view;
}

async function enter(code: string) {
  fireEvent.change(screen.getByRole("textbox", { name: "Code" }), { target: { value: code } });
  await act(async () => fireEvent.click(screen.getByRole("button", { name: "Verify" })));
}

it("primary: the code sent to the current address goes to the frame (step primary)", async () => {
  const frame = fakeFrame({ UPDATE_EMAIL_OTP: async () => ({}) });
  const v = draw(withEmbedded(base, { user: USER, update: { status: "primaryOtp", newEmail: NEW } }), "primary", frame);
  expect(screen.getByTestId("update-email-primary-otp").textContent).toContain(`Enter the code sent to ${CURRENT.slice(0, 30)}…`);
  await enter("123456");
  expect(frame.requests).toEqual([{ type: "UPDATE_EMAIL_OTP", payload: { step: "primary", otp: "123456" } }]);
  expect(JSON.stringify(v.commands)).not.toContain("123456");
  expect(screen.queryByRole("alert")).toBeNull();
});

it("secondary: the code sent to the new address goes to the frame (step secondary)", async () => {
  const frame = fakeFrame({ UPDATE_EMAIL_OTP: async () => ({}) });
  draw(withEmbedded(base, { user: USER, update: { status: "secondaryOtp", newEmail: NEW } }), "secondary", frame);
  expect(screen.getByTestId("update-email-secondary-otp").textContent).toContain(`Enter the code sent to ${NEW}`);
  await enter("654321");
  expect(frame.requests).toEqual([{ type: "UPDATE_EMAIL_OTP", payload: { step: "secondary", otp: "654321" } }]);
});

it("shows the frame's error, and the session's message first", async () => {
  const frame = fakeFrame({
    UPDATE_EMAIL_OTP: async () => {
      throw new Error("Invalid code");
    },
  });
  draw(withEmbedded(base, { user: USER, update: { status: "primaryOtp", newEmail: NEW } }), "primary", frame);
  await enter("000000");
  expect(screen.getByRole("alert").textContent).toBe("Invalid code");
  cleanup();
  view?.stop();
  draw(withEmbedded(base, { user: USER, update: { status: "failed", newEmail: NEW, message: "Code expired" } }), "primary", fakeFrame());
  expect(screen.getByRole("alert").textContent).toBe("Code expired");
});

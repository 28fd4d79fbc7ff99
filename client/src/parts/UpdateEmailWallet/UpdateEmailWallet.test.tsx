// @vitest-environment happy-dom
// The email change's form: Save sends the new address to the session; its message is an alert.

import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, beforeAll, expect, it } from "vitest";
import type { SessionState } from "../../generated/SessionState";
import { WidgetContext } from "../../context/widgetContext";
import { fakeFrame, withEmbedded } from "../../testing/embedded";
import { connectedState, onView, stateView, type StateView } from "../../testing/stateView";
import { UpdateEmailWallet } from "./UpdateEmailWallet";

const USER = { userId: "u1", email: "me@example.com", provider: "email" as const, preferredAccountType: "eoa" as const };
let base: SessionState;
let view: StateView | null = null;
beforeAll(async () => {
  base = onView(await connectedState(), "UpdateEmailWallet", ["Account"]);
});
afterEach(() => {
  cleanup();
  view?.stop();
  view = null;
});

function draw(state: SessionState) {
  view = stateView(state);
  const frame = fakeFrame();
  render(
    <WidgetContext.Provider value={{ ...view.model, embedded: frame.host }}>
      <UpdateEmailWallet />
    </WidgetContext.Provider>,
  );
  return { v: view, frame };
}

it("Save sends UpdateEmail with the new address (to the session, not the frame)", () => {
  const { v, frame } = draw(withEmbedded(base, { user: USER }));
  expect(screen.getByTestId("update-email-wallet").textContent).toContain("me@example.com");
  fireEvent.change(screen.getByRole("textbox", { name: "New email" }), { target: { value: "new@example.com" } });
  fireEvent.click(screen.getByRole("button", { name: "Save" }));
  expect(v.commands).toEqual([{ type: "UpdateEmail", email: "new@example.com" }]);
  expect(frame.requests).toEqual([]);
  fireEvent.click(screen.getByRole("button", { name: "Back" }));
  expect(v.commands[1]).toEqual({ type: "GoBack" });
});

it("shows the session's message as an alert, and does not send twice while sending", () => {
  const { v } = draw(withEmbedded(base, { user: USER, update: { status: "sending", newEmail: "new@example.com", message: "Please try again after 20 seconds" } }));
  expect(screen.getByRole("alert").textContent).toBe("Please try again after 20 seconds");
  fireEvent.change(screen.getByRole("textbox", { name: "New email" }), { target: { value: "new@example.com" } });
  fireEvent.submit(screen.getByTestId("update-email-wallet"));
  expect(v.commands).toEqual([]);
});

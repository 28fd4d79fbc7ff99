// @vitest-environment happy-dom
// ConnectingSocial: where to continue, the session's message, Back cancels the login.

import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, beforeAll, expect, it } from "vitest";
import type { SessionState } from "../../generated/SessionState";
import { WidgetContext } from "../../context/widgetContext";
import { fakeFrame, withEmbedded } from "../../testing/embedded";
import { connectedState, onView, stateView, type StateView } from "../../testing/stateView";
import { ConnectingSocial } from "./ConnectingSocial";

let base: SessionState;
let view: StateView | null = null;
beforeAll(async () => {
  base = onView(await connectedState(), "ConnectingSocial", ["Connect"]);
});
afterEach(() => {
  cleanup();
  view?.stop();
  view = null;
});

function draw(state: SessionState) {
  view = stateView(state);
  render(
    <WidgetContext.Provider value={{ ...view.model, embedded: fakeFrame().host }}>
      <ConnectingSocial />
    </WidgetContext.Provider>,
  );
  return view;
}

it("names the provider's window and is busy; Back cancels the login", () => {
  const v = draw(withEmbedded(base, { login: { status: "socialPopup", method: "github" } }));
  const region = screen.getByTestId("connecting-social");
  expect(region.textContent).toContain("Continue in the GitHub window");
  expect(region.getAttribute("aria-busy")).toBe("true");
  expect(screen.queryByRole("alert")).toBeNull();
  fireEvent.click(screen.getByRole("button", { name: "Back" }));
  expect(v.commands).toEqual([{ type: "CancelEmbeddedLogin" }]);
});

it("shows the session's message", () => {
  draw(withEmbedded(base, { login: { status: "failed", method: "google", message: "Popup closed" } }));
  expect(screen.getByRole("alert").textContent).toBe("Popup closed");
});

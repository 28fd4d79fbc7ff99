// @vitest-environment happy-dom
// The Account view with the embedded wallet (connector auth): the user's email (cut past 30
// characters) or username, and Update email for email users only; nothing for other connectors.

import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, beforeAll, expect, it } from "vitest";
import type { EmbeddedUser } from "../../generated/EmbeddedUser";
import type { SessionState } from "../../generated/SessionState";
import { WidgetContext } from "../../context/widgetContext";
import { Account } from "../../views/Account/Account";
import { fakeFrame, withEmbedded } from "../../testing/embedded";
import { connectedState, stateView, type StateView } from "../../testing/stateView";

const LONG = "a.very.long.address.for.testing@example.com";
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

function withAuth(state: SessionState, user: EmbeddedUser, connectorId = "auth"): SessionState {
  const evm = state.connection.namespaces.eip155;
  if (!evm) throw new Error("the fixture has no eip155 connection");
  const s = withEmbedded(state, { user });
  return { ...s, connection: { ...s.connection, namespaces: { ...s.connection.namespaces, eip155: { ...evm, connectorId } } } };
}

function draw(state: SessionState) {
  view = stateView(state);
  render(
    <WidgetContext.Provider value={{ ...view.model, embedded: fakeFrame().host }}>
      <Account />
    </WidgetContext.Provider>,
  );
  return view;
}

const user = (over: Partial<EmbeddedUser>): EmbeddedUser => ({ userId: "u1", provider: "email", preferredAccountType: "eoa", ...over });

it("shows an email user's address, cut past 30 characters, and Update email navigates", async () => {
  const v = draw(withAuth(base, user({ email: LONG })));
  expect((await screen.findByTestId("embedded-account-name")).textContent).toBe(`${LONG.slice(0, 30)}…`);
  fireEvent.click(screen.getByRole("button", { name: "Update email" }));
  expect(v.commands).toContainEqual({ type: "Navigate", view: "UpdateEmailWallet" });
});

it("shows a social user's username, without Update email", async () => {
  draw(withAuth(base, user({ provider: "github", username: "octocat" })));
  expect((await screen.findByTestId("embedded-account-name")).textContent).toBe("octocat");
  expect(screen.queryByRole("button", { name: "Update email" })).toBeNull();
});


it("shows nothing of the embedded user when another connector is active", async () => {
  draw(withAuth(base, user({ email: "me@example.com" }), "injected:Dev Wallet"));
  await screen.findByTestId("account-address");
  expect(screen.queryByTestId("embedded-account")).toBeNull();
  expect(screen.queryByRole("button", { name: "Update email" })).toBeNull();
});

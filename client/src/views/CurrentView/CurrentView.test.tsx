// @vitest-environment happy-dom
// The router's embedded-wallet views reach their parts, each under its title.

import { cleanup, render, screen } from "@testing-library/react";
import { afterEach, beforeAll, expect, it } from "vitest";
import type { SessionState } from "../../generated/SessionState";
import type { View } from "../../generated/View";
import { WidgetRoot } from "../../components/WidgetRoot/WidgetRoot";
import { withEmbedded } from "../../testing/embedded";
import { connectedState, onView, stateView, type StateView } from "../../testing/stateView";

let base: SessionState;
let view: StateView | null = null;
beforeAll(async () => {
  base = withEmbedded(await connectedState(), {
    login: { status: "socialPopup", method: "google" },
    user: { userId: "u1", email: "me@example.com", provider: "email", preferredAccountType: "eoa" },
    update: { status: "secondaryOtp", newEmail: "new@example.com" },
  });
});
afterEach(() => {
  cleanup();
  view?.stop();
  view = null;
});

const cases: [View, string, string][] = [
  ["ConnectingSocial", "Connecting", "connecting-social"],
  ["ConnectingFarcaster", "Farcaster", "connecting-farcaster"],
  ["UpdateEmailWallet", "Update email", "update-email-wallet"],
  ["UpdateEmailPrimaryOtp", "Confirm current email", "update-email-primary-otp"],
  ["UpdateEmailSecondaryOtp", "Confirm new email", "update-email-secondary-otp"],
];

it.each(cases)("routes %s to its part, titled %s", async (route, title, testId) => {
  view = stateView(onView(base, route, ["Account"]));
  render(<WidgetRoot widget={view.model} />);
  expect(await screen.findByTestId(testId)).toBeTruthy();
  expect(screen.getByRole("dialog", { name: title })).toBeTruthy();
});

// @vitest-environment happy-dom
// SIWXSignMessage through the required sign-in session the Rust side produced: the server's
// message, Sign disabled while the sign-in chart is signing, the declined error, Close disabled.

import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, expect, it } from "vitest";
import { signInFrames } from "../../generated/fixtureFrames";
import { WidgetRoot } from "../../components/WidgetRoot/WidgetRoot";
import { scriptedWidget, settle } from "../../testing/harness";

afterEach(cleanup);

it("shows the server's message, and Sign / Cancel send their commands", async () => {
  const s = scriptedWidget(signInFrames);
  await settle();
  s.welcome();
  s.serveUntil((w) => w.state()?.siwx.status === "ready");
  render(<WidgetRoot widget={s.widget} />);
  expect(screen.getByRole("dialog", { name: "Sign in with your wallet" })).toBeTruthy();
  expect(screen.getByTestId("siwx-message").textContent).toBe(s.widget.state()?.siwx.challenge?.message);
  expect(screen.getByTestId("siwx-message").textContent).toMatch(/wants you to sign in with your Ethereum account:\n0x[0-9a-fA-F]{40}\n/);
  // Sign-in is required: the modal cannot be closed.
  expect(screen.getByRole("button", { name: "Close" }).hasAttribute("disabled")).toBe(true);
  fireEvent.click(screen.getByRole("button", { name: "Sign" }));
  fireEvent.click(screen.getByRole("button", { name: "Cancel" }));
  await settle();
  // (The widget also answers the session's wallet requests: this page has no wallet.)
  expect(s.socket().commands().filter((c) => c.type.startsWith("Siwx"))).toEqual([{ type: "SiwxSign" }, { type: "SiwxCancel" }]);
});

it("is busy while the chart is signing, and shows Signature declined after a refusal", async () => {
  const s = scriptedWidget(signInFrames);
  await settle();
  s.welcome();
  s.serveUntil((w) => w.state()?.siwx.status === "signing");
  render(<WidgetRoot widget={s.widget} />);
  const sign = screen.getByRole("button", { name: "Signing…" });
  expect(sign.hasAttribute("disabled")).toBe(true);
  expect(s.widget.charts.values().siwx).toBe("signing");
  act(() => s.serveUntil((w) => w.state()?.siwx.status === "ready"));
  expect(screen.getByRole("alert").textContent).toBe("Signature declined");
  expect(screen.getByRole("button", { name: "Sign" }).hasAttribute("disabled")).toBe(false);
});

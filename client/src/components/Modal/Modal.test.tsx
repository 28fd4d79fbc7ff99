// @vitest-environment happy-dom
// The modal chrome: open and closed follow the modal chart; the title is the router chart's view;
// Close and Escape send CloseModal when closing is allowed, and nothing when it is not.

import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, expect, it } from "vitest";
import { fixtureFrames, signInFrames } from "../../generated/fixtureFrames";
import { scriptedWidget, settle } from "../../testing/harness";
import { WidgetRoot } from "../WidgetRoot/WidgetRoot";

afterEach(cleanup);

it("opens and closes with the modal chart, titled by the router chart", async () => {
  const s = scriptedWidget(fixtureFrames);
  await settle();
  s.welcome();
  render(<WidgetRoot widget={s.widget} />);
  // Closed: no dialog; the probe below shows the widget is drawn (its theme root is there).
  expect(screen.queryByRole("dialog")).toBeNull();
  expect(document.querySelector("[data-vestibule-root]")).not.toBeNull();
  act(() => s.serveUntil((w) => w.state()?.modal.status === "open"));
  expect(s.widget.charts.values().modal).toBe("open");
  const dialog = screen.getByRole("dialog", { name: "Connect wallet" });
  expect(dialog.getAttribute("aria-modal")).toBe("true");
  // Focus moved inside, to the first control that is not Close.
  expect(document.activeElement).toBe(screen.getByRole("button", { name: "Connect Dev Wallet" }));
  fireEvent.click(screen.getByRole("button", { name: "Close" }));
  fireEvent.keyDown(document.activeElement ?? document, { key: "Escape" });
  await settle();
  expect(s.socket().commands().filter((c) => c.type === "CloseModal")).toHaveLength(2);
});

it("when sign-in is required, Close is disabled and Escape sends nothing", async () => {
  const s = scriptedWidget(signInFrames);
  await settle();
  s.welcome();
  s.serveUntil((w) => w.state()?.siwx.status === "ready");
  render(<WidgetRoot widget={s.widget} />);
  expect(s.widget.state()?.modal.closable).toBe(false);
  const close = screen.getByRole("button", { name: "Close" });
  expect(close.hasAttribute("disabled")).toBe(true);
  fireEvent.keyDown(document.activeElement ?? document, { key: "Escape" });
  // The probe: a command the view does send goes out on the same socket.
  fireEvent.click(screen.getByRole("button", { name: "Cancel" }));
  await settle();
  const sent = s.socket().commands().map((c) => c.type);
  expect(sent).toContain("SiwxCancel");
  expect(sent).not.toContain("CloseModal");
});

it("Tab and Shift+Tab wrap around inside the dialog", async () => {
  const s = scriptedWidget(fixtureFrames);
  await settle();
  s.welcome();
  s.serveUntil((w) => w.state()?.modal.status === "open");
  render(<WidgetRoot widget={s.widget} />);
  const close = screen.getByRole("button", { name: "Close" });
  const wallet = screen.getByRole("button", { name: "Connect Dev Wallet" });
  wallet.focus();
  fireEvent.keyDown(wallet, { key: "Tab" });
  expect(document.activeElement).toBe(close);
  fireEvent.keyDown(close, { key: "Tab", shiftKey: true });
  expect(document.activeElement).toBe(wallet);
});

// @vitest-environment happy-dom
// The toasts through the fixture session the Rust side produced: three of four shown, the variants,
// hover and focus pause them, a swipe and Dismiss are reported, Alt+T reaches them.

import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, expect, it } from "vitest";
import { fixtureFrames } from "../../generated/fixtureFrames";
import { scriptedWidget, settle } from "../../testing/harness";
import { WidgetRoot } from "../WidgetRoot/WidgetRoot";

afterEach(cleanup);

async function fourToasts() {
  const s = scriptedWidget(fixtureFrames);
  await settle();
  s.welcome();
  s.serveUntil((w) => (w.state()?.toasts.order.length ?? 0) >= 5);
  render(<WidgetRoot widget={s.widget} />);
  return s;
}

it("shows at most three, in order, with their variants", async () => {
  const s = await fourToasts();
  // Five queued: the rejected connect's error toast and four success toasts.
  expect(s.widget.state()?.toasts.order).toHaveLength(5);
  const shown = screen.getAllByRole("status");
  expect(shown.map((t) => t.textContent)).toEqual(["Connection rejected", 'Toast "0"\t✓ é', 'Toast "1"\t✓ é']);
  expect(shown.map((t) => t.getAttribute("data-variant"))).toEqual(["error", "success", "success"]);
});

it("reports hover, focus, a swipe and Dismiss; the server decides", async () => {
  const s = await fourToasts();
  const list = screen.getByRole("list", { name: "Notifications" });
  fireEvent.mouseEnter(list);
  fireEvent.mouseLeave(list);
  const [first] = screen.getAllByRole("status");
  fireEvent.pointerDown(first, { clientX: 10, timeStamp: 100 });
  fireEvent.pointerUp(first, { clientX: 90, timeStamp: 150 });
  fireEvent.click(screen.getAllByRole("button", { name: "Dismiss notification" })[1]);
  await settle();
  const sent = s.socket().commands();
  const id = s.widget.state()?.toasts.order[0];
  expect(sent).toContainEqual({ type: "SetToastHover", hovered: true });
  expect(sent).toContainEqual({ type: "SetToastHover", hovered: false });
  expect(sent).toContainEqual(expect.objectContaining({ type: "SwipeToast", id, distancePx: 80 }));
  expect(sent).toContainEqual({ type: "DismissToast", id: s.widget.state()?.toasts.order[1] });
});

it("Alt+T moves focus to the toasts; the timers chart shows the pause the server made", async () => {
  const s = await fourToasts();
  fireEvent.keyDown(document, { key: "t", code: "KeyT", altKey: true });
  expect(document.activeElement?.getAttribute("aria-label")).toBe("Notifications");
  act(() => s.serveUntil((w) => w.state()?.toasts.timers === "paused"));
  expect(screen.getByRole("list", { name: "Notifications" }).getAttribute("data-paused")).toBe("true");
});

// @vitest-environment happy-dom
// The social buttons: the popup opens inside the click, before the session is asked and before any
// await (a popup opened later is blocked); a page without a frame origin still asks the session.

import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, beforeAll, expect, it, vi } from "vitest";
import type { SessionState } from "../../generated/SessionState";
import { WidgetContext } from "../../context/widgetContext";
import { FRAME_ORIGIN, fakeFrame, withEmbedded } from "../../testing/embedded";
import { connectedState, onView, stateView, type StateView } from "../../testing/stateView";
import { SocialLogin } from "./SocialLogin";

let base: SessionState;
let view: StateView | null = null;
beforeAll(async () => {
  base = onView(await connectedState(), "Connect", []);
});
afterEach(() => {
  cleanup();
  vi.restoreAllMocks();
  view?.stop();
  view = null;
});

function draw(state: SessionState, frameOrigin: string | null = FRAME_ORIGIN, providers: Parameters<typeof SocialLogin>[0]["providers"] = ["google", "github"]) {
  const v = stateView(state);
  view = v;
  const log: string[] = [];
  const model = { ...v.model, embedded: fakeFrame({}, frameOrigin).host, send: (c: Parameters<typeof v.model.send>[0]) => (log.push(`send ${c.type}`), v.model.send(c)) };
  // A blocked popup (null): what is asserted is that the click opened it, at once.
  const open = vi.spyOn(window, "open").mockImplementation((url) => (log.push(`open ${String(url)}`), null));
  render(
    <WidgetContext.Provider value={model}>
      <SocialLogin providers={providers} />
    </WidgetContext.Provider>,
  );
  return { v, log, open };
}

it("opens the popup inside the click, before any await, then asks the session", () => {
  const { v, log, open } = draw(withEmbedded(base));
  fireEvent.click(screen.getByRole("button", { name: "Continue with GitHub" }));
  // Synchronously: no await between the click and these.
  expect(open).toHaveBeenCalledTimes(1);
  expect(open.mock.calls[0][0]).toBe(`${FRAME_ORIGIN}/loading`);
  expect(open.mock.calls[0][2]).toContain("width=600,height=800");
  expect(log).toEqual([`open ${FRAME_ORIGIN}/loading`, "send ConnectSocial"]);
  expect(v.commands).toEqual([{ type: "ConnectSocial", provider: "github" }]);
});

it("asks the session even when no frame origin is known (the session answers)", () => {
  const { frameOrigin: _, ...embedded } = withEmbedded(base).embedded;
  const { v, open } = draw({ ...base, embedded }, null);
  fireEvent.click(screen.getByRole("button", { name: "Continue with Google" }));
  expect(open).not.toHaveBeenCalled();
  expect(v.commands).toEqual([{ type: "ConnectSocial", provider: "google" }]);
});

it("opens no popup for Farcaster: the session is asked and the modal shows the relay's URL", () => {
  const { v, log, open } = draw(base, FRAME_ORIGIN, ["farcaster"]);
  fireEvent.click(screen.getByRole("button", { name: "Continue with Farcaster" }));
  expect(open).not.toHaveBeenCalled();
  expect(log).toEqual(["send ConnectSocial"]);
  expect(v.commands).toEqual([{ type: "ConnectSocial", provider: "farcaster" }]);
});

// @vitest-environment happy-dom
// ConnectingFarcaster: the relay's URL as a link and a QR code, Copy link, Back cancels; the frame is
// asked once to complete the login, and its failure is told to the session.

import { cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { afterEach, beforeAll, expect, it } from "vitest";
import type { SessionState } from "../../generated/SessionState";
import { WidgetContext } from "../../context/widgetContext";
import { fakeFrame, withEmbedded, type FakeFrame } from "../../testing/embedded";
import { connectedState, onView, stateView, type StateView } from "../../testing/stateView";
import { qrMatrix } from "../../components/QrCode/QrCode";
import { ConnectingFarcaster, FARCASTER_FAILED } from "./ConnectingFarcaster";

const URL_1 = "https://warpcast.com/~/siwf?channelToken=c-1";
let base: SessionState;
let view: StateView | null = null;
beforeAll(async () => {
  base = onView(await connectedState(), "ConnectingFarcaster", ["Connect"]);
});
afterEach(() => {
  cleanup();
  view?.stop();
  view = null;
});

function draw(state: SessionState, frame: FakeFrame = fakeFrame()) {
  view = stateView(state);
  render(
    <WidgetContext.Provider value={{ ...view.model, embedded: frame.host }}>
      <ConnectingFarcaster />
    </WidgetContext.Provider>,
  );
  return view;
}

it("shows the relay's URL as a link and as a QR code of that URL, and asks the frame once", async () => {
  let finish: (answer: { address: string }) => void = () => undefined;
  const frame = fakeFrame({ CONNECT_FARCASTER: () => new Promise((ok) => (finish = ok)) });
  const v = draw(withEmbedded(base, { login: { status: "socialPopup", method: "farcaster", socialUrl: URL_1 } }), frame);
  expect(screen.getByTestId("connecting-farcaster").textContent).toContain("Scan with your phone or open the link");
  const link = screen.getByTestId("farcaster-link");
  expect(link.getAttribute("href")).toBe(URL_1);
  expect(link.textContent).toBe(URL_1);
  const qr = screen.getByTestId("farcaster-qr");
  expect(qr.getAttribute("data-qr-text")).toBe(URL_1);
  expect(qr.getAttribute("viewBox")).toBe(`-4 -4 ${qrMatrix(URL_1).length + 8} ${qrMatrix(URL_1).length + 8}`);
  expect(screen.getByRole("button", { name: "Copy link" })).toBeTruthy();
  expect(frame.requests).toEqual([{ type: "CONNECT_FARCASTER", payload: {} }]);
  cleanup();
  draw(withEmbedded(base, { login: { status: "socialPopup", method: "farcaster", socialUrl: URL_1 } }), frame);
  expect(frame.requests).toHaveLength(1);
  finish({ address: "0xabc" });
  await Promise.resolve();
  expect(v.commands).toEqual([]);
});

it("waits for the URL while the channel opens, then Back cancels the login", () => {
  const frame = fakeFrame();
  const v = draw(withEmbedded(base, { login: { status: "socialStarting", method: "farcaster" } }), frame);
  expect(screen.queryByTestId("farcaster-qr")).toBeNull();
  expect(frame.requests).toEqual([]);
  fireEvent.click(screen.getByRole("button", { name: "Back" }));
  expect(v.commands).toEqual([{ type: "CancelEmbeddedLogin" }]);
});

it("tells the session the frame's failure as Failed to connect to farcaster", async () => {
  const frame = fakeFrame({ CONNECT_FARCASTER: () => Promise.reject(new Error("relay down")) });
  const v = draw(withEmbedded(base, { login: { status: "socialPopup", method: "farcaster", socialUrl: `${URL_1}-2` } }), frame);
  await waitFor(() => expect(v.commands).toEqual([{ type: "EmbeddedRequestFailed", message: FARCASTER_FAILED }]));
});

it("shows the session's message", () => {
  draw(withEmbedded(base, { login: { status: "failed", method: "farcaster", message: FARCASTER_FAILED } }));
  expect(screen.getByRole("alert").textContent).toBe(FARCASTER_FAILED);
});

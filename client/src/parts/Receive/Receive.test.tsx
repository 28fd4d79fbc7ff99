// @vitest-environment happy-dom
// The Receive view: the full address, a QR code that a real decoder (jsQR) reads back as the
// address, and Copy with its visible confirmation (or the fallback when the clipboard refuses).

import jsQR from "jsqr";
import { act, cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, beforeAll, expect, it, vi } from "vitest";
import type { SessionState } from "../../generated/SessionState";
import { WidgetRoot } from "../../components/WidgetRoot/WidgetRoot";
import { connectedState, onView, stateView, type StateView } from "../../testing/stateView";
import { qrMatrix, qrPath } from "../../components/QrCode/QrCode";
import { COPIED_MS } from "./Receive";

let base: SessionState;
let view: StateView | null = null;
beforeAll(async () => {
  base = await connectedState();
});
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
  cleanup();
  view?.stop();
  view = null;
});

/** Paints the matrix as an RGBA image (4 px per module, a 4-module quiet zone) for the decoder. */
function decode(matrix: boolean[][]): string | null {
  const scale = 4;
  const quiet = 4;
  const side = (matrix.length + 2 * quiet) * scale;
  const pixels = new Uint8ClampedArray(side * side * 4).fill(255);
  matrix.forEach((row, r) =>
    row.forEach((dark, c) => {
      if (!dark) return;
      for (let y = 0; y < scale; y++)
        for (let x = 0; x < scale; x++) {
          const i = (((r + quiet) * scale + y) * side + (c + quiet) * scale + x) * 4;
          pixels[i] = pixels[i + 1] = pixels[i + 2] = 0;
        }
    }),
  );
  return jsQR(pixels, side, side)?.data ?? null;
}

const address = () => base.connection.namespaces.eip155?.address ?? "";

async function draw(): Promise<StateView> {
  view = stateView(onView(base, "Receive"));
  render(<WidgetRoot widget={view.model} />);
  await screen.findByTestId("receive");
  return view;
}

it("encodes the plain address, which a QR decoder reads back", () => {
  expect(decode(qrMatrix(address()))).toBe(address());
  // Positive probe of the decoder: another text reads as itself, not as the address.
  expect(decode(qrMatrix("ethereum:0x0000000000000000000000000000000000000001"))).toBe("ethereum:0x0000000000000000000000000000000000000001");
  expect(qrPath([[true, false], [false, true]])).toBe("M0 0h1v1h-1zM1 1h1v1h-1z");
});

it("shows the full address, its network and the QR code drawn from the library's modules", async () => {
  await draw();
  expect(screen.getByRole("dialog", { name: "Receive" })).toBeTruthy();
  expect(screen.getByTestId("receive-address").textContent).toBe(address());
  expect(screen.getByText("Send only assets on Ethereum to this address.")).toBeTruthy();
  const qr = screen.getByRole("img", { name: `QR code of the address ${address()}` });
  expect(qr.getAttribute("data-qr-text")).toBe(address());
  expect(qr.querySelector("path")?.getAttribute("d")).toBe(qrPath(qrMatrix(address())));
});

it("copies the address and says so, then the confirmation goes", async () => {
  const writeText = vi.fn(async (_: string) => undefined);
  vi.stubGlobal("navigator", { ...navigator, clipboard: { writeText } });
  await draw();
  vi.useFakeTimers();
  await act(async () => {
    fireEvent.click(screen.getByRole("button", { name: "Copy address" }));
  });
  expect(writeText).toHaveBeenCalledWith(address());
  expect(screen.getByRole("button", { name: "Copied" })).toBeTruthy();
  expect(screen.getByTestId("receive-copy-status").textContent).toBe("Address copied to the clipboard");
  act(() => vi.advanceTimersByTime(COPIED_MS));
  expect(screen.getByRole("button", { name: "Copy address" })).toBeTruthy();
  expect(screen.getByTestId("receive-copy-status").textContent).toBe("");
});

it("tells the visitor to select the address when the clipboard refuses", async () => {
  vi.stubGlobal("navigator", { ...navigator, clipboard: { writeText: async () => Promise.reject(new Error("NotAllowedError")) } });
  await draw();
  await act(async () => {
    fireEvent.click(screen.getByRole("button", { name: "Copy address" }));
  });
  expect(screen.getByTestId("receive-copy-status").textContent).toBe("Copying is not allowed here: select the address to copy it");
  expect(screen.queryByRole("button", { name: "Copied" })).toBeNull();
});

it("Back goes back", async () => {
  const v = await draw();
  fireEvent.click(screen.getByRole("button", { name: "Back" }));
  expect(v.commands.at(-1)).toEqual({ type: "GoBack" });
});

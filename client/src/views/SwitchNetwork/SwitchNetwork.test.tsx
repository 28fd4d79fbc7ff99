// @vitest-environment happy-dom
// The SwitchNetwork view as the networkSwitch chart goes: switching, adding the chain after 4902,
// failed with the wallet's error as the server words it and Retry.

import { act, cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, beforeAll, expect, it } from "vitest";
import type { NetworkSwitchState } from "../../generated/NetworkSwitchState";
import type { SessionState } from "../../generated/SessionState";
import { WidgetRoot } from "../../components/WidgetRoot/WidgetRoot";
import { connectedState, onView, stateView, settleLazyView, type StateView } from "../../testing/stateView";

let base: SessionState;
let view: StateView | null = null;
beforeAll(async () => {
  const s = await connectedState();
  const [mainnet] = s.networks;
  base = onView({ ...s, networks: [mainnet, { ...mainnet, caipNetworkId: "eip155:31338", name: "Devnet B" }] }, "SwitchNetwork", ["Account", "Networks"]);
});
afterEach(() => {
  cleanup();
  view?.stop();
  view = null;
});

const at = (networkSwitch: NetworkSwitchState): SessionState => ({ ...base, networkSwitch });

it("asks to approve the switch, then adding the chain the wallet did not know, then shows the failure with Retry", async () => {
  view = stateView(at({ status: "switching", target: "eip155:31338", requestId: "r1", code: null, error: null }));
  render(<WidgetRoot widget={view.model} />);
  await screen.findByTestId("switch-network");
  await settleLazyView();
  expect(screen.getByRole("dialog", { name: "Switch network" })).toBeTruthy();
  expect(within(screen.getByTestId("switch-network")).getByRole("status").textContent).toBe("Approve the switch to Devnet B in your wallet.");
  expect(screen.queryByRole("button", { name: "Retry" })).toBeNull();

  act(() => view!.show(at({ status: "adding", target: "eip155:31338", requestId: "r2", code: null, error: null })));
  expect(screen.getByRole("heading", { name: "Add Devnet B" })).toBeTruthy();
  expect(within(screen.getByTestId("switch-network")).getByRole("status").textContent).toContain("does not know Devnet B yet");

  act(() => view!.show(at({ status: "failed", target: "eip155:31338", requestId: null, code: 4001, error: "Switch declined" })));
  expect(screen.getByRole("alert").textContent).toBe("Switch declined (code 4001)");
  fireEvent.click(screen.getByRole("button", { name: "Retry" }));
  expect(view.commands.at(-1)).toEqual({ type: "RetrySwitchNetwork" });
  fireEvent.click(screen.getByRole("button", { name: "Back" }));
  expect(view.commands.at(-1)).toEqual({ type: "GoBack" });
});

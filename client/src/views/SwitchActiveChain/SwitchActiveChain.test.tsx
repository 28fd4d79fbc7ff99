// @vitest-environment happy-dom
// SwitchActiveChain and the multichain Account view, through the multichain session the Rust side
// produced (Ethereum and Solana Devnet): the view's params, its button, the namespace switch, and the
// features the active namespace has.

import { act, cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, expect, it } from "vitest";
import { multichainFrames } from "../../generated/fixtureFrames";
import { WidgetRoot } from "../../components/WidgetRoot/WidgetRoot";
import { scriptedWidget, settle } from "../../testing/harness";
import { stateView } from "../../testing/stateView";

afterEach(cleanup);

async function at(until: Parameters<ReturnType<typeof scriptedWidget>["serveUntil"]>[0]) {
  const s = scriptedWidget(multichainFrames);
  await settle();
  s.welcome();
  s.serveUntil(until);
  render(<WidgetRoot widget={s.widget} />);
  return s;
}

it("shows the namespace and network to switch to, with a way to connect there", async () => {
  const s = await at((w) => w.state()?.router.current === "SwitchActiveChain");
  const params = s.widget.state()?.router.stack.at(-1)?.params;
  expect(params).toEqual({ switchToChain: "solana", navigateTo: "Connect", navigateWithReplace: true, network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1" });
  const dialog = screen.getByRole("dialog", { name: "Switch chain" });
  // The view is a chunk of its own: drawn once loaded.
  expect(await within(dialog).findByRole("heading", { name: "Switch to Solana" })).toBeTruthy();
  expect(within(dialog).getByTestId("switch-active-chain-network").textContent).toContain("Solana Devnet");
  fireEvent.click(within(dialog).getByRole("button", { name: "Connect a Solana wallet" }));
  fireEvent.click(within(dialog).getByRole("button", { name: "Back" }));
  await settle();
  expect(s.socket().commands().filter((c) => c.type === "ConfirmSwitchActiveChain" || c.type === "GoBack")).toEqual([{ type: "ConfirmSwitchActiveChain" }, { type: "GoBack" }]);
});

it("after confirming, Connect lists the Solana wallet with its badge", async () => {
  const s = await at((w) => w.state()?.router.current === "Connect" && w.state()?.connection.activeNamespace === "solana");
  const button = screen.getByRole("button", { name: /Connect Dev Solana Wallet/ });
  expect(within(button).getByText("Solana")).toBeTruthy();
  fireEvent.click(button);
  await settle();
  expect(s.socket().commands().filter((c) => c.type === "SelectConnector").at(-1)).toEqual({ type: "SelectConnector", connectorId: "solana:Dev Solana Wallet" });
});

it("the Account view switches namespaces and shows only what the active one supports", async () => {
  const s = await at((w) => w.state()?.modal.status === "open" && w.state()?.router.current === "Account" && w.state()?.connection.activeNamespace === "solana");
  const solana = s.widget.state()?.connection.namespaces.solana?.address ?? "";
  expect(screen.getByTestId("account-address").textContent).toBe(`${solana.slice(0, 4)}…${solana.slice(-6)}`);
  expect(screen.getByTestId("account-network").textContent).toBe("Solana Devnet");
  expect(screen.getByTestId("namespace-solana").getAttribute("aria-pressed")).toBe("true");
  expect(screen.getByTestId("namespace-eip155").getAttribute("data-connected")).toBe("true");
  // Spec section 9: Solana has no activity.
  expect(screen.getAllByRole("tab").map((t) => t.textContent)).toEqual(["Tokens", "NFTs"]);
  fireEvent.click(screen.getByTestId("namespace-eip155"));
  await settle();
  expect(s.socket().commands().filter((c) => c.type === "SwitchActiveNamespace").at(-1)).toEqual({ type: "SwitchActiveNamespace", namespace: "eip155" });
  act(() => s.serveUntil());
  expect(s.widget.state()?.connection.activeNamespace).toBe("eip155");
  expect(screen.getByTestId("account-network").textContent).toBe("Ethereum");
  expect(screen.getAllByRole("tab").map((t) => t.textContent)).toEqual(["Tokens", "NFTs", "Activity"]);
  fireEvent.click(screen.getByRole("button", { name: "Disconnect" }));
  await settle();
  expect(s.socket().commands().filter((c) => c.type === "Disconnect").at(-1)).toEqual({ type: "Disconnect", namespace: "eip155" });
});

it("names an Ethereum wallet with an (and a Solana one with a)", async () => {
  const s = await at((w) => w.state()?.router.current === "SwitchActiveChain");
  const state = s.widget.state();
  if (!state) throw new Error("no state");
  const route = state.router.stack.at(-1);
  const ethereum = { ...state, router: { ...state.router, stack: [...state.router.stack.slice(0, -1), { view: "SwitchActiveChain" as const, params: { ...route?.params, switchToChain: "eip155" as const } }] } };
  cleanup();
  const view = stateView(ethereum);
  render(<WidgetRoot widget={view.model} />);
  expect(await screen.findByRole("button", { name: "Connect an Ethereum wallet" })).toBeTruthy();
  view.stop();
});

// @vitest-environment happy-dom
// The Networks view: the session's EVM networks with the current one marked, SwitchNetwork on a
// choice, the synthetic unsupported network's prompt, and `enableNetworkSwitch` respected.

import { cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, beforeAll, expect, it } from "vitest";
import type { SessionState } from "../../generated/SessionState";
import { WidgetRoot } from "../../components/WidgetRoot/WidgetRoot";
import { connectedState, onView, SOLANA_NETWORK, stateView, withSolanaAccount, type StateView } from "../../testing/stateView";

let base: SessionState;
let view: StateView | null = null;
beforeAll(async () => {
  const s = await connectedState();
  const [mainnet] = s.networks;
  base = onView({ ...s, networks: [mainnet, { ...mainnet, caipNetworkId: "eip155:31338", name: "Devnet B", testnet: true }] }, "Networks");
});
afterEach(() => {
  cleanup();
  view?.stop();
  view = null;
});

async function draw(state: SessionState): Promise<StateView> {
  view = stateView(state);
  render(<WidgetRoot widget={view.model} />);
  await screen.findByTestId("networks");
  return view;
}

const onNetwork = (state: SessionState, network: { caipNetworkId: string; name: string; supported: boolean }): SessionState => ({
  ...state,
  connection: { ...state.connection, namespaces: { ...state.connection.namespaces, eip155: { ...state.connection.namespaces.eip155!, network } } },
});

it("lists the networks with the current one marked, and switches to the one chosen", async () => {
  const v = await draw(base);
  expect(screen.getByRole("dialog", { name: "Networks" })).toBeTruthy();
  const list = screen.getByRole("list", { name: "Networks" });
  const buttons = within(list).getAllByRole("button");
  expect(buttons.map((b) => [b.getAttribute("data-network"), b.getAttribute("aria-current")])).toEqual([
    ["eip155:1", "true"],
    ["eip155:31338", null],
  ]);
  expect(buttons[1].textContent).toContain("Testnet");
  fireEvent.click(buttons[1]);
  expect(v.commands.at(-1)).toEqual({ type: "SwitchNetwork", network: "eip155:31338" });
  fireEvent.click(screen.getByRole("button", { name: "Back" }));
  expect(v.commands.at(-1)).toEqual({ type: "GoBack" });
});

it("prompts a switch from the synthetic unsupported network, nothing marked current", async () => {
  const v = await draw(onNetwork(base, { caipNetworkId: "eip155:999", name: "Unsupported network", supported: false }));
  expect(screen.getByTestId("networks-unsupported").textContent).toBe(
    "Your wallet is on Unsupported network, which this app does not support. Switch to one of these networks.",
  );
  expect(screen.getAllByRole("button").filter((b) => b.getAttribute("aria-current") === "true")).toEqual([]);
  fireEvent.click(screen.getByRole("button", { name: /Ethereum/ }));
  expect(v.commands.at(-1)).toEqual({ type: "SwitchNetwork", network: "eip155:1" });
});

it("only informs when the host turned network switching off", async () => {
  const v = await draw({ ...base, options: { ...base.options, enableNetworkSwitch: false } });
  expect(screen.getByText("Switch networks in your wallet.")).toBeTruthy();
  const devnet = screen.getByRole("button", { name: /Devnet B/ });
  expect(devnet.hasAttribute("disabled")).toBe(true);
  fireEvent.click(devnet);
  expect(v.commands.filter((c) => c.type === "SwitchNetwork")).toEqual([]);
});

it("waits while a switch is pending", async () => {
  await draw({ ...base, networkSwitch: { status: "switching", target: "eip155:31338", requestId: "r1", code: null, error: null } });
  expect(screen.getByRole("button", { name: /Devnet B/ }).hasAttribute("disabled")).toBe(true);
  cleanup();
  view?.stop();
  // Positive probe: the same view with nothing pending lets the visitor choose.
  await draw(base);
  expect(screen.getByRole("button", { name: /Devnet B/ }).hasAttribute("disabled")).toBe(false);
});

it("with a Solana account active, lists the Solana clusters and switches among them", async () => {
  const solana = withSolanaAccount(base);
  const testnet = { ...solana.networks.find((n) => n.caipNetworkId === SOLANA_NETWORK)!, caipNetworkId: "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z", name: "Solana Testnet" };
  const v = await draw({ ...solana, networks: [...solana.networks, testnet] });
  const buttons = within(screen.getByRole("list", { name: "Networks" })).getAllByRole("button");
  expect(buttons.map((b) => [b.getAttribute("data-network"), b.getAttribute("aria-current"), b.hasAttribute("disabled")])).toEqual([
    [SOLANA_NETWORK, "true", false],
    [testnet.caipNetworkId, null, false],
  ]);
  fireEvent.click(buttons[1]);
  expect(v.commands.at(-1)).toEqual({ type: "SwitchNetwork", network: testnet.caipNetworkId });
});

it("offers only the clusters a Solana account's wallet lists", async () => {
  // Given a Solana account on devnet whose wallet lists devnet only, in a session with testnet too.
  const testnet = { ...base.networks[0], caipNetworkId: "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z", name: "Solana Testnet", testnet: true };
  const solana = withSolanaAccount(base);
  const withTestnet = { ...solana, networks: [...solana.networks, testnet] };
  const listing = (signableNetworks?: string[]): SessionState => ({
    ...withTestnet,
    connection: {
      ...withTestnet.connection,
      namespaces: { ...withTestnet.connection.namespaces, solana: { ...withTestnet.connection.namespaces.solana!, signableNetworks } },
    },
  });
  const v = await draw(listing([SOLANA_NETWORK]));
  // Then testnet is shown, marked, and cannot be chosen.
  const button = screen.getByRole("button", { name: /Solana Testnet/ });
  expect(button.textContent).toContain("Not in your wallet");
  expect(button.hasAttribute("disabled")).toBe(true);
  fireEvent.click(button);
  expect(v.commands.filter((c) => c.type === "SwitchNetwork")).toEqual([]);
  cleanup();
  view?.stop();
  // Positive probe: a wallet that lists no chains (any) lets the visitor choose it.
  const w = await draw(listing(undefined));
  const choosable = screen.getByRole("button", { name: /Solana Testnet/ });
  expect(choosable.textContent).not.toContain("Not in your wallet");
  fireEvent.click(choosable);
  expect(w.commands.at(-1)).toEqual({ type: "SwitchNetwork", network: testnet.caipNetworkId });
});

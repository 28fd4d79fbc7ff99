// @vitest-environment happy-dom
// The Account view's EVM account features, drawn from states the server's events make: the native
// balance in the header, the Tokens tab (amounts and fiat as the server formats them, loading, the
// failure), RefreshBalances when it shows, the network as a button to Networks, and the wallet
// feature buttons in the host's order.

import { act, cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, beforeAll, expect, it } from "vitest";
import type { SessionState } from "../../generated/SessionState";
import { WidgetRoot } from "../../components/WidgetRoot/WidgetRoot";
import { connectedState, served, SOLANA_NETWORK, solanaToken, stateView, token, withBalances, withSolanaAccount, type StateView } from "../../testing/stateView";

let base: SessionState;
let view: StateView | null = null;
beforeAll(async () => {
  base = await connectedState();
});
afterEach(() => {
  cleanup();
  view?.stop();
  view = null;
});

function draw(state: SessionState): StateView {
  view = stateView(state);
  render(<WidgetRoot widget={view.model} />);
  return view;
}

const eth = token("ETH", { display: "1.234", quantity: "1.2345678", usdValue: "4321.98" });
const usdc = token("USDC", { decimals: 6, raw: "2500000", quantity: "2.5", display: "2.5" });

it("shows the native balance in the header and every balance in the Tokens tab, fiat only where the server priced it", async () => {
  const v = draw(withBalances(base, eth, [usdc], "4324.48"));
  expect(screen.getByTestId("account-balance").textContent).toBe("1.234 ETH · $4324.48");
  const rows = await screen.findAllByTestId("token-balance");
  expect(rows.map((r) => within(r).getByTestId("token-amount").textContent)).toEqual(["1.234 ETH", "2.5 USDC"]);
  // ETH has a price; USDC has none, so no fiat is drawn for it (never a made-up one).
  expect(within(rows[0]).getByTestId("token-fiat").textContent).toBe("$4321.98");
  expect(within(rows[1]).queryByTestId("token-fiat")).toBeNull();
  expect(v.commands).toContainEqual({ type: "RefreshBalances" });
});

it("shows no fiat at all without a price source", async () => {
  draw(withBalances(base, token("ETH")));
  expect(screen.getByTestId("account-balance").textContent).toBe("1.234 ETH");
  const [row] = await screen.findAllByTestId("token-balance");
  expect(within(row).getByTestId("token-amount").textContent).toBe("1.234 ETH");
  expect(within(row).queryByTestId("token-fiat")).toBeNull();
});

it("is loading until the balances arrive, then lists them", async () => {
  const loading = { ...served(base), balances: { ...base.balances, status: "loading" as const } };
  const v = draw(loading);
  expect((await screen.findByText(/Loading balances/)).getAttribute("role")).toBe("status");
  act(() => v.show(withBalances(base, eth)));
  expect((await screen.findAllByTestId("token-balance")).length).toBe(1);
  expect(screen.queryByText(/Loading balances/)).toBeNull();
});

it("shows Token Balance Unavailable when the fetch failed", async () => {
  draw({ ...served(base), balances: { ...base.balances, status: "failed", error: "Token Balance Unavailable", retryBlockedUntilMs: 30_000 } });
  expect((await screen.findByRole("alert")).textContent).toBe("Token Balance Unavailable");
  expect(screen.queryByTestId("token-balance")).toBeNull();
});

it("asks for balances only where the chain service serves the account's network", async () => {
  const v = draw(base);
  expect(await within(screen.getByRole("tabpanel")).findByText("Token balances are not available on this deployment yet.")).toBeTruthy();
  expect(v.commands.filter((c) => c.type === "RefreshBalances")).toEqual([]);
  // Positive probe: the same account on a served network asks.
  cleanup();
  v.stop();
  const w = draw(served(base));
  expect(w.commands).toEqual([{ type: "RefreshBalances" }]);
});

it("prompts a switch on the synthetic unsupported network instead of listing balances", async () => {
  const conn = base.connection.namespaces.eip155!;
  const state = served({
    ...base,
    connection: {
      ...base.connection,
      namespaces: { ...base.connection.namespaces, eip155: { ...conn, network: { caipNetworkId: "eip155:999999", name: "Unsupported network", supported: false } } },
    },
  });
  const v = draw(state);
  expect(await screen.findByText("Switch to a supported network to see your balances.")).toBeTruthy();
  expect(screen.getByTestId("account-network").getAttribute("data-supported")).toBe("false");
  expect(v.commands.filter((c) => c.type === "RefreshBalances")).toEqual([]);
});

it("makes the network a button to Networks when network switching is on, and plain text when off", () => {
  const v = draw(served(base));
  fireEvent.click(screen.getByRole("button", { name: "Network: Ethereum. Switch network" }));
  expect(v.commands.at(-1)).toEqual({ type: "Navigate", view: "Networks" });
  cleanup();
  v.stop();
  draw({ ...base, options: { ...base.options, enableNetworkSwitch: false } });
  expect(screen.getByTestId("account-network").tagName).toBe("P");
  expect(screen.getByTestId("account-network").textContent).toBe("Ethereum");
  expect(screen.queryByRole("button", { name: /Switch network/ })).toBeNull();
});

it("shows Receive and Send in the spec's default order, or the host's, and navigates to them", () => {
  const v = draw(base);
  const group = screen.getByRole("group", { name: "Wallet features" });
  expect(within(group).getAllByRole("button").map((b) => b.textContent)).toEqual(["Receive", "Send"]);
  fireEvent.click(within(group).getByRole("button", { name: "Send" }));
  fireEvent.click(within(group).getByRole("button", { name: "Receive" }));
  expect(v.commands.filter((c) => c.type === "Navigate")).toEqual([
    { type: "Navigate", view: "Send" },
    { type: "Navigate", view: "Receive" },
  ]);
  cleanup();
  v.stop();
  draw({ ...base, options: { ...base.options, features: { ...base.options.features, walletFeaturesOrder: ["send", "swaps", "receive"] } } });
  expect(within(screen.getByRole("group", { name: "Wallet features" })).getAllByRole("button").map((b) => b.textContent)).toEqual(["Send", "Receive"]);
});

it("leaves out the features the host turned off", () => {
  draw({ ...base, options: { ...base.options, features: { ...base.options.features, send: false } } });
  expect(within(screen.getByRole("group", { name: "Wallet features" })).getAllByRole("button").map((b) => b.textContent)).toEqual(["Receive"]);
  cleanup();
  view?.stop();
  draw({ ...base, options: { ...base.options, features: { ...base.options.features, send: false, receive: false } } });
  expect(screen.queryByRole("group", { name: "Wallet features" })).toBeNull();
  // Positive probe: the view is drawn.
  expect(screen.getByTestId("account-address")).toBeTruthy();
});

it("shows a Solana account's SOL and SPL balances, asks for them, and offers Send", async () => {
  const solana = withSolanaAccount(base);
  const sol = solanaToken("SOL", null, { raw: "10000000000", quantity: "10", display: "10" });
  const vdt = solanaToken("VDT", "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU", { raw: "1000000000", quantity: "1000", display: "1000" });
  const address = solana.connection.namespaces.solana?.address ?? null;
  const v = draw({ ...solana, balances: { ...solana.balances, status: "loaded", network: SOLANA_NETWORK, address, native: sol, tokens: [vdt], totalUsd: null, fetchedMs: 1, lastFetch: 1 } });
  expect(v.commands).toContainEqual({ type: "RefreshBalances" });
  expect(screen.getByTestId("account-balance").textContent).toBe("10 SOL");
  const rows = await screen.findAllByTestId("token-balance");
  expect(rows.map((r) => [r.getAttribute("data-asset"), within(r).getByTestId("token-amount").textContent])).toEqual([
    [sol.asset, "10 SOL"],
    [vdt.asset, "1000 VDT"],
  ]);
  expect(within(screen.getByRole("group", { name: "Wallet features" })).getAllByRole("button").map((b) => b.textContent)).toEqual(["Receive", "Send"]);
});

it("offers no Send on a namespace without transfers, and says a Solana network is not served when it is not", async () => {
  const solana = withSolanaAccount(base);
  const v = draw({ ...solana, chainService: { networks: [] }, connection: { ...solana.connection, activeFeatures: { ...solana.connection.activeFeatures, send: false } } });
  expect(await within(screen.getByRole("tabpanel")).findByText("Token balances are not available on this deployment yet.")).toBeTruthy();
  expect(within(screen.getByRole("group", { name: "Wallet features" })).getAllByRole("button").map((b) => b.textContent)).toEqual(["Receive"]);
  expect(v.commands.filter((c) => c.type === "RefreshBalances")).toEqual([]);
});

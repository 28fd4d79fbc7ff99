// @vitest-environment happy-dom
// The Activity tab drawn from the server's activity state: newest first, grouped by year and month,
// + / − per transfer, "Load more" while there is a next cursor, the spec's messages.

import { act, cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, beforeAll, expect, it } from "vitest";
import type { SessionState } from "../../generated/SessionState";
import type { ActivityTransaction } from "../../generated/ActivityTransaction";
import { WidgetRoot } from "../../components/WidgetRoot/WidgetRoot";
import { connectedState, served, stateView, transaction, settleLazyView, type StateView } from "../../testing/stateView";
import { groupByMonth, monthTitle, transferText } from "./Activity";

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

function withActivity(transactions: ActivityTransaction[], over: Partial<SessionState["activity"]> = {}): SessionState {
  const address = base.connection.namespaces.eip155?.address ?? null;
  return { ...served(base), activity: { ...base.activity, status: "loaded", network: "eip155:1", address, transactions, lastFetch: 1, ...over } };
}

async function drawTab(state: SessionState): Promise<StateView> {
  view = stateView(state);
  render(<WidgetRoot widget={view.model} />);
  fireEvent.click(screen.getByRole("tab", { name: "Activity" }));
  await screen.findByTestId("activity");
  await settleLazyView();
  return view;
}

const me = "0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025";
const other = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const november = [
  transaction("0xa2", { minedAt: Date.UTC(2026, 10, 21) / 1000, operationType: "receive", sentFrom: other, sentTo: me, transfers: [{ symbol: "USDC", quantity: "12.5", sign: "plus", nft: null }] }),
  transaction("0xa1", { minedAt: Date.UTC(2026, 10, 2) / 1000, transfers: [{ symbol: "ETH", quantity: "0.5", sign: "minus", nft: null }] }),
];
const october = [transaction("0xb1", { minedAt: Date.UTC(2026, 9, 30) / 1000, yearMonth: "2026-10", status: "failed", operationType: "execute", transfers: [] })];

it("names months in UTC and groups consecutive transactions by month", () => {
  expect(monthTitle("2026-11")).toBe("November 2026");
  expect(monthTitle("2025-01")).toBe("January 2025");
  expect(groupByMonth([...november, ...october]).map((g) => [g.yearMonth, g.transactions.map((t) => t.id)])).toEqual([
    ["2026-11", ["0xa2", "0xa1"]],
    ["2026-10", ["0xb1"]],
  ]);
  expect(transferText({ symbol: "ETH", quantity: "0.5", sign: "minus", nft: null })).toBe("− 0.5 ETH");
  expect(transferText({ symbol: "USDC", quantity: "1", sign: "plus", nft: null })).toBe("+ 1 USDC");
  expect(transferText({ symbol: "ETH", quantity: "1", sign: null, nft: null })).toBe("1 ETH");
});

it("asks for the newest page when the tab shows, and lists the transactions newest first under their month", async () => {
  const v = await drawTab(withActivity([...november, ...october]));
  expect(v.commands).toContainEqual({ type: "LoadActivity", more: false });
  const months = screen.getAllByTestId("activity-month");
  expect(months.map((m) => within(m).getByRole("heading").textContent)).toEqual(["November 2026", "October 2026"]);
  expect(within(months[0]).getAllByTestId("activity-transaction").map((r) => r.getAttribute("data-hash"))).toEqual(["0xa2", "0xa1"]);
  const [received, sent] = within(months[0]).getAllByTestId("activity-transaction");
  expect(within(received).getByTestId("activity-transfer").textContent).toBe("+ 12.5 USDC");
  expect(received.textContent).toContain("Receive");
  expect(received.textContent).toContain(`from ${other.slice(0, 4)}…${other.slice(-6)}`);
  expect(within(sent).getByTestId("activity-transfer").textContent).toBe("− 0.5 ETH");
  expect(sent.textContent).toContain(`to ${other.slice(0, 4)}…${other.slice(-6)}`);
  expect(within(months[1]).getByTestId("activity-transaction").textContent).toContain("Execute · Failed");
  // No next cursor: no Load more.
  expect(screen.queryByRole("button", { name: "Load more" })).toBeNull();
});

it("loads the next page while the server has a cursor, busy while it loads", async () => {
  const v = await drawTab(withActivity(november, { next: "cursor-2" }));
  fireEvent.click(screen.getByRole("button", { name: "Load more" }));
  expect(v.commands.at(-1)).toEqual({ type: "LoadActivity", more: true });
  act(() => v.show(withActivity(november, { status: "loading", next: "cursor-2", pending: { id: 2, network: "eip155:1", address: me, cursor: "cursor-2" } })));
  expect(screen.getByRole("button", { name: "Loading…" }).hasAttribute("disabled")).toBe(true);
  act(() => v.show(withActivity([...november, ...october], { next: null, lastFetch: 2 })));
  expect(screen.getAllByTestId("activity-transaction").length).toBe(3);
  expect(screen.queryByRole("button", { name: /Load more|Loading/ })).toBeNull();
});

it("shows Failed to fetch transactions with the list emptied", async () => {
  await drawTab(withActivity([], { status: "failed", error: "Failed to fetch transactions" }));
  expect(within(screen.getByTestId("activity")).getByRole("alert").textContent).toBe("Failed to fetch transactions");
  expect(screen.queryByTestId("activity-transaction")).toBeNull();
});

it("says when there are no transactions, and is loading before the first page", async () => {
  const v = await drawTab({ ...served(base), activity: { ...base.activity, status: "loading" } });
  expect(screen.getByText(/Loading transactions/)).toBeTruthy();
  act(() => v.show(withActivity([])));
  expect(screen.getByText("No transactions yet.")).toBeTruthy();
});

it("says transactions can't be fetched without an address, and asks for none", async () => {
  const conn = base.connection.namespaces.eip155!;
  const state = { ...base, connection: { ...base.connection, namespaces: { ...base.connection.namespaces, eip155: { ...conn, address: null } } } };
  const v = await drawTab(state);
  expect(within(screen.getByTestId("activity")).getByRole("alert").textContent).toBe("Transactions can't be fetched without an accountAddress");
  expect(v.commands.filter((c) => c.type === "LoadActivity")).toEqual([]);
});

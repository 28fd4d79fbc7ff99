// @vitest-environment happy-dom
// The Send view drawn from the server's send state: the token picker from the balances, the form
// sent as SetSendForm once typing pauses (not per keystroke), SubmitSend, the sending state, the
// server's messages, a reset form (a new formVersion) starting the inputs again, and the sent list.

import { act, cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, beforeAll, expect, it, vi } from "vitest";
import type { SessionState } from "../../generated/SessionState";
import type { SendState } from "../../generated/SendState";
import { WidgetRoot } from "../../components/WidgetRoot/WidgetRoot";
import { connectedState, onView, SOLANA_ADDRESS, SOLANA_NETWORK, solanaToken, stateView, token, withBalances, withSolanaAccount, settleLazyView, type StateView } from "../../testing/stateView";
import { explorerTxUrl, FORM_DEBOUNCE_MS } from "./Send";

/** The account the transfers below were sent from (the view does not show it). */
const SENDER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";

let base: SessionState;
let view: StateView | null = null;
beforeAll(async () => {
  base = await connectedState();
});
afterEach(() => {
  vi.useRealTimers();
  cleanup();
  view?.stop();
  view = null;
});

const eth = token("ETH");
const usdc = token("USDC", { decimals: 6, raw: "2500000", quantity: "2.5", display: "2.5" });
const receiver = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

function sendState(over: Partial<SendState> = {}): SessionState {
  const s = onView(withBalances(base, eth, [usdc]), "Send");
  return { ...s, send: { ...s.send, ...over } };
}

async function draw(state: SessionState): Promise<StateView> {
  view = stateView(state);
  render(<WidgetRoot widget={view.model} />);
  await screen.findByTestId("send");
  await settleLazyView();
  return view;
}

const forms = (v: StateView) => v.commands.filter((c) => c.type === "SetSendForm");

it("offers the balances as tokens and asks for fresh balances", async () => {
  const v = await draw(sendState());
  expect(screen.getByRole("dialog", { name: "Send" })).toBeTruthy();
  const picker = screen.getByLabelText("Token");
  expect(within(picker).getAllByRole("option").map((o) => [o.getAttribute("value"), o.textContent])).toEqual([
    ["", "Choose a token"],
    [eth.asset, "ETH (1.234)"],
    [usdc.asset, "USDC (2.5)"],
  ]);
  expect(v.commands).toContainEqual({ type: "RefreshBalances" });
});

it("sends the form once typing pauses, not per keystroke, and the chosen token at once", async () => {
  const v = await draw(sendState());
  vi.useFakeTimers();
  fireEvent.change(screen.getByLabelText("Token"), { target: { value: usdc.asset } });
  expect(forms(v)).toEqual([{ type: "SetSendForm", form: { token: usdc.asset, amount: "", receiver: "" } }]);
  expect(screen.getByTestId("send-balance").textContent).toBe("Balance: 2.5 USDC");
  const amount = screen.getByLabelText("Amount");
  for (const typed of ["1", "1.", "1.2"]) fireEvent.change(amount, { target: { value: typed } });
  act(() => vi.advanceTimersByTime(FORM_DEBOUNCE_MS - 1));
  expect(forms(v).length).toBe(1);
  act(() => vi.advanceTimersByTime(1));
  expect(forms(v).at(-1)).toEqual({ type: "SetSendForm", form: { token: usdc.asset, amount: "1.2", receiver: "" } });
  expect(forms(v).length).toBe(2);
});

it("submits the form as typed (a pending debounce is not sent as well)", async () => {
  const v = await draw(sendState());
  vi.useFakeTimers();
  fireEvent.change(screen.getByLabelText("Token"), { target: { value: eth.asset } });
  fireEvent.change(screen.getByLabelText("Amount"), { target: { value: "0.1" } });
  fireEvent.change(screen.getByLabelText("To"), { target: { value: receiver } });
  fireEvent.click(screen.getByRole("button", { name: "Send" }));
  expect(v.commands.at(-1)).toEqual({ type: "SubmitSend", form: { token: eth.asset, amount: "0.1", receiver } });
  const before = forms(v).length;
  act(() => vi.advanceTimersByTime(FORM_DEBOUNCE_MS * 2));
  expect(forms(v).length).toBe(before);
});

it("Max fills in the token's whole balance", async () => {
  const v = await draw(sendState({ form: { token: usdc.asset, amount: "", receiver: "" } }));
  fireEvent.click(screen.getByRole("button", { name: "Max" }));
  expect((screen.getByLabelText("Amount") as HTMLInputElement).value).toBe("2.5");
  expect(forms(v).at(-1)).toEqual({ type: "SetSendForm", form: { token: usdc.asset, amount: "2.5", receiver: "" } });
});

it("starts from the server's form (a reload keeps what was typed)", async () => {
  await draw(sendState({ form: { token: eth.asset, amount: "0.25", receiver } }));
  expect((screen.getByLabelText("Token") as HTMLSelectElement).value).toBe(eth.asset);
  expect((screen.getByLabelText("Amount") as HTMLInputElement).value).toBe("0.25");
  expect((screen.getByLabelText("To") as HTMLInputElement).value).toBe(receiver);
});

it("shows the server's message, and is busy while the wallet is asked", async () => {
  const v = await draw(sendState({ error: "An amount and receiver address are required" }));
  expect(screen.getByRole("alert").textContent).toBe("An amount and receiver address are required");
  const transfer = { requestId: "r1", network: "eip155:1", kind: "native" as const, asset: eth.asset, symbol: "ETH", amount: "0.1", receiver, from: SENDER, value: "0x16345785d8a0000", data: "0x" };
  act(() => v.show(sendState({ status: "sending", sending: transfer, form: { token: eth.asset, amount: "0.1", receiver } })));
  const button = screen.getByRole("button", { name: "Confirm in your wallet…" });
  expect(button.hasAttribute("disabled")).toBe(true);
  expect((screen.getByLabelText("Amount") as HTMLInputElement).disabled).toBe(true);
  expect(screen.queryByRole("alert")).toBeNull();
  act(() => v.show(sendState({ error: "User rejected the transaction", form: { token: eth.asset, amount: "0.1", receiver } })));
  expect(screen.getByRole("alert").textContent).toBe("User rejected the transaction");
  expect(screen.getByRole("button", { name: "Send" }).hasAttribute("disabled")).toBe(false);
});

it("starts the inputs again when the server resets the form, and lists the sent transactions with their status", async () => {
  const form = { token: eth.asset, amount: "0.1", receiver };
  const explorer = (state: SessionState): SessionState => ({ ...state, networks: state.networks.map((n) => ({ ...n, blockExplorers: ["https://explorer.test/"] })) });
  const v = await draw(explorer(sendState({ form })));
  const transfer = { requestId: "r1", network: "eip155:1", kind: "native" as const, asset: eth.asset, symbol: "ETH", amount: "0.1", receiver, from: SENDER, value: "0x16345785d8a0000", data: "0x" };
  const hash = `0x${"ab".repeat(32)}`;
  act(() => v.show(sendState({ formVersion: 1, sent: [{ hash, transfer, status: "pending", blockNumber: null, sentMs: 1 }] })));
  expect((screen.getByLabelText("Amount") as HTMLInputElement).value).toBe("");
  expect((screen.getByLabelText("To") as HTMLInputElement).value).toBe("");
  const row = screen.getByTestId("sent-transaction");
  expect(row.getAttribute("data-status")).toBe("pending");
  expect(row.textContent).toContain("0.1 ETH");
  expect(row.textContent).toContain("Pending");
  act(() => v.show(explorer(sendState({ formVersion: 1, sent: [{ hash, transfer, status: "confirmed", blockNumber: 7, sentMs: 1 }] }))));
  expect(screen.getByTestId("sent-transaction").textContent).toContain("Confirmed");
  // The explorer of the transfer's network links the transaction.
  expect(within(screen.getByTestId("sent-transaction")).getByRole("link").getAttribute("href")).toBe(`https://explorer.test/tx/${hash}`);
  act(() => v.show(sendState({ formVersion: 1, sent: [{ hash, transfer, status: "reverted", blockNumber: 7, sentMs: 1 }] })));
  expect(screen.getByTestId("sent-transaction").textContent).toContain("Reverted");
});

it("links each sent transaction to its own network's explorer (a switch between two sends)", async () => {
  const state = sendState();
  const [mainnet] = state.networks;
  const arbitrum = { ...mainnet, caipNetworkId: "eip155:42161", name: "Arbitrum One", blockExplorers: ["https://arbiscan.io"] };
  const networks = [{ ...mainnet, blockExplorers: ["https://etherscan.io"] }, arbitrum];
  const transfer = (network: string) => ({ requestId: "r1", network, kind: "native" as const, asset: eth.asset, symbol: "ETH", amount: "0.1", receiver, from: SENDER, value: "0x16345785d8a0000", data: "0x" });
  const [first, second] = [`0x${"ab".repeat(32)}`, `0x${"cd".repeat(32)}`];
  await draw({
    ...state,
    networks,
    send: {
      ...state.send,
      sent: [
        { hash: second, transfer: transfer("eip155:42161"), status: "confirmed", blockNumber: 9, sentMs: 2 },
        { hash: first, transfer: transfer("eip155:1"), status: "confirmed", blockNumber: 7, sentMs: 1 },
      ],
    },
  });
  const links = screen.getAllByTestId("sent-transaction").map((row) => within(row).getByRole("link").getAttribute("href"));
  expect(links).toEqual([`https://arbiscan.io/tx/${second}`, `https://etherscan.io/tx/${first}`]);
});

it("sends typing not sent yet when the view goes away, but not after the server reset the form", async () => {
  const v = await draw(sendState());
  vi.useFakeTimers();
  fireEvent.change(screen.getByLabelText("To"), { target: { value: receiver } });
  act(() => v.show(onView(sendState(), "Account", [])));
  expect(forms(v).at(-1)).toEqual({ type: "SetSendForm", form: { token: null, amount: "", receiver } });
  cleanup();
  v.stop();
  vi.useRealTimers();
  const w = await draw(sendState());
  vi.useFakeTimers();
  fireEvent.change(screen.getByLabelText("To"), { target: { value: receiver } });
  act(() => w.show(sendState({ formVersion: 1 })));
  act(() => vi.advanceTimersByTime(FORM_DEBOUNCE_MS * 2));
  expect(forms(w)).toEqual([]);
});

it("Back goes back to Account", async () => {
  const v = await draw(sendState());
  fireEvent.click(screen.getByRole("button", { name: "Back" }));
  expect(v.commands.at(-1)).toEqual({ type: "GoBack" });
});

it("sends from a Solana account: SOL and SPL tokens, a base58 receiver, the Solana explorer's link with its cluster", async () => {
  const sol = solanaToken("SOL", null, { raw: "10000000000", quantity: "10", display: "10" });
  const vdt = solanaToken("VDT", "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU", { raw: "1000000000", quantity: "1000", display: "1000" });
  const solana = withSolanaAccount(base, "https://explorer.solana.com/?cluster=devnet");
  const state = onView({ ...solana, balances: { ...solana.balances, status: "loaded", network: SOLANA_NETWORK, address: solana.connection.namespaces.solana?.address ?? null, native: sol, tokens: [vdt], totalUsd: null, fetchedMs: 1, lastFetch: 1 } }, "Send");
  const v = await draw(state);
  expect(within(screen.getByLabelText("Token")).getAllByRole("option").map((o) => o.textContent)).toEqual(["Choose a token", "SOL (10)", "VDT (1000)"]);
  expect(screen.getByLabelText("To").getAttribute("placeholder")).toBe("Solana address (base58)");
  const to = "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T";
  fireEvent.change(screen.getByLabelText("Token"), { target: { value: vdt.asset } });
  fireEvent.change(screen.getByLabelText("Amount"), { target: { value: "2.5" } });
  fireEvent.change(screen.getByLabelText("To"), { target: { value: to } });
  fireEvent.click(screen.getByRole("button", { name: "Send" }));
  expect(v.commands.at(-1)).toEqual({ type: "SubmitSend", form: { token: vdt.asset, amount: "2.5", receiver: to } });
  const signature = "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW";
  const transfer = { requestId: "r1", network: SOLANA_NETWORK, kind: "native" as const, asset: sol.asset, symbol: "SOL", amount: "0.5", receiver: to, from: SOLANA_ADDRESS, value: "", data: "" };
  act(() => v.show({ ...state, send: { ...state.send, formVersion: 1, sent: [{ hash: signature, transfer, status: "confirmed", blockNumber: 12, sentMs: 1 }] } }));
  const row = screen.getByTestId("sent-transaction");
  expect(row.textContent).toContain("0.5 SOL");
  expect(row.textContent).toContain("to 4Nd1…4gDB4T");
  expect(within(row).getByRole("link").getAttribute("href")).toBe(`https://explorer.solana.com/tx/${signature}?cluster=devnet`);
});

it("writes an explorer's transaction link under its path, keeping its query", () => {
  expect(explorerTxUrl("https://etherscan.io", "0xab")).toBe("https://etherscan.io/tx/0xab");
  expect(explorerTxUrl("https://explorer.test/base/", "0xab")).toBe("https://explorer.test/base/tx/0xab");
  expect(explorerTxUrl("https://explorer.solana.com/?cluster=devnet", "5VER")).toBe("https://explorer.solana.com/tx/5VER?cluster=devnet");
});

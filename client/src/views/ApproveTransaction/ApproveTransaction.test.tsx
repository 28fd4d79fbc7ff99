// @vitest-environment happy-dom
// The ApproveTransaction view as the host's requests wait on the transaction stack: the top request
// in words with its key params, the wallet prompt, how many more wait, Cancel, and the closed door
// while sign-in is required without a sign-in session.

import { act, cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, beforeAll, expect, it } from "vitest";
import type { HostRequest } from "../../generated/HostRequest";
import type { SessionState } from "../../generated/SessionState";
import { WidgetRoot } from "../../components/WidgetRoot/WidgetRoot";
import { connectedState, NETWORK, onView, stateView, settleLazyView, type StateView } from "../../testing/stateView";
import { formatUnits, messageText, requestDetails } from "./ApproveTransaction";

const TO = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

let base: SessionState;
let view: StateView | null = null;
beforeAll(async () => {
  base = onView(await connectedState(), "ApproveTransaction", []);
});
afterEach(() => {
  cleanup();
  view?.stop();
  view = null;
});

function request(id: string, method: string, params: unknown): HostRequest {
  return { id, method, params, route: "walletPrompt", network: NETWORK, walletRequest: `w-${id}`, deadlineMs: null, receivedMs: 1, outcome: null };
}

/** The host's requests `stacked` (oldest first) on the transaction stack. */
function stacked(...requests: HostRequest[]): SessionState {
  return {
    ...base,
    hostRequests: {
      status: "pending",
      items: Object.fromEntries(requests.map((r) => [r.id, r])),
      order: requests.map((r) => r.id),
      stack: requests.map((r) => r.id),
      openedModal: true,
    },
  };
}

function details(): Record<string, string> {
  const rows = within(screen.getByTestId("approve-details")).getAllByRole("definition");
  return Object.fromEntries(rows.map((d) => [d.getAttribute("data-field"), d.textContent]));
}

async function draw(state: SessionState) {
  view = stateView(state);
  render(<WidgetRoot widget={view.model} />);
  const found = await screen.findByTestId("approve-transaction");
  await settleLazyView();
  return found;
}

it("shows the transaction on top of the stack: receiver truncated, value in ETH, data; how many more wait; Cancel rejects it", async () => {
  const sign = request("h1", "personal_sign", ["0x68656c6c6f", TO]);
  const send = request("h2", "eth_sendTransaction", [{ to: TO, value: "0x14d1120d7b160000", data: "0xa9059cbb" }]);
  const approve = await draw(stacked(sign, send));
  expect(screen.getByRole("dialog", { name: "Approve transaction" })).toBeTruthy();
  expect(within(approve).getByRole("heading").textContent).toBe("Send a transaction");
  expect(details()).toEqual({ To: "0x70…dc79C8", Value: "1.5 ETH", Data: "Carries data" });
  expect(within(approve).getByRole("status").textContent).toBe("Approve the request in your wallet");
  expect(screen.getByTestId("approve-waiting").textContent).toBe("1 more request waits");
  fireEvent.click(within(approve).getByRole("button", { name: "Cancel" }));
  expect(view!.commands).toEqual([{ type: "CancelHostRequest", requestId: "h2" }]);

  // Popped: the message under it is on top now, and nothing else waits.
  act(() => view!.show(stacked(sign)));
  expect(within(approve).getByRole("heading").textContent).toBe("Sign a message");
  expect(details()).toEqual({ Message: "hello" });
  expect(screen.queryByTestId("approve-waiting")).toBeNull();
  fireEvent.click(within(approve).getByRole("button", { name: "Cancel" }));
  expect(view!.commands.at(-1)).toEqual({ type: "CancelHostRequest", requestId: "h1" });
});

it("names every signing method and shows its key params", async () => {
  await draw(stacked(request("t", "eth_sendTransaction", [{ to: TO }])));
  expect(details()).toEqual({ To: "0x70…dc79C8", Value: "0 ETH", Data: "None" });

  const typed = { primaryType: "Mail", domain: { name: "Ether Mail" }, types: {}, message: {} };
  act(() => view!.show(stacked(request("d", "eth_signTypedData_v4", [TO, JSON.stringify(typed)]))));
  expect(within(screen.getByTestId("approve-transaction")).getByRole("heading").textContent).toBe("Sign typed data");
  expect(details()).toEqual({ Type: "Mail", Domain: "Ether Mail" });

  act(() => view!.show(stacked(request("c", "wallet_sendCalls", [{ calls: [{ to: TO }, { to: TO, data: "0x" }] }]))));
  expect(within(screen.getByTestId("approve-transaction")).getByRole("heading").textContent).toBe("Send calls");
  expect(details()).toEqual({ Calls: "2" });

  // A message that is not printable text is shown as the hex it came as.
  act(() => view!.show(stacked(request("m", "personal_sign", ["0x00ff10", TO]))));
  expect(details()).toEqual({ Message: "0x00ff10" });
});

it("says the window stays open while sign-in is required without a session, and the close button is disabled", async () => {
  const send = request("h1", "eth_sendTransaction", [{ to: TO, value: "0x1" }]);
  await draw({ ...stacked(send), modal: { ...base.modal, closable: false } });
  expect(screen.getByTestId("approve-sign-in").textContent).toContain("Sign-in is required");
  expect(screen.getByRole("button", { name: "Close" }).hasAttribute("disabled")).toBe(true);
  // Cancel still refuses the request.
  fireEvent.click(screen.getByRole("button", { name: "Cancel" }));
  expect(view!.commands).toEqual([{ type: "CancelHostRequest", requestId: "h1" }]);

  act(() => view!.show(stacked(send)));
  expect(screen.queryByTestId("approve-sign-in")).toBeNull();
  expect(screen.getByRole("button", { name: "Close" }).hasAttribute("disabled")).toBe(false);
});

it("formats quantities exactly in the network's units and decodes printable messages", () => {
  expect(formatUnits("0x14d1120d7b160000", 18)).toBe("1.5");
  expect(formatUnits("1", 18)).toBe("0.000000000000000001");
  expect(formatUnits("123400", 2)).toBe("1234");
  expect(formatUnits("0x0", 18)).toBe("0");
  expect(formatUnits("not a number", 18)).toBeNull();
  expect(messageText("0x48656c6c6f2c0a776f726c64")).toBe("Hello,\nworld");
  expect(messageText("0xe282ac")).toBe("€");
  expect(messageText("0xff")).toBe("0xff");
  expect(messageText("plain text")).toBe("plain text");
});

it("shows what is signed whatever the params' order or spelling", () => {
  const eth = { name: "Ether", symbol: "ETH", decimals: 18 };
  const details = (method: string, params: unknown) => requestDetails(request("r", method, params), eth);
  // personal_sign in EIP-191's order and in the legacy [address, message] one: the message either way.
  expect(details("personal_sign", ["0x48656c6c6f", TO])).toEqual([["Message", "Hello"]]);
  expect(details("personal_sign", [TO, "0x48656c6c6f"])).toEqual([["Message", "Hello"]]);
  // Characters that reorder or hide text are spelled out.
  expect(details("personal_sign", ["pay \u202Eevil\u200B"])).toEqual([["Message", "pay [U+202E]evil[U+200B]"]]);
  // Calldata in `input` with an empty `data` is still data; a value that is no quantity is not 0.
  expect(details("eth_sendTransaction", [{ to: TO, data: "0x", input: "0xa9059cbb" }])).toContainEqual(["Data", "Carries data"]);
  expect(details("eth_sendTransaction", [{ to: TO, value: 5 }])).toContainEqual(["Value", "Unreadable"]);
  // The positive probes: a plain transfer reads as before.
  expect(details("eth_sendTransaction", [{ to: TO, value: "0x14d1120d7b160000" }])).toEqual([
    ["To", expect.any(String)],
    ["Value", "1.5 ETH"],
    ["Data", "None"],
  ]);
  // Typed data names its contract and chain too.
  const typed = { primaryType: "Permit", domain: { name: "Token", verifyingContract: TO, chainId: 1 } };
  expect(details("eth_signTypedData_v4", [TO, JSON.stringify(typed)])).toEqual([
    ["Type", "Permit"],
    ["Domain", "Token"],
    ["Contract", expect.any(String)],
    ["Chain", "1"],
  ]);
});

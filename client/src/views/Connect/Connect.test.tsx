// @vitest-environment happy-dom
// The Connect view fed with the connect-methods session the Rust side produced: the methods in the
// server's order (an announced wallet puts the wallet first), the parts load, each control sends
// its command.

import { act, cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";
import { connectMethodsFrames, fixtureFrames, multichainFrames } from "../../generated/fixtureFrames";
import { stateView } from "../../testing/stateView";
import { WidgetRoot } from "../../components/WidgetRoot/WidgetRoot";
import { scriptedWidget, settle } from "../../testing/harness";

afterEach(cleanup);

async function connectView(frames = connectMethodsFrames) {
  const s = scriptedWidget(frames);
  await settle();
  s.welcome();
  s.serveUntil((w) => w.state()?.modal.status === "open");
  render(<WidgetRoot widget={s.widget} />);
  return s;
}

describe("Connect", () => {
  it("shows the wallet, email and social methods in the server's order, with the parts loaded", async () => {
    const s = await connectView();
    expect(s.widget.state()?.connectView.methods).toEqual(["wallet", "email", "social"]);
    const dialog = screen.getByRole("dialog", { name: "Connect wallet" });
    await within(dialog).findByRole("button", { name: "Continue with Google" });
    const order = Array.from(dialog.querySelectorAll("[data-connect-method]"), (e) => e.getAttribute("data-connect-method"));
    expect(order).toEqual(["wallet", "email", "social"]);
    expect(within(dialog).getByRole("group", { name: "Installed" })).toBeTruthy();
    expect(within(dialog).getByRole("group", { name: "Social login" }).textContent).toBe("GoogleXDiscord");
  });

  it("sends SelectConnector, ConnectEmail and ConnectSocial from its controls", async () => {
    const s = await connectView();
    const dialog = screen.getByRole("dialog");
    fireEvent.click(within(dialog).getByRole("button", { name: "Connect Dev Wallet" }));
    fireEvent.change(await within(dialog).findByLabelText("Email"), { target: { value: "visitor@example.com" } });
    fireEvent.submit(within(dialog).getByRole("form", { name: "Continue with email" }));
    fireEvent.click(await within(dialog).findByRole("button", { name: "Continue with Discord" }));
    await settle();
    expect(s.socket().commands().slice(-3)).toEqual([
      { type: "SelectConnector", connectorId: "dev.vestibule.wallet" },
      { type: "ConnectEmail", email: "visitor@example.com" },
      { type: "ConnectSocial", provider: "discord" },
    ]);
  });

  it("shows what email and social login answered as error toasts", async () => {
    const s = await connectView();
    act(() => s.serveUntil());
    const toasts = await screen.findAllByRole("status");
    expect(toasts.map((t) => t.textContent)).toEqual(["Unable to load email login dependency", "Failed to initiate social connection"]);
    expect(toasts.map((t) => t.getAttribute("data-variant"))).toEqual(["error", "error"]);
  });

  it("without email or socials, shows only the wallet method and loads no part", async () => {
    await connectView(fixtureFrames);
    const dialog = screen.getByRole("dialog");
    expect(Array.from(dialog.querySelectorAll("[data-connect-method]"), (e) => e.getAttribute("data-connect-method"))).toEqual(["wallet"]);
    expect(within(dialog).queryByRole("form")).toBeNull();
    // The positive probe: the wallet list is there, so the query above looked in a drawn view.
    expect(within(dialog).getByRole("button", { name: "Connect Dev Wallet" })).toBeTruthy();
  });
});

describe("Connect for one namespace", () => {
  it("lists only the wallets of the namespace SwitchActiveChain led to, and offers all of them again", async () => {
    const s = scriptedWidget(multichainFrames);
    await settle();
    s.welcome();
    s.serveUntil((w) => w.state()?.router.current === "Connect" && w.state()?.connection.activeNamespace === "solana");
    const state = s.widget.state();
    if (!state) throw new Error("no state");
    expect(state.router.stack.at(-1)?.params).toEqual({ switchToChain: "solana" });
    // The session knows both an EVM and a Solana wallet.
    const all = state.connectView.groups.flatMap((g) => g.entries.map((e) => e.name));
    expect(all).toEqual(expect.arrayContaining(["Dev Wallet", "Dev Solana Wallet"]));
    const view = stateView(state);
    render(<WidgetRoot widget={view.model} />);
    const dialog = screen.getByRole("dialog", { name: "Connect wallet" });
    expect(within(dialog).getByTestId("connect-namespace").textContent).toContain("Solana wallets");
    const walletNames = () => within(dialog).getAllByRole("button", { name: /^Connect / }).map((b) => b.querySelector(".vst-wallet__name")?.textContent);
    expect(walletNames()).toEqual(["Connect Dev Solana Wallet"]);
    fireEvent.click(within(dialog).getByRole("button", { name: "Show all wallets" }));
    expect(view.commands.at(-1)).toEqual({ type: "Navigate", view: "Connect", replace: true });
    // The server's answer: Connect without the namespace lists every wallet again.
    const stack = state.router.stack.slice(0, -1).concat({ view: "Connect" });
    act(() => view.show({ ...state, router: { ...state.router, stack } }));
    expect(walletNames()).toEqual(expect.arrayContaining(["Connect Dev Wallet", "Connect Dev Solana Wallet"]));
    expect(within(dialog).queryByTestId("connect-namespace")).toBeNull();
    view.stop();
    s.widget.destroy();
  });
});

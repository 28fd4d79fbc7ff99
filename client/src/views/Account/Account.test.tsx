// @vitest-environment happy-dom
// The Account view at the end of the sign-in session the Rust side produced (signed in, the modal
// opened again): the address as 4 + 6 characters, the network, the tabs, Disconnect.

import { cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, expect, it } from "vitest";
import { signInFrames } from "../../generated/fixtureFrames";
import { WidgetRoot } from "../../components/WidgetRoot/WidgetRoot";
import { scriptedWidget, settle } from "../../testing/harness";
import { truncateAddress } from "./Account";

afterEach(cleanup);

async function account() {
  const s = scriptedWidget(signInFrames);
  await settle();
  s.welcome();
  s.serveUntil();
  render(<WidgetRoot widget={s.widget} />);
  return s;
}

it("truncates an address to its first 4 and last 6 characters", () => {
  expect(truncateAddress("0x52908400098527886E0F7030069857D2E4169EE7")).toBe("0x52…169EE7");
});

it("shows the connected account and its network", async () => {
  const s = await account();
  expect(s.widget.state()?.router.current).toBe("Account");
  const dialog = screen.getByRole("dialog", { name: "Account" });
  const address = s.widget.state()?.connection.namespaces.eip155?.address ?? "";
  expect(address).toMatch(/^0x[0-9a-fA-F]{40}$/);
  expect(within(dialog).getByTestId("account-address").textContent).toBe(`${address.slice(0, 4)}…${address.slice(-6)}`);
  expect(within(dialog).getByTestId("account-network").textContent).toBe("Ethereum");
});

it("switches tabs by click and by arrow keys; Activity is a part", async () => {
  const s = await account();
  const tabs = screen.getAllByRole("tab");
  expect(tabs.map((t) => t.textContent)).toEqual(["Tokens", "NFTs", "Activity"]);
  // The Tokens tab is a part too; this fixture's gateway serves no chain.
  expect(await within(screen.getByRole("tabpanel")).findByText("Token balances are not available on this deployment yet.")).toBeTruthy();
  fireEvent.keyDown(tabs[0], { key: "ArrowLeft" });
  expect(screen.getByRole("tab", { name: "Activity" }).getAttribute("aria-selected")).toBe("true");
  // The part asks for the newest page when it shows (this fixture's gateway serves no chain).
  expect((await screen.findByTestId("activity")).closest("[role=tabpanel]")).toBeTruthy();
  await settle();
  expect(s.socket().commands()).toContainEqual({ type: "LoadActivity", more: false });
  fireEvent.click(screen.getByRole("tab", { name: "NFTs" }));
  expect(screen.getByRole("tabpanel").textContent).toBe("NFTs are not available on this deployment yet.");
  // The panel is labelled by its tab, through per-instance ids.
  expect(screen.getByRole("tabpanel").getAttribute("aria-labelledby")).toBe(screen.getByRole("tab", { name: "NFTs" }).id);
});

it("sends Disconnect for the active namespace", async () => {
  const s = await account();
  fireEvent.click(screen.getByRole("button", { name: "Disconnect" }));
  await settle();
  expect(s.socket().commands().at(-1)).toEqual({ type: "Disconnect", namespace: "eip155" });
});

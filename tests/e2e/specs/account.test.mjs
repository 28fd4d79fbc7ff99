// The EVM Account in Chromium on the devnet (issue 13): the dev wallet's native and token balances
// as the node holds them, in the Account header and the Tokens tab; Receive with the address, a
// copy button and a QR code; the network button leading to the Networks view; axe on those views.
import { test } from "node:test";
import assert from "node:assert/strict";
import { seriousViolations } from "./support.mjs";
import { CHAIN_A, connect, DEV_WALLET, display, nativeBalance, openAccount, readQrCode, evmWorldForFile, tokenBalance } from "./evm.mjs";

const world = evmWorldForFile({}, 2);

test("the Account shows the node's native balance and the demo token's in the Tokens tab", async () => {
  const { context, page, errors } = await world.open();
  const address = await connect(page);
  assert.equal(address, DEV_WALLET.address);
  const eth = await nativeBalance(world.url(CHAIN_A), address);
  const vdt = await tokenBalance(world.url(CHAIN_A), world.token(CHAIN_A), address);
  // The devnet funded the dev wallet (what the node says, not what the modal says).
  assert.equal(eth, 1000n * 10n ** 18n);
  assert.equal(vdt, 1_000_000n * 10n ** 18n);

  const dialog = await openAccount(page);
  assert.equal(await dialog.getByTestId("account-address").textContent(), `${address.slice(0, 4)}…${address.slice(-6)}`);
  await dialog.getByTestId("account-network").filter({ hasText: `Anvil ${CHAIN_A}` }).waitFor({ timeout: 15_000 });
  await dialog.getByTestId("account-balance").filter({ hasText: `${display(eth)} ETH` }).waitFor({ timeout: 30_000 });

  // The Tokens tab (the default tab): native first, then the configured token.
  assert.equal(await dialog.getByRole("tab", { name: "Tokens" }).getAttribute("aria-selected"), "true");
  const native = dialog.locator(`[data-asset="eip155:${CHAIN_A}/native"]`);
  const token = dialog.locator(`[data-asset="eip155:${CHAIN_A}/erc20:${world.token(CHAIN_A)}" i]`);
  await native.getByTestId("token-amount").filter({ hasText: `${display(eth)} ETH` }).waitFor({ timeout: 15_000 });
  await token.getByTestId("token-amount").filter({ hasText: `${display(vdt)} VDT` }).waitFor({ timeout: 15_000 });
  const order = await dialog.locator("[data-asset]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-asset").toLowerCase()));
  assert.deepEqual(order, [`eip155:${CHAIN_A}/native`, `eip155:${CHAIN_A}/erc20:${world.token(CHAIN_A)}`.toLowerCase()]);
  // No price source is configured: no fiat anywhere, never a made-up one.
  assert.equal(await dialog.getByTestId("token-fiat").count(), 0);
  assert.doesNotMatch(await dialog.getByTestId("account-balance").textContent(), /\$/);
  assert.deepEqual(errors, []);
  await context.close();
});

test("Receive shows the full address with a copy button and a QR code", async () => {
  const { context, page, errors } = await world.open();
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: world.gateway.url });
  const address = await connect(page);
  const dialog = await openAccount(page);
  await dialog.getByRole("group", { name: "Wallet features" }).getByRole("button", { name: "Receive", exact: true }).click({ timeout: 15_000 });
  await dialog.getByTestId("receive-address").filter({ hasText: address }).waitFor({ timeout: 15_000 });
  // The QR code is drawn (an image of some size, named for the address), not an empty box.
  const qr = dialog.getByRole("img", { name: `QR code of the address ${address}` });
  await qr.waitFor({ timeout: 15_000 });
  const box = await qr.boundingBox();
  assert.ok(box && box.width >= 100 && box.height >= 100, `QR code drawn: ${JSON.stringify(box)}`);
  // And it says the address (read back from the pixels Chromium drew).
  const said = await readQrCode(page, qr);
  assert.ok(said === address || said?.toLowerCase() === `ethereum:${address.toLowerCase()}`, `the QR code says ${said}`);
  // Copy puts the address on the clipboard (fenced: the clipboard held something else before).
  await page.evaluate(() => navigator.clipboard.writeText("before"));
  await dialog.getByRole("button", { name: "Copy address" }).click();
  await dialog.getByRole("status").filter({ hasText: "Address copied to the clipboard" }).waitFor({ timeout: 15_000 });
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), address);
  assert.deepEqual(errors, []);
  await context.close();
});

test("the network button leads to the Networks view, with the session's networks and the current one marked", async () => {
  const { context, page } = await world.open();
  await connect(page);
  const dialog = await openAccount(page);
  await dialog.getByTestId("account-network").click({ timeout: 15_000 });
  const rows = dialog.getByRole("region", { name: "Networks" }).getByRole("button").and(dialog.locator("[data-network]"));
  await rows.first().waitFor({ timeout: 15_000 });
  const listed = await rows.evaluateAll((r) => r.map((e) => [e.getAttribute("data-network"), e.getAttribute("aria-current")]));
  assert.deepEqual(
    listed.map(([n]) => n),
    ["eip155:31337", "eip155:31338", "eip155:31339"],
  );
  assert.deepEqual(
    listed.filter(([, current]) => current !== null && current !== "false").map(([n]) => n),
    [`eip155:${CHAIN_A}`],
    "only the connected chain is marked current",
  );
  await context.close();
});

test("axe finds nothing serious on the account's views with the node's data: Tokens, Activity, Send with an error, Receive, Networks", async () => {
  const { context, page } = await world.open();
  await connect(page);
  const dialog = await openAccount(page);
  const check = async (what) => {
    // Checked once the view's entrance has finished (contrast mid-fade is not what a visitor reads).
    await page.waitForFunction(() => document.getAnimations().every((a) => a.playState !== "running" || a.effect?.getComputedTiming().iterations === Infinity), null, { timeout: 15_000 });
    assert.deepEqual(await seriousViolations(page, '[role="dialog"]'), [], what);
  };
  await dialog.locator(`[data-asset="eip155:${CHAIN_A}/native"]`).waitFor({ timeout: 30_000 });
  await check("Account, Tokens");
  await dialog.getByRole("tab", { name: "Activity" }).click();
  await dialog.getByTestId("activity-transaction").first().waitFor({ timeout: 30_000 });
  await check("Account, Activity");
  await dialog.getByRole("group", { name: "Wallet features" }).getByRole("button", { name: "Send", exact: true }).click();
  const form = dialog.getByRole("form", { name: "Send tokens" });
  await form.getByRole("button", { name: "Send", exact: true }).click();
  await dialog.getByTestId("send-error").waitFor({ timeout: 15_000 });
  await check("Send, with a validation message");
  await dialog.getByRole("region", { name: "Send", exact: true }).getByRole("button", { name: "Back" }).click();
  await dialog.getByRole("group", { name: "Wallet features" }).getByRole("button", { name: "Receive", exact: true }).click();
  await dialog.getByTestId("receive-address").waitFor({ timeout: 15_000 });
  await check("Receive");
  await dialog.getByRole("region", { name: "Receive" }).getByRole("button", { name: "Back" }).click();
  await dialog.getByTestId("account-network").click();
  await dialog.getByRole("region", { name: "Networks" }).waitFor({ timeout: 15_000 });
  await check("Networks");
  await context.close();
});

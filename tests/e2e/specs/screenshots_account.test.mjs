// The account's views in both themes, on the devnet (issue 13): a screenshot of each kept in
// docs/screenshots/ (Account with the node's balances in the Tokens tab, Activity with
// transactions, Send filled and with a validation message, Receive with its QR code, Networks,
// SwitchNetwork pending and failed with Retry, ApproveTransaction with a host eth_sendTransaction
// waiting), axe-core finding no serious or critical violation in the modal as drawn, and on each
// the header's title and the view's key content checked (what the node holds, read without the
// widget), so a wrong or empty view fails.
//
// Deterministic pictures: one devnet for the file, dated from a fixed genesis time (the Activity's
// month and days are those of 2026-06-01), its transactions made in before() so both themes see
// the same chain; the addresses and amounts are those of a fresh devnet. Each theme's session
// changes only the second chain (its switch and the host's transaction), which no picture shows.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { ROOT, seriousViolations, settledScreenshot } from "./support.mjs";
import {
  CHAIN_A,
  CHAIN_B,
  connect,
  DEV_WALLET,
  display,
  ETHER,
  nativeBalance,
  openAccount,
  readQrCode,
  RECEIVER,
  rpc,
  startEvmWorld,
  tokenBalance,
  waitForReceipt,
} from "./evm.mjs";

const SHOTS = join(ROOT, "docs/screenshots");
/** 2026-06-01T12:00:00Z: the genesis time of every chain (blocks follow it by the seconds elapsed). */
const GENESIS = 1780315200;
/** anvil's first development account, unlocked on every anvil. */
const FUNDER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const hex = (n) => `0x${n.toString(16)}`;
const word = (h) => h.toLowerCase().replace(/^0x/, "").padStart(64, "0");

let world;
/** The transactions made before the visits, newest last: [hash, the Activity's transfer text]. */
const made = [];

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  world = await startEvmWorld({ genesisTimestamp: GENESIS });
  const url = world.url(CHAIN_A);
  const token = world.token(CHAIN_A);
  const send = async (tx, transfer) => {
    const hash = await rpc(url, "eth_sendTransaction", [tx]);
    assert.equal((await waitForReceipt(url, hash)).status, "0x1");
    made.push([hash.toLowerCase(), transfer]);
  };
  // An incoming transfer, and two outgoing ones from the dev wallet (impersonated on the node: the
  // same transactions its key would sign), so the Activity lists both signs and both assets.
  await send({ from: FUNDER, to: DEV_WALLET.address, value: hex(2n * ETHER) }, "+ 2 ETH");
  await rpc(url, "anvil_impersonateAccount", [DEV_WALLET.address]);
  await send({ from: DEV_WALLET.address, to: RECEIVER, value: hex(ETHER / 2n) }, "− 0.5 ETH");
  // transfer(RECEIVER, 250 VDT)
  await send({ from: DEV_WALLET.address, to: token, data: `0xa9059cbb${word(RECEIVER)}${word(hex(250n * ETHER))}` }, "− 250 VDT");
  await rpc(url, "anvil_stopImpersonatingAccount", [DEV_WALLET.address]);
});

after(async () => {
  if (!world) return;
  const sessions = await world.stop();
  assert.ok(sessions >= 2, `one session per theme, each replays with --verify: ${sessions}`);
});

/** No toast left on the page (each goes by itself after 4 s): only the view is in the picture. */
const noToasts = () => document.querySelectorAll("[data-vestibule-toasts] [role=\"status\"]").length === 0;

/** Checks the header names `route` with its title, then writes `name`.png once settled. */
async function shot(page, name, route, title) {
  const heading = page.getByRole("dialog").locator("header h2");
  assert.equal(await heading.getAttribute("data-route"), route, `${name}: the view`);
  assert.equal((await heading.textContent()).trim(), title, `${name}: the header's title`);
  await page.waitForFunction(noToasts, null, { timeout: 15_000 });
  const clipped = await settledScreenshot(page, join(SHOTS, `${name}.png`));
  // axe reads the colours as drawn: once the view's entrance (a fade) has finished, as account.test.mjs does.
  await page.waitForFunction(() => document.getAnimations().every((a) => a.playState !== "running" || a.effect?.getComputedTiming().iterations === Infinity), null, { timeout: 15_000 });
  assert.deepEqual(await seriousViolations(page, '[role="dialog"]'), [], `${name}: axe finds no serious or critical violation`);
  assert.equal(clipped, 0, `${name}: the modal's content is not cut off (${clipped} px)`);
}

const features = (dialog) => dialog.getByRole("group", { name: "Wallet features" });
const form = (dialog) => dialog.getByRole("form", { name: "Send tokens" });
const networkButton = (dialog, chainId) => dialog.getByRole("region", { name: "Networks" }).locator(`button[data-network="eip155:${chainId}"]`);

for (const theme of ["dark", "light"]) {
  test(`the account's views in the ${theme} theme`, async () => {
    const url = world.url(CHAIN_A);
    const tokenA = world.token(CHAIN_A);
    // The wallet knows only the first chain: the switch to the second asks it to add it.
    const { context, page, errors } = await world.open({ theme, walletChains: [CHAIN_A] });
    const address = await connect(page);
    assert.equal(address, DEV_WALLET.address);
    const eth = await nativeBalance(url, address);
    const vdt = await tokenBalance(url, tokenA, address);
    assert.equal(vdt, (1_000_000n - 250n) * ETHER, "the node holds the supply less the transfer");
    const dialog = await openAccount(page);
    assert.equal(await page.evaluate(() => document.querySelector("[data-vestibule-root]")?.getAttribute("data-theme")), theme);

    // Account, Tokens tab: the node's balances.
    await dialog.getByTestId("account-balance").filter({ hasText: `${display(eth)} ETH` }).waitFor({ timeout: 30_000 });
    assert.equal(await dialog.getByRole("tab", { name: "Tokens" }).getAttribute("aria-selected"), "true");
    await dialog.locator(`[data-asset="eip155:${CHAIN_A}/native"]`).getByTestId("token-amount").filter({ hasText: `${display(eth)} ETH` }).waitFor({ timeout: 15_000 });
    await dialog.locator(`[data-asset="eip155:${CHAIN_A}/erc20:${tokenA}" i]`).getByTestId("token-amount").filter({ hasText: `${display(vdt)} VDT` }).waitFor({ timeout: 15_000 });
    await dialog.getByTestId("account-network").filter({ hasText: `Anvil ${CHAIN_A}` }).waitFor({ timeout: 15_000 });
    await shot(page, `account-tokens-${theme}`, "Account", "Account");

    // Activity: the transactions made before the visit, newest first, under June 2026.
    await dialog.getByRole("tab", { name: "Activity" }).click();
    await dialog.locator('[data-testid="activity"][data-status="loaded"]').waitFor({ timeout: 30_000 });
    const rows = dialog.getByTestId("activity-transaction");
    await rows.nth(made.length - 1).waitFor({ timeout: 30_000 });
    const listed = await rows.evaluateAll((r) => r.map((e) => e.getAttribute("data-hash")?.toLowerCase()));
    assert.deepEqual(listed.slice(0, made.length), made.map(([h]) => h).reverse(), "newest first");
    for (const [hash, transfer] of made) {
      assert.deepEqual(await dialog.locator(`[data-hash="${hash}" i]`).getByTestId("activity-transfer").allTextContents(), [transfer]);
    }
    assert.deepEqual(await dialog.getByTestId("activity-month").evaluateAll((m) => m.map((e) => e.getAttribute("data-month"))), ["2026-06"], "dated from the genesis time");
    await shot(page, `account-activity-${theme}`, "Account", "Account");

    // Send, filled: 12.5 VDT to anvil's second account (as the session holds it, not only as typed).
    await features(dialog).getByRole("button", { name: "Send", exact: true }).click();
    const tokenOption = form(dialog).getByLabel("Token", { exact: true }).locator(`option[value="eip155:${CHAIN_A}/erc20:${tokenA}" i]`);
    await tokenOption.waitFor({ state: "attached", timeout: 15_000 });
    const tokenAsset = await tokenOption.getAttribute("value");
    await form(dialog).getByLabel("Token", { exact: true }).selectOption(tokenAsset);
    await form(dialog).getByLabel("Amount", { exact: true }).fill("12.5");
    await form(dialog).getByLabel("To", { exact: true }).fill(RECEIVER);
    await page.waitForFunction(
      ([token, receiver]) => {
        const f = window.v.state().send.form;
        return f.token === token && f.amount === "12.5" && f.receiver === receiver;
      },
      [tokenAsset, RECEIVER],
      { timeout: 15_000 },
    );
    await shot(page, `send-${theme}`, "Send", "Send");

    // Send with a validation message: a receiver that is not an address; nothing reaches the wallet.
    await form(dialog).getByLabel("To", { exact: true }).fill("0x1234");
    await form(dialog).getByRole("button", { name: "Send", exact: true }).click();
    await dialog.getByTestId("send-error").filter({ hasText: /^Invalid receiver address$/ }).waitFor({ timeout: 15_000 });
    assert.ok(!(await page.evaluate(() => window.__walletCalls.includes("eth_sendTransaction"))), "the wallet was asked nothing");
    await shot(page, `send-error-${theme}`, "Send", "Send");
    await dialog.getByRole("region", { name: "Send", exact: true }).getByRole("button", { name: "Back" }).click();

    // Receive: the full address and a QR code that says it (read back from the pixels).
    await features(dialog).getByRole("button", { name: "Receive", exact: true }).click({ timeout: 15_000 });
    await dialog.getByTestId("receive-address").filter({ hasText: address }).waitFor({ timeout: 15_000 });
    const qr = dialog.getByRole("img", { name: `QR code of the address ${address}` });
    await qr.waitFor({ timeout: 15_000 });
    const said = await readQrCode(page, qr);
    assert.ok(said === address || said?.toLowerCase() === `ethereum:${address.toLowerCase()}`, `the QR code says ${said}`);
    await shot(page, `receive-${theme}`, "Receive", "Receive");
    await dialog.getByRole("region", { name: "Receive" }).getByRole("button", { name: "Back" }).click();

    // Networks: the session's three, the connected one marked.
    await dialog.getByTestId("account-network").click({ timeout: 15_000 });
    await networkButton(dialog, CHAIN_A).and(dialog.locator('[aria-current="true"]')).waitFor({ timeout: 15_000 });
    const networks = await dialog.getByRole("region", { name: "Networks" }).locator("button[data-network]").evaluateAll((b) => b.map((e) => e.getAttribute("data-network")));
    assert.deepEqual(networks, ["eip155:31337", "eip155:31338", "eip155:31339"]);
    await shot(page, `networks-${theme}`, "Networks", "Networks");

    // SwitchNetwork, failed: the wallet declines; its error and Retry.
    await page.evaluate(() => (window.__devWallet.rejectAll = true));
    await networkButton(dialog, CHAIN_B).click();
    await dialog.getByTestId("switch-network-error").filter({ hasText: "Switch declined" }).waitFor({ timeout: 15_000 });
    await dialog.getByRole("region", { name: "Switch network" }).getByRole("button", { name: "Retry" }).waitFor({ timeout: 15_000 });
    assert.equal(await page.evaluate(() => window.__devWallet.chainId), hex(CHAIN_A), "not moved");
    await shot(page, `switch-network-failed-${theme}`, "SwitchNetwork", "Switch network");

    // SwitchNetwork, pending: Retry, and the visitor has not answered the wallet yet.
    await page.evaluate(() => {
      window.__devWallet.rejectAll = false;
      window.__devWallet.holdPrompts = true;
    });
    const asked = await page.evaluate(() => window.__walletCalls.filter((m) => m === "wallet_switchEthereumChain").length);
    await dialog.getByRole("region", { name: "Switch network" }).getByRole("button", { name: "Retry" }).click();
    await dialog.getByRole("region", { name: "Switch network" }).and(dialog.locator('[data-status="switching"]')).waitFor({ timeout: 15_000 });
    await page.waitForFunction((n) => window.__walletCalls.filter((m) => m === "wallet_switchEthereumChain").length > n, asked, { timeout: 15_000 });
    await dialog.getByRole("heading", { name: `Switch to Anvil ${CHAIN_B}` }).waitFor({ timeout: 15_000 });
    await shot(page, `switch-network-${theme}`, "SwitchNetwork", "Switch network");
    await page.evaluate(() => {
      window.__devWallet.holdPrompts = false;
      window.__devWallet.release();
    });
    // The wallet did not know the chain: added from the session's definition, then switched.
    await dialog.getByTestId("account-network").filter({ hasText: `Anvil ${CHAIN_B}` }).waitFor({ timeout: 30_000 });
    assert.equal(await page.evaluate(() => window.__devWallet.chainId), hex(CHAIN_B));

    // ApproveTransaction: the host's eth_sendTransaction of 0.25 ETH waits on the wallet.
    await page.evaluate(() => {
      window.__devWallet.holdPrompts = true;
      window.v.close();
    });
    await page.waitForFunction(() => window.v.state().modal.status === "closed", null, { timeout: 15_000 });
    await page.evaluate(
      ([from, to, value]) => {
        window.__hostTx = window.v.provider.request({ method: "eth_sendTransaction", params: [{ from, to, value }] }).then(
          (result) => ({ result }),
          (e) => ({ code: e.code, message: e.message }),
        );
      },
      [address, RECEIVER, hex(ETHER / 4n)],
    );
    const approve = dialog.getByTestId("approve-transaction").and(dialog.locator('[data-method="eth_sendTransaction"]'));
    await approve.waitFor({ timeout: 15_000 });
    await page.waitForFunction(() => window.__walletCalls.includes("eth_sendTransaction"), null, { timeout: 15_000 });
    assert.equal(await approve.locator('[data-field="To"]').textContent(), `${RECEIVER.slice(0, 4)}…${RECEIVER.slice(-6)}`);
    assert.equal(await approve.locator('[data-field="Value"]').textContent(), "0.25 ETH");
    assert.equal(await approve.locator('[data-field="Data"]').textContent(), "None");
    await shot(page, `approve-transaction-${theme}`, "ApproveTransaction", "Approve transaction");
    // Approved in the wallet: the host gets the hash and the second chain mines it.
    await page.evaluate(() => {
      window.__devWallet.holdPrompts = false;
      window.__devWallet.release();
    });
    const sent = await page.evaluate(() => window.__hostTx);
    assert.match(String(sent.result), /^0x[0-9a-f]{64}$/, JSON.stringify(sent));
    const receipt = await waitForReceipt(world.url(CHAIN_B), sent.result);
    assert.equal(receipt.status, "0x1");
    assert.equal(receipt.to.toLowerCase(), RECEIVER.toLowerCase());
    assert.deepEqual(errors, []);
    await context.close();
  });
}

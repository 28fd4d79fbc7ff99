// Send and Activity in Chromium on the devnet (issue 13): each of the Send view's validation
// messages; a native send and an ERC-20 send signed by the dev wallet and confirmed by receipts read
// from the node; back to Account with the refreshed balances; both sends in the Activity tab under
// the month they were mined in, newest first, with paging (the gateway's page size is 2 here).
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  CHAIN_A,
  CHAIN_UNSERVED,
  connect,
  DEV_WALLET,
  display,
  ETHER,
  nativeBalance,
  openAccount,
  RECEIVER,
  rpc,
  evmWorldForFile,
  tokenBalance,
  waitForReceipt,
} from "./evm.mjs";

/** anvil's first development account, unlocked on every anvil. */
const FUNDER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";

const world = evmWorldForFile({ activityPageSize: 2 }, 2);

const features = (dialog) => dialog.getByRole("group", { name: "Wallet features" });
const form = (dialog) => dialog.getByRole("form", { name: "Send tokens" });
const monthOf = (seconds) => new Date(seconds * 1000).toLocaleString("en-US", { month: "long", year: "numeric", timeZone: "UTC" });

/** The newest hash the session recorded as sent, once there is one other than `known`. */
async function sentHash(page, known = []) {
  const handle = await page.waitForFunction(
    (known) => {
      const sent = window.v.state().send.sent;
      return sent.length > 0 && !known.includes(sent[0].hash) ? sent[0].hash : null;
    },
    known,
    { timeout: 30_000 },
  );
  return handle.jsonValue();
}

test("the Send view's validation messages, a native send and an ERC-20 send confirmed on the node, the refreshed balances, and both in Activity with paging", async () => {
  const url = world.url(CHAIN_A);
  const token = world.token(CHAIN_A);
  // Two incoming transfers before the visit, so the Activity has more than one page.
  const incoming = [];
  for (const n of [1n, 2n]) {
    const hash = await rpc(url, "eth_sendTransaction", [{ from: FUNDER, to: DEV_WALLET.address, value: `0x${(n * ETHER).toString(16)}` }]);
    assert.equal((await waitForReceipt(url, hash)).status, "0x1");
    incoming.push(hash.toLowerCase());
  }
  const { context, page, errors } = await world.open();
  const address = await connect(page);
  const eth0 = await nativeBalance(url, address);
  const vdt0 = await tokenBalance(url, token, address);
  const dialog = await openAccount(page);
  await dialog.getByTestId("account-balance").filter({ hasText: `${display(eth0)} ETH` }).waitFor({ timeout: 30_000 });

  // Validation, in the spec's order, with the spec's words.
  await features(dialog).getByRole("button", { name: "Send", exact: true }).click();
  const error = dialog.getByTestId("send-error");
  await form(dialog).getByRole("button", { name: "Send", exact: true }).click({ timeout: 15_000 });
  await error.filter({ hasText: /^An amount and receiver address are required$/ }).waitFor({ timeout: 15_000 });
  await form(dialog).getByLabel("Amount", { exact: true }).fill("1");
  await form(dialog).getByLabel("To", { exact: true }).fill(RECEIVER);
  await form(dialog).getByLabel("Token", { exact: true }).selectOption("");
  await form(dialog).getByRole("button", { name: "Send", exact: true }).click();
  await error.filter({ hasText: /^A token is required$/ }).waitFor({ timeout: 15_000 });
  await form(dialog).getByLabel("Token", { exact: true }).selectOption(`eip155:${CHAIN_A}/native`);
  await form(dialog).getByLabel("To", { exact: true }).fill("0x1234");
  await form(dialog).getByRole("button", { name: "Send", exact: true }).click();
  await error.filter({ hasText: /^Invalid receiver address$/ }).waitFor({ timeout: 15_000 });
  assert.equal(await page.evaluate(() => window.__walletCalls.filter((m) => m === "eth_sendTransaction").length), 0, "nothing asked of the wallet yet");

  // A native send: 1.5 ETH to anvil's second account.
  const receiverEth0 = await nativeBalance(url, RECEIVER);
  await form(dialog).getByLabel("Token", { exact: true }).selectOption(`eip155:${CHAIN_A}/native`);
  await form(dialog).getByLabel("Amount", { exact: true }).fill("1.5");
  await form(dialog).getByLabel("To", { exact: true }).fill(RECEIVER);
  // The success toast closes by itself (4 s): watched for from the click on, not after the node's
  // checks below, which a loaded machine may take longer than that for.
  const sentToast = page.getByRole("status").filter({ hasText: "Transaction sent" }).first().waitFor({ timeout: 60_000 }).then(() => true, (e) => e);
  await form(dialog).getByRole("button", { name: "Send", exact: true }).click();
  const nativeHash = await sentHash(page);
  const nativeReceipt = await waitForReceipt(url, nativeHash);
  assert.equal(nativeReceipt.status, "0x1");
  assert.equal(nativeReceipt.from.toLowerCase(), address.toLowerCase());
  assert.equal(nativeReceipt.to.toLowerCase(), RECEIVER.toLowerCase());
  const nativeTx = await rpc(url, "eth_getTransactionByHash", [nativeHash]);
  assert.equal(BigInt(nativeTx.value), 15n * ETHER / 10n);
  assert.equal(await nativeBalance(url, RECEIVER), receiverEth0 + 15n * ETHER / 10n);
  assert.equal(await sentToast, true, "the Transaction sent toast showed");
  // After a native send the form is reset (the view stays on Send).
  await page.waitForFunction(() => window.v.state().send.form.amount === "" && window.v.state().send.form.receiver === "", null, { timeout: 15_000 });
  await form(dialog).getByLabel("Amount", { exact: true }).and(page.locator('[value=""]')).waitFor({ timeout: 15_000 });
  assert.equal(await form(dialog).getByLabel("To", { exact: true }).inputValue(), "");

  // Back to Account: the balance the node now holds (less the value and the gas).
  const eth1 = await nativeBalance(url, address);
  assert.ok(eth1 < eth0 - 15n * ETHER / 10n, "the node took the value and the gas");
  await dialog.getByRole("region", { name: "Send", exact: true }).getByRole("button", { name: "Back" }).click();
  await dialog.getByTestId("account-balance").filter({ hasText: `${display(eth1)} ETH` }).waitFor({ timeout: 30_000 });

  // An ERC-20 send: 12.5 VDT (18 decimals) to the same receiver; the view returns to Account.
  const receiverVdt0 = await tokenBalance(url, token, RECEIVER);
  await features(dialog).getByRole("button", { name: "Send", exact: true }).click();
  // The picker's option for the token (the server names it with the checksummed address).
  const want = `eip155:${CHAIN_A}/erc20:${token}`.toLowerCase();
  const option = form(dialog).getByLabel("Token", { exact: true }).locator(`option[value="${want}" i]`);
  await option.waitFor({ state: "attached", timeout: 15_000 });
  const tokenAsset = await option.getAttribute("value");
  await form(dialog).getByLabel("Token", { exact: true }).selectOption(tokenAsset);
  await form(dialog).getByLabel("Amount", { exact: true }).fill("12.5");
  await form(dialog).getByLabel("To", { exact: true }).fill(RECEIVER);
  await form(dialog).getByRole("button", { name: "Send", exact: true }).click();
  const tokenHash = await sentHash(page, [nativeHash]);
  const tokenReceipt = await waitForReceipt(url, tokenHash);
  assert.equal(tokenReceipt.status, "0x1");
  assert.equal(tokenReceipt.to.toLowerCase(), token.toLowerCase(), "a call of the token contract");
  assert.equal(await tokenBalance(url, token, RECEIVER), receiverVdt0 + 125n * ETHER / 10n);
  const vdt1 = await tokenBalance(url, token, address);
  assert.equal(vdt1, vdt0 - 125n * ETHER / 10n);
  await dialog.getByRole("region", { name: "Account" }).waitFor({ timeout: 15_000 });
  await dialog
    .locator(`[data-asset="eip155:${CHAIN_A}/erc20:${token}" i]`)
    .getByTestId("token-amount")
    .filter({ hasText: `${display(vdt1)} VDT` })
    .waitFor({ timeout: 30_000 });
  const eth2 = await nativeBalance(url, address);
  await dialog.getByTestId("account-balance").filter({ hasText: `${display(eth2)} ETH` }).waitFor({ timeout: 30_000 });

  // Activity: newest first, under the month the node mined them in, two to a page.
  const block = await rpc(url, "eth_getBlockByNumber", [tokenReceipt.blockNumber, false]);
  const month = monthOf(Number(BigInt(block.timestamp)));
  await dialog.getByRole("tab", { name: "Activity" }).click();
  const rows = dialog.getByTestId("activity-transaction");
  await rows.nth(1).waitFor({ timeout: 30_000 });
  const hashes = () => rows.evaluateAll((r) => r.map((e) => e.getAttribute("data-hash")?.toLowerCase()));
  assert.deepEqual((await hashes()).slice(0, 2), [tokenHash, nativeHash].map((h) => h.toLowerCase()));
  const group = dialog.getByRole("region", { name: month }).filter({ has: page.locator(`[data-hash="${tokenHash}"]`) });
  await group.getByRole("heading", { name: month }).waitFor({ timeout: 15_000 });
  assert.equal(await group.locator(`[data-hash="${nativeHash}"]`).count(), 1, "both sends under the same month");
  // What went out, signed − (spec §9), in the token's units.
  const transfer = (hash) => group.locator(`[data-hash="${hash}"]`).getByTestId("activity-transfer");
  assert.deepEqual(await transfer(tokenHash).allTextContents(), ["− 12.5 VDT"]);
  assert.deepEqual(await transfer(nativeHash).allTextContents(), ["− 1.5 ETH"]);
  assert.equal(await transfer(nativeHash).getAttribute("data-sign"), "minus");
  // Paging: the two incoming transfers are on later pages; "Load more" goes when there is no more.
  const more = dialog.getByRole("button", { name: "Load more" });
  let pages = 1;
  while (true) {
    // Settled: loaded, with or without a next page.
    await dialog.locator('[data-testid="activity"][data-status="loaded"]').waitFor({ timeout: 30_000 });
    if ((await more.count()) === 0) break;
    const before = await rows.count();
    await more.click();
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="activity-transaction"]').length > n, before, { timeout: 30_000 });
    pages += 1;
  }
  assert.ok(pages >= 2, `more than one page: ${pages}`);
  assert.equal(await page.evaluate(() => window.v.state().activity.next), null, "no next page left");
  const all = await hashes();
  assert.ok(incoming.every((h) => all.includes(h)), `the incoming transfers are listed: ${all}`);
  assert.ok(all.length >= 4, `the sends and the two incoming transfers: ${all}`);
  // The incoming transfers, signed +.
  for (const hash of incoming) {
    assert.deepEqual(await dialog.locator(`[data-hash="${hash}"]`).getByTestId("activity-transfer").allTextContents(), [`+ ${incoming.indexOf(hash) + 1} ETH`]);
  }
  assert.equal(new Set(all).size, all.length, "no transaction listed twice across pages");
  assert.deepEqual(errors, []);
  await context.close();
});

test("Send on a network the gateway does not serve says Unsupported chain and asks the wallet nothing", async () => {
  const { context, page } = await world.open({ chainId: CHAIN_UNSERVED });
  await connect(page);
  const dialog = await openAccount(page);
  await dialog.getByTestId("account-network").filter({ hasText: `Anvil ${CHAIN_UNSERVED}` }).waitFor({ timeout: 15_000 });
  await features(dialog).getByRole("button", { name: "Send", exact: true }).click({ timeout: 15_000 });
  await form(dialog).getByLabel("Amount", { exact: true }).fill("1");
  await form(dialog).getByLabel("To", { exact: true }).fill(RECEIVER);
  await form(dialog).getByRole("button", { name: "Send", exact: true }).click();
  await dialog.getByTestId("send-error").filter({ hasText: /^Unsupported chain$/ }).waitFor({ timeout: 15_000 });
  // The positive probe: the wallet did hear this page (the connect), but not a send.
  const calls = await page.evaluate(() => window.__walletCalls);
  assert.ok(calls.includes("eth_requestAccounts"), `${calls}`);
  assert.ok(!calls.includes("eth_sendTransaction"), `${calls}`);
  await context.close();
});

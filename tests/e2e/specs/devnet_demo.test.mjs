// The newcomer's path on the demo dapp at `/` with the devnet as `./scripts/run` gives it to the
// gateway (`--devnet devnet.json`, served at /devnet.json): nothing injected, nothing stored; the
// demo's own dev wallet is the devnet's funded one on both chains. Connect, see the ETH and VDT
// balances the node holds, send ETH (receipt read from the node), see it in Activity, and switch to
// the other chain and see its balance.
import { test } from "node:test";
import assert from "node:assert/strict";
import { CHAIN_A, CHAIN_B, DEV_WALLET, display, ETHER, nativeBalance, RECEIVER, rpc, evmWorldForFile, tokenBalance, waitForReceipt } from "./evm.mjs";

const world = evmWorldForFile({ gatewayDevnet: true }, 1);

test("a newcomer on the demo connects the devnet's dev wallet, sees its balances, sends, sees it in Activity and switches chains", async () => {
  // The second chain holds a different balance, so the switch shows something else.
  await rpc(world.url(CHAIN_B), "anvil_setBalance", [DEV_WALLET.address, `0x${(3n * ETHER).toString(16)}`]);
  const context = await world.browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  await page.goto(world.gateway.url);
  await page.getByTestId("devnet").filter({ hasText: `chains ${CHAIN_A} and ${CHAIN_B}` }).waitFor({ timeout: 15_000 });

  await page.getByTestId("connect").click();
  await page.getByRole("dialog").getByRole("button", { name: "Connect Dev Wallet" }).click({ timeout: 15_000 });
  await page.getByTestId("status").filter({ hasText: /^connected$/ }).waitFor({ timeout: 15_000 });
  assert.equal(await page.getByTestId("address").getAttribute("title"), DEV_WALLET.address, "the devnet's funded wallet");
  assert.equal(await page.getByTestId("chain").textContent(), `Devnet ${CHAIN_A}`);

  // The Account: the node's balances.
  if ((await page.getByRole("dialog").count()) === 0) await page.getByTestId("connect").click();
  const dialog = page.getByRole("dialog");
  const eth0 = await nativeBalance(world.url(CHAIN_A), DEV_WALLET.address);
  const vdt = await tokenBalance(world.url(CHAIN_A), world.token(CHAIN_A), DEV_WALLET.address);
  await dialog.getByTestId("account-balance").filter({ hasText: `${display(eth0)} ETH` }).waitFor({ timeout: 30_000 });
  await dialog.locator(`[data-asset="eip155:${CHAIN_A}/erc20:${world.token(CHAIN_A)}" i]`).getByTestId("token-amount").filter({ hasText: `${display(vdt)} VDT` }).waitFor({ timeout: 30_000 });

  // Send 0.25 ETH.
  await dialog.getByRole("group", { name: "Wallet features" }).getByRole("button", { name: "Send", exact: true }).click();
  const form = dialog.getByRole("form", { name: "Send tokens" });
  await form.getByLabel("Token", { exact: true }).selectOption(`eip155:${CHAIN_A}/native`);
  await form.getByLabel("Amount", { exact: true }).fill("0.25");
  await form.getByLabel("To", { exact: true }).fill(RECEIVER);
  await form.getByRole("button", { name: "Send", exact: true }).click();
  const hash = await (await page.waitForFunction(() => window.__vestibule.state().send.sent[0]?.hash ?? null, null, { timeout: 30_000 })).jsonValue();
  const receipt = await waitForReceipt(world.url(CHAIN_A), hash);
  assert.equal(receipt.status, "0x1");
  assert.equal(BigInt((await rpc(world.url(CHAIN_A), "eth_getTransactionByHash", [hash])).value), ETHER / 4n);
  await dialog.getByRole("region", { name: "Send", exact: true }).getByRole("button", { name: "Back" }).click();
  const eth1 = await nativeBalance(world.url(CHAIN_A), DEV_WALLET.address);
  await dialog.getByTestId("account-balance").filter({ hasText: `${display(eth1)} ETH` }).waitFor({ timeout: 30_000 });
  await dialog.getByRole("tab", { name: "Activity" }).click();
  await dialog.locator(`[data-testid="activity-transaction"][data-hash="${hash}" i]`).getByTestId("activity-transfer").filter({ hasText: "− 0.25 ETH" }).waitFor({ timeout: 30_000 });

  // The other chain: the demo's wallet knows both, so it switches at once.
  await dialog.getByTestId("account-network").click();
  await dialog.getByRole("region", { name: "Networks" }).locator(`button[data-network="eip155:${CHAIN_B}"]`).click({ timeout: 15_000 });
  await dialog.getByTestId("account-network").filter({ hasText: `Devnet ${CHAIN_B}` }).waitFor({ timeout: 30_000 });
  await dialog.getByTestId("account-balance").filter({ hasText: `${display(3n * ETHER)} ETH` }).waitFor({ timeout: 30_000 });
  await page.getByTestId("chain").filter({ hasText: `Devnet ${CHAIN_B}` }).waitFor({ timeout: 15_000 });
  assert.equal(await page.evaluate(() => window.__devWallet.chainId), `0x${CHAIN_B.toString(16)}`);
  assert.deepEqual(errors, []);
  await context.close();
});

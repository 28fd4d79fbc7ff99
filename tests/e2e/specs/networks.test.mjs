// Network switching in Chromium on the devnet (issue 13): from the Account's network button to the
// Networks view; a chain the wallet does not know (4902) is added (wallet_addEthereumChain with the
// session's definition) and then switched to, with SwitchNetwork shown while the wallet decides;
// the balances follow the chain; back to the first chain without an add; a declined switch shows
// the wallet's error and a retry.
import { test } from "node:test";
import assert from "node:assert/strict";
import { CHAIN_A, CHAIN_B, connect, DEV_WALLET, display, ETHER, nativeBalance, openAccount, rpc, evmWorldForFile } from "./evm.mjs";

const world = evmWorldForFile({}, 2);

const hex = (n) => `0x${n.toString(16)}`;

/** The Networks view's button for `chainId`. */
const networkButton = (dialog, chainId) => dialog.getByRole("region", { name: "Networks" }).locator(`button[data-network="eip155:${chainId}"]`);

/** Opens the Networks view from the Account and chooses `chainId`. */
async function choose(dialog, chainId) {
  await dialog.getByTestId("account-network").click({ timeout: 15_000 });
  await networkButton(dialog, chainId).click({ timeout: 15_000 });
}

test("switching to the second chain (4902, then add) and back: SwitchNetwork while pending, and the balances follow the chain", async () => {
  // The second chain holds a different balance for the dev wallet, so the Account must show B's.
  const address = DEV_WALLET.address;
  await rpc(world.url(CHAIN_B), "anvil_setBalance", [address, hex(7n * ETHER)]);
  const ethA = await nativeBalance(world.url(CHAIN_A), address);
  const ethB = await nativeBalance(world.url(CHAIN_B), address);
  assert.notEqual(display(ethA), display(ethB));

  // The wallet knows only the first chain.
  const { context, page, errors } = await world.open({ chainId: CHAIN_A, walletChains: [CHAIN_A] });
  await connect(page);
  const dialog = await openAccount(page);
  await dialog.getByTestId("account-balance").filter({ hasText: `${display(ethA)} ETH` }).waitFor({ timeout: 30_000 });

  // The visitor has not answered the wallet yet: SwitchNetwork shows, pending.
  await page.evaluate(() => (window.__devWallet.holdPrompts = true));
  const before = await page.evaluate(() => window.__walletCalls.length);
  await choose(dialog, CHAIN_B);
  await dialog.getByRole("region", { name: "Switch network" }).and(dialog.locator('[data-status="switching"]')).waitFor({ timeout: 15_000 });
  await page.waitForFunction(() => window.__walletCalls.includes("wallet_switchEthereumChain"), null, { timeout: 15_000 });
  assert.equal(await page.evaluate(() => window.v.state().connection.namespaces.eip155.network.caipNetworkId), `eip155:${CHAIN_A}`, "not moved before the wallet answers");
  await page.evaluate(() => {
    window.__devWallet.holdPrompts = false;
    window.__devWallet.release();
  });

  // Arrived: the Account on the second chain, with its balance and its token.
  await dialog.getByTestId("account-network").filter({ hasText: `Anvil ${CHAIN_B}` }).waitFor({ timeout: 30_000 });
  await dialog.getByTestId("account-balance").filter({ hasText: `${display(ethB)} ETH` }).waitFor({ timeout: 30_000 });
  await dialog.locator(`[data-asset="eip155:${CHAIN_B}/erc20:${world.token(CHAIN_B)}" i]`).getByTestId("token-amount").waitFor({ timeout: 30_000 });
  assert.equal(await dialog.locator(`[data-asset^="eip155:${CHAIN_A}/"]`).count(), 0, "no balances of the first chain left");
  const asked = await page.evaluate((n) => window.__walletCalls.slice(n).filter((m) => m.startsWith("wallet_")), before);
  assert.deepEqual(asked, ["wallet_switchEthereumChain", "wallet_addEthereumChain", "wallet_switchEthereumChain"]);
  assert.equal(await page.evaluate(() => window.__devWallet.chainId), hex(CHAIN_B));
  assert.deepEqual(await page.evaluate(() => window.__devWallet.chains), [CHAIN_A, CHAIN_B], "the wallet learned the chain from the session's definition");

  // The Networks view now marks the second chain.
  await dialog.getByTestId("account-network").click();
  await networkButton(dialog, CHAIN_B).and(dialog.locator('[aria-current="true"]')).waitFor({ timeout: 15_000 });
  // And back to the first: the wallet knows it now, so no add.
  const back = await page.evaluate(() => window.__walletCalls.length);
  await networkButton(dialog, CHAIN_A).click();
  await dialog.getByTestId("account-network").filter({ hasText: `Anvil ${CHAIN_A}` }).waitFor({ timeout: 30_000 });
  await dialog.getByTestId("account-balance").filter({ hasText: `${display(ethA)} ETH` }).waitFor({ timeout: 30_000 });
  assert.deepEqual(await page.evaluate((n) => window.__walletCalls.slice(n).filter((m) => m.startsWith("wallet_")), back), ["wallet_switchEthereumChain"]);
  assert.equal(await page.evaluate(() => window.__devWallet.chainId), hex(CHAIN_A));
  assert.deepEqual(errors, []);
  await context.close();
});

test("a declined switch shows the wallet's error on SwitchNetwork, and Retry switches", async () => {
  const { context, page } = await world.open({ chainId: CHAIN_A, walletChains: [CHAIN_A, CHAIN_B] });
  await connect(page);
  const dialog = await openAccount(page);
  await page.evaluate(() => (window.__devWallet.rejectAll = true));
  await choose(dialog, CHAIN_B);
  await dialog.getByTestId("switch-network-error").filter({ hasText: "Switch declined" }).waitFor({ timeout: 15_000 });
  assert.equal(await page.evaluate(() => window.__devWallet.chainId), hex(CHAIN_A));
  await page.evaluate(() => (window.__devWallet.rejectAll = false));
  await dialog.getByRole("region", { name: "Switch network" }).getByRole("button", { name: "Retry" }).click();
  await dialog.getByTestId("account-network").filter({ hasText: `Anvil ${CHAIN_B}` }).waitFor({ timeout: 30_000 });
  assert.equal(await page.evaluate(() => window.__devWallet.chainId), hex(CHAIN_B));
  await context.close();
});

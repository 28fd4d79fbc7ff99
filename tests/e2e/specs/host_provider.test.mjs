// The host's EIP-1193 provider (`Vestibule.create(...).provider`) in Chromium on the devnet
// (issue 13): a safe read (`eth_call`, `eth_getBalance`) is answered through the session by the
// gateway's chain service, without reaching the wallet; a method in neither list opens the modal,
// shows "Requested RPC call is not allowed" and is rejected with EIP-1193's 4200; a sending method
// still goes to the wallet (the probe that the wallet would have been seen).
import { test } from "node:test";
import assert from "node:assert/strict";
import { balanceOfData, CHAIN_A, connect, ETHER, nativeBalance, RECEIVER, rpc, evmWorldForFile, tokenBalance, waitForReceipt } from "./evm.mjs";

const world = evmWorldForFile({}, 2);

/** The host page's request through its provider: `{ result }` or `{ code, message }`. */
function hostRequest(page, method, params) {
  return page.evaluate(
    ({ method, params }) =>
      window.v.provider.request({ method, params }).then(
        (result) => ({ result }),
        (e) => ({ code: e.code, message: e.message }),
      ),
    { method, params },
  );
}

test("a host eth_call and eth_getBalance are answered by the server's chain service, with no wallet prompt", async () => {
  const { context, page, errors } = await world.open();
  const address = await connect(page);
  const token = world.token(CHAIN_A);
  const calls = await page.evaluate(() => window.__walletCalls.slice());
  const prompts = await page.evaluate(() => window.__devWallet.prompts);

  const call = await hostRequest(page, "eth_call", [{ to: token, data: balanceOfData(address) }, "latest"]);
  assert.equal(BigInt(call.result), await tokenBalance(world.url(CHAIN_A), token, address), JSON.stringify(call));
  const balance = await hostRequest(page, "eth_getBalance", [address, "latest"]);
  assert.equal(BigInt(balance.result), await nativeBalance(world.url(CHAIN_A), address), JSON.stringify(balance));
  assert.deepEqual(await page.evaluate(() => window.__walletCalls.slice()), calls, "the wallet heard nothing of the reads");
  assert.equal(await page.evaluate(() => window.__devWallet.prompts), prompts);
  assert.equal(await page.evaluate(() => window.v.state().modal.status), "closed", "a read opens nothing");

  // 'to' and 'data' must start with 0x: refused without reaching the wallet.
  const bad = await hostRequest(page, "eth_call", [{ to: token, data: balanceOfData(address).slice(2) }, "latest"]);
  assert.equal(bad.result, undefined, JSON.stringify(bad));
  assert.equal(bad.code, -32602, JSON.stringify(bad));
  assert.deepEqual(await page.evaluate(() => window.__walletCalls.slice()), calls);

  // The probe: a sending method from the host does reach the wallet, and the node mines it.
  const sent = await hostRequest(page, "eth_sendTransaction", [{ from: address, to: RECEIVER, value: `0x${ETHER.toString(16)}` }]);
  assert.match(String(sent.result), /^0x[0-9a-f]{64}$/, JSON.stringify(sent));
  assert.equal((await waitForReceipt(world.url(CHAIN_A), sent.result)).status, "0x1");
  assert.ok((await page.evaluate(() => window.__walletCalls.slice())).includes("eth_sendTransaction"));
  assert.deepEqual(errors, []);
  await context.close();
});

test("a disallowed host method opens the modal, shows Requested RPC call is not allowed, and is rejected with 4200", async () => {
  const { context, page } = await world.open();
  const address = await connect(page);
  const before = await nativeBalance(world.url(CHAIN_A), address);
  assert.equal(await page.evaluate(() => window.v.state().modal.status), "closed");

  const refused = await hostRequest(page, "anvil_setBalance", [address, "0x1"]);
  assert.equal(refused.code, 4200, JSON.stringify(refused));
  assert.equal(refused.result, undefined);
  await page.getByRole("status").filter({ hasText: "Requested RPC call is not allowed" }).waitFor({ timeout: 15_000 });
  await page.getByRole("dialog").waitFor({ timeout: 15_000 });
  assert.equal(await page.evaluate(() => window.v.state().modal.status), "open");
  // Neither the wallet nor the node did it.
  assert.ok(!(await page.evaluate(() => window.__walletCalls.includes("anvil_setBalance"))));
  assert.equal(await nativeBalance(world.url(CHAIN_A), address), before);
  // The probe: the same node call made directly does change the balance (so the check above could fail).
  await rpc(world.url(CHAIN_A), "anvil_setBalance", [RECEIVER, "0x1"]);
  assert.equal(await nativeBalance(world.url(CHAIN_A), RECEIVER), 1n);
  await context.close();
});

// A wagmi + viem dapp (/wagmi.html) whose connect modal and provider are Vestibule (the `vestibule()`
// connector): wagmi's connection hook shows the account the session connected, wagmi's
// `sendTransaction` goes through the widget's provider to the dev wallet, which signs it and sends
// it to a real anvil; a reload reconnects without a prompt.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { ANVIL_KEY_0, startAnvil } from "../../peers/anvil.mjs";
import { injectDevWallet, launch, startGateway, verifyAllSessions } from "./support.mjs";

let gateway;
let browser;
let anvil;

before(async () => {
  anvil = await startAnvil(1);
  gateway = await startGateway();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await gateway?.stop();
  await anvil?.stop();
  assert.ok(verifyAllSessions(gateway.data) >= 1);
});

async function rpc(method, params = []) {
  const response = await fetch(anvil.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
  const body = await response.json();
  if (body.error) throw new Error(body.error.message);
  return body.result;
}

test("wagmi connects through Vestibule, sends a transaction that anvil mines, and reconnects after a reload", async () => {
  const context = await browser.newContext();
  await injectDevWallet(context, { key: ANVIL_KEY_0, rpcUrl: anvil.url });
  const page = await context.newPage();
  await page.goto(`${gateway.url}/wagmi.html?rpc=${encodeURIComponent(anvil.url)}`);
  await page.getByTestId("wagmi-status").filter({ hasText: "disconnected" }).waitFor({ timeout: 10_000 });
  await page.getByTestId("wagmi-connect").click();
  await page.getByRole("dialog").getByRole("button", { name: "Connect Dev Wallet" }).click({ timeout: 10_000 });
  await page.getByTestId("wagmi-status").filter({ hasText: /^connected$/ }).waitFor({ timeout: 10_000 });
  const address = await page.evaluate(() => window.__devWallet.address);
  assert.equal(await page.getByTestId("wagmi-address").textContent(), address);
  assert.equal(await page.getByTestId("wagmi-chain").textContent(), "1");
  assert.equal(await page.getByTestId("wagmi-connector").textContent(), "Vestibule");

  const nonce = BigInt(await rpc("eth_getTransactionCount", [address, "latest"]));
  await page.getByTestId("wagmi-send").click();
  await page.getByTestId("wagmi-tx").filter({ hasText: /^0x[0-9a-f]{64}$/ }).waitFor({ timeout: 15_000 });
  const hash = await page.getByTestId("wagmi-tx").textContent();
  // wagmi waited for the receipt through its own transport (anvil), and so do we.
  await page.getByTestId("wagmi-receipt").filter({ hasText: "success" }).waitFor({ timeout: 15_000 });
  const receipt = await rpc("eth_getTransactionReceipt", [hash]);
  assert.equal(receipt.status, "0x1");
  assert.equal(receipt.from.toLowerCase(), address.toLowerCase());
  assert.equal(BigInt(await rpc("eth_getTransactionCount", [address, "latest"])), nonce + 1n);
  assert.equal(await page.evaluate(() => window.__devWallet.prompts), 2, "one prompt to connect, one to send");

  // A reload: wagmi reconnects through the session's stored connection, with no prompt.
  await page.reload();
  await page.getByTestId("wagmi-status").filter({ hasText: /^connected$/ }).waitFor({ timeout: 10_000 });
  assert.equal(await page.getByTestId("wagmi-address").textContent(), address);
  assert.equal(await page.evaluate(() => window.__devWallet.prompts), 0);
  await context.close();
});

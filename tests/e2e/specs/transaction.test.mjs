// A transaction from the host app in Chromium: the demo asks the widget's EIP-1193 provider for
// `eth_sendTransaction`; the dev wallet signs it and sends it to a real anvil, which mines it.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { ANVIL_KEY_0, startAnvil, waitForReceipt } from "../../peers/anvil.mjs";
import { launch, startGateway, verifyAllSessions } from "./support.mjs";

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

test("the host app sends a transaction through the widget's provider; the dev wallet signs it and anvil mines it", async () => {
  const context = await browser.newContext();
  // Anvil's funded first account as the dev wallet's key, and anvil as its node.
  await context.addInitScript(([key]) => {
    localStorage.setItem("vestibule:demo:devWallet", "on");
    localStorage.setItem("vestibule:demo:devWalletKey", key);
  }, [ANVIL_KEY_0]);
  const page = await context.newPage();
  await page.goto(`${gateway.url}/?rpc=${encodeURIComponent(anvil.url)}`);
  await page.getByTestId("connect").click();
  await page.getByRole("button", { name: "Connect Dev Wallet" }).click();
  await page.getByTestId("status").filter({ hasText: /^connected$/ }).waitFor({ timeout: 10_000 });
  const address = await page.evaluate(() => window.__devWallet.address);
  const nonceBefore = await rpc("eth_getTransactionCount", [address, "latest"]);

  await page.getByTestId("send-tx").click();
  await page.getByTestId("tx").filter({ hasText: /^0x[0-9a-f]{64}$/ }).waitFor({ timeout: 15_000 });
  const hash = await page.getByTestId("tx").textContent();
  const receipt = await waitForReceipt(anvil.url, hash);
  assert.equal(receipt.status, "0x1");
  assert.equal(receipt.from.toLowerCase(), address.toLowerCase());
  assert.equal(BigInt(await rpc("eth_getTransactionCount", [address, "latest"])), BigInt(nonceBefore) + 1n);
  assert.equal(await page.evaluate(() => window.__devWallet.prompts), 2, "one prompt to connect, one to send");

  // A visitor who declines: the host app hears 4001.
  await page.evaluate(() => (window.__devWallet.rejectAll = true));
  await page.getByTestId("send-tx").click();
  await page.getByTestId("tx").filter({ hasText: "error 4001" }).waitFor({ timeout: 10_000 });
  await context.close();
});

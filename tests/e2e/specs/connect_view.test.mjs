// The Connect view in Chromium: the connect methods in the spec's order (email, social, wallet; the
// wallet first when an announced wallet is shown), connector groups only when they have entries,
// recent wallets, and what email and social login answer on a deployment without an embedded-wallet
// provider.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { devWalletPage, launch, startGateway, verifyAllSessions } from "./support.mjs";

let gateway;
let browser;

before(async () => {
  gateway = await startGateway();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await gateway?.stop();
  assert.ok(verifyAllSessions(gateway.data) >= 3);
});

const methodsOrder = (page) => page.evaluate(() => Array.from(document.querySelectorAll("[data-connect-method]"), (e) => e.getAttribute("data-connect-method")));
const groupsOrder = (page) => page.evaluate(() => Array.from(document.querySelectorAll("[data-connector-group]"), (e) => e.getAttribute("data-connector-group")));

test("without a wallet in the browser: email, social, wallet; no empty group shows", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${gateway.url}/?email=on&socials=google,github`);
  await page.getByTestId("connect").click();
  await page.getByRole("dialog").getByText("Connect wallet").waitFor({ timeout: 10_000 });
  assert.deepEqual(await methodsOrder(page), ["email", "social", "wallet"]);
  // Email and social are parts: their chunks load once the view draws them.
  await page.getByRole("group", { name: "Social login" }).waitFor({ timeout: 10_000 });
  assert.deepEqual(await groupsOrder(page), []);
  await page.getByText("No wallet found in this browser.").waitFor();
  assert.deepEqual(await page.getByRole("group", { name: "Social login" }).getByRole("button").allTextContents(), ["Google", "GitHub"]);
  await context.close();
});

test("with an announced wallet: wallet, email, social; email and social say why they cannot go on", async () => {
  const { context, page } = await devWalletPage(browser);
  await page.goto(`${gateway.url}/?email=on&socials=google`);
  await page.getByTestId("connect").click();
  await page.getByRole("button", { name: "Connect Dev Wallet" }).waitFor({ timeout: 10_000 });
  assert.deepEqual(await methodsOrder(page), ["wallet", "email", "social"]);
  assert.deepEqual(await groupsOrder(page), ["injected"]);

  // The server validates the address; a valid one meets the missing email provider.
  await page.getByLabel("Email", { exact: true }).fill("visitor@example.com");
  await page.getByRole("button", { name: "Continue with email" }).click();
  await page.getByRole("status").filter({ hasText: "Unable to load email login dependency" }).waitFor({ timeout: 10_000 });
  const refused = await page.evaluate(() => window.__vestibule.command({ type: "ConnectEmail", email: "not an email" }));
  assert.equal(refused.status, "refused");
  assert.equal(refused.error.code, "invalid_input");

  await page.getByRole("button", { name: "Continue with Google" }).click();
  await page.getByRole("status").filter({ hasText: "Failed to initiate social connection" }).waitFor({ timeout: 10_000 });
  await context.close();
});

test("a wallet used before shows under Recent, not again under Installed", async () => {
  const { context, page } = await devWalletPage(browser);
  await page.goto(gateway.url);
  await page.getByTestId("connect").click();
  await page.getByRole("button", { name: "Connect Dev Wallet" }).click();
  await page.getByTestId("status").filter({ hasText: /^connected$/ }).waitFor({ timeout: 10_000 });
  await page.getByTestId("connect").click();
  await page.getByRole("button", { name: "Disconnect" }).click();
  await page.getByTestId("status").filter({ hasText: "disconnected" }).waitFor({ timeout: 10_000 });
  await page.getByTestId("connect").click();
  await page.getByRole("group", { name: "Recent" }).getByRole("button", { name: "Connect Dev Wallet" }).waitFor({ timeout: 10_000 });
  assert.deepEqual(await groupsOrder(page), ["recent"]);
  await context.close();
});

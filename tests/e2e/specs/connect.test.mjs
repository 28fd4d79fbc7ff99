// The demo dapp in Chromium against the real gateway: connect with the dev wallet, stay connected
// across a reload without a new wallet prompt, a rejecting wallet, and sign-in with a real signature.
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
  // Every session these tests created replays, and verifies against the hashes the page was sent.
  const n = verifyAllSessions(gateway.data);
  assert.ok(n >= 3, `sessions verified: ${n}`);
});

test("connect with the dev wallet, see the address, and stay connected after a reload", async () => {
  const { context, page } = await devWalletPage(browser);
  await page.goto(gateway.url);
  await page.getByTestId("connect").click();
  await page.getByRole("button", { name: "Connect Dev Wallet" }).click();
  await page.getByTestId("status").filter({ hasText: /^connected$/ }).waitFor({ timeout: 10_000 });
  const address = await page.evaluate(() => window.__devWallet.address);
  const shown = await page.getByTestId("address").textContent();
  assert.equal(shown, `${address.slice(0, 4)}…${address.slice(-6)}`);
  assert.equal(await page.getByTestId("chain").textContent(), "Ethereum");

  assert.equal(await page.evaluate(() => window.__devWallet.prompts), 1);
  // Reload: the session resumes and the stored connection is re-synced silently (eth_accounts).
  await page.reload();
  await page.waitForFunction(() => window.__vestibule?.state()?.connection.namespaces.eip155?.syncing === false && window.__vestibule.state().connection.namespaces.eip155.status === "connected", null, { timeout: 10_000 });
  assert.equal(await page.getByTestId("address").textContent(), shown);
  assert.equal(await page.evaluate(() => window.__devWallet.prompts), 0, "no new wallet prompt after the reload");
  await context.close();
});

test("a rejecting wallet gives Connection rejected and returns to Connect", async () => {
  const { context, page } = await devWalletPage(browser, { rejects: true });
  await page.goto(gateway.url);
  await page.getByTestId("connect").click();
  await page.getByRole("button", { name: "Connect Dev Wallet" }).click();
  await page.getByRole("status").filter({ hasText: "Connection rejected" }).waitFor({ timeout: 10_000 });
  await page.getByRole("dialog").getByText("Connect wallet").waitFor();
  assert.equal(await page.getByTestId("status").textContent(), "disconnected");
  assert.equal(await page.getByTestId("error").textContent(), "Connection rejected");
  await context.close();
});

test("sign in: the dev wallet signs the server's message and the session is stored", async () => {
  const { context, page } = await devWalletPage(browser);
  await page.goto(`${gateway.url}/?siwx=optional`);
  await page.getByTestId("connect").click();
  await page.getByRole("button", { name: "Connect Dev Wallet" }).click();
  const message = page.getByTestId("siwx-message");
  await message.waitFor({ timeout: 10_000 });
  assert.match(await message.textContent(), /wants you to sign in with your Ethereum account:\n0x[0-9a-fA-F]{40}\n/);
  await page.getByRole("button", { name: "Sign", exact: true }).click();
  await page.getByTestId("signed-in").filter({ hasText: "yes" }).waitFor({ timeout: 10_000 });
  assert.equal(await page.getByRole("dialog").count(), 0, "signing closes the modal");
  // A reload keeps the signed-in session without a new prompt.
  await page.reload();
  await page.getByTestId("signed-in").filter({ hasText: "yes" }).waitFor({ timeout: 10_000 });
  await page.waitForFunction(() => window.__vestibule?.state()?.connection.namespaces.eip155?.status === "connected", null, { timeout: 10_000 });
  assert.equal(await page.evaluate(() => window.__devWallet.prompts), 0, "no prompt after the reload");
  assert.equal(await page.getByRole("dialog").count(), 0);
  await context.close();
});

test("sign in: a declined signature shows Signature declined, a tampered one is refused", async () => {
  const { context, page } = await devWalletPage(browser);
  await page.goto(`${gateway.url}/?siwx=required`);
  await page.getByTestId("connect").click();
  await page.getByRole("button", { name: "Connect Dev Wallet" }).click();
  await page.getByTestId("siwx-message").waitFor({ timeout: 10_000 });
  const sign = page.getByRole("button", { name: "Sign", exact: true });

  await page.evaluate(() => (window.__devWallet.rejectAll = true));
  await sign.click();
  await page.getByTestId("siwx-error").filter({ hasText: "Signature declined" }).waitFor({ timeout: 10_000 });
  assert.equal(await page.getByTestId("signed-in").textContent(), "no");

  await page.evaluate(() => {
    window.__devWallet.rejectAll = false;
    window.__devWallet.tamperSignatures = true;
  });
  const before = await page.getByTestId("siwx-message").textContent();
  await sign.click();
  await page.getByTestId("siwx-error").filter({ hasText: "The signature could not be verified" }).waitFor({ timeout: 10_000 });
  assert.equal(await page.getByTestId("signed-in").textContent(), "no");
  assert.notEqual(await page.getByTestId("siwx-message").textContent(), before, "a new message with a new nonce");
  // Sign-in is required: the modal cannot be closed, and Cancel disconnects.
  assert.equal(await page.getByRole("button", { name: "Close" }).isDisabled(), true);
  await page.keyboard.press("Escape");
  // A command sent after the Escape is answered after anything the Escape sent (one session, one
  // order): once its result is in and the mirror has caught up, a close would have shown.
  const probe = await page.evaluate(() => window.__vestibule.command({ type: "SetToastHover", hovered: false }));
  await page.waitForFunction((seq) => window.__vestibule.seq() >= seq, probe.seq ?? 0, { timeout: 10_000 });
  assert.equal(await page.evaluate(() => window.__vestibule.state().modal.status), "open", "Escape does not close it either");
  assert.equal(await page.getByTestId("siwx-message").count(), 1);
  await page.getByRole("button", { name: "Cancel" }).click();
  await page.getByTestId("status").filter({ hasText: "disconnected" }).waitFor({ timeout: 10_000 });
  // Spec §4: the modal stays, on Connect, where another wallet can be chosen.
  assert.equal(await page.evaluate(() => window.__vestibule.state().modal.status), "open");
  await page.getByRole("button", { name: "Connect Dev Wallet" }).waitFor({ timeout: 10_000 });
  await context.close();
});

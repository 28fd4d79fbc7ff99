// Every view the widget draws, in both themes: a screenshot kept in docs/screenshots/ (the demo
// dapp, Connect with all three connect methods, ConnectingWallet, SIWXSignMessage, Account, the
// toasts: success, error, loading; the configuration alert; a multichain session's Connect with a
// Solana wallet, its Account view with the namespace switch, and SwitchActiveChain) and axe-core (from npm, injected into the page) with zero
// serious or critical violations on the page as drawn. Each step also checks that the view is the
// one named.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { devWalletPage, injectDevSolanaWallet, launch, ROOT, seriousViolations, settledScreenshot, startGateway, verifyAllSessions } from "./support.mjs";

const SHOTS = join(ROOT, "docs/screenshots");
let gateway;
let browser;

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  gateway = await startGateway(
    `[[projects]]\nid = "demo"\nallowed_origins = ["http://127.0.0.1:*"]\n\n[[projects]]\nid = "locked"\nallowed_origins = ["https://only.example"]\n`,
  );
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await gateway?.stop();
  assert.ok(verifyAllSessions(gateway.data) >= 4, "two sessions per theme, each replays with --verify");
});

// Finite animations (view and header fades, height) are finished first, so each shot shows the settled view.
// The modal's animated height settles on its content's: nothing is cut off. It may still be
// animating when a view has just been drawn (on a busy machine the shot came mid-way), so the shot
// waits for it to settle; the timeout only turns content that stays cut off into a failure.
async function shot(page, name) {
  const clipped = await settledScreenshot(page, join(SHOTS, `${name}.png`));
  assert.deepEqual(await seriousViolations(page), [], `${name}: axe finds no serious or critical violation`);
  assert.equal(clipped, 0, `${name}: the modal's content is not cut off (${clipped} px)`);
}
const header = (page) => page.getByRole("dialog").locator("header h2").getAttribute("data-route");

for (const theme of ["dark", "light"]) {
  test(`every view in the ${theme} theme`, async () => {
    const { context, page } = await devWalletPage(browser);
    await page.goto(`${gateway.url}/?theme=${theme}&siwx=optional&email=on&socials=google,x,discord`);
    // The demo dapp itself, before anything is opened.
    await page.waitForFunction(() => window.__vestibule?.state()?.started === true, null, { timeout: 10_000 });
    await shot(page, `demo-${theme}`);
    await page.getByTestId("connect").click();
    await page.getByRole("button", { name: "Connect Dev Wallet" }).waitFor({ timeout: 10_000 });
    assert.equal(await header(page), "Connect");
    await shot(page, `connect-${theme}`);

    await page.evaluate(() => (window.__devWallet.holdPrompts = true));
    await page.getByRole("button", { name: "Connect Dev Wallet" }).click();
    await page.getByRole("dialog").getByText("Continue in Dev Wallet").waitFor({ timeout: 10_000 });
    assert.equal(await header(page), "ConnectingWallet");
    await shot(page, `connecting-${theme}`);

    await page.evaluate(() => {
      window.__devWallet.holdPrompts = false;
      window.__devWallet.release();
    });
    await page.getByTestId("siwx-message").waitFor({ timeout: 10_000 });
    assert.equal(await header(page), "SIWXSignMessage");
    await shot(page, `siwx-${theme}`);

    await page.getByRole("button", { name: "Sign", exact: true }).click();
    await page.getByTestId("signed-in").filter({ hasText: "yes" }).waitFor({ timeout: 10_000 });
    await page.getByTestId("connect").click();
    await page.getByRole("dialog").getByText("Disconnect").waitFor({ timeout: 10_000 });
    assert.equal(await header(page), "Account");
    await shot(page, `account-${theme}`);
    await page.getByRole("tab", { name: "Activity" }).click();
    assert.equal(await page.getByRole("tab", { name: "Activity" }).getAttribute("aria-selected"), "true");
    // The part asks for the newest page; wait for the server's answer (a list, or "Failed to fetch
    // transactions" on a gateway that serves no chain, with its toast).
    await page.getByRole("tabpanel").locator('[data-testid="activity"]:is([data-status="loaded"], [data-status="failed"])').waitFor({ timeout: 10_000 });

    await page.getByRole("button", { name: "Close" }).click();
    // The toasts' picture holds only the three below: any earlier toast has gone first (4 s).
    await page.waitForFunction(() => document.querySelectorAll('[data-vestibule-toasts] [role="status"]').length === 0, null, { timeout: 10_000 });
    await page.evaluate(() => {
      for (const [message, variant] of [["Saved", "success"], ["Something failed", "error"], ["Waiting for the wallet", "loading"]]) {
        window.__vestibule.send({ type: "ShowToast", message, variant, persistent: true });
      }
    });
    await page.waitForFunction(() => document.querySelectorAll('[data-vestibule-toasts] [role="status"]').length === 3, null, { timeout: 10_000 });
    await shot(page, `toasts-${theme}`);
    await context.close();

    const refused = await devWalletPage(browser);
    await refused.page.goto(`${gateway.url}/?projectId=locked&theme=${theme}`);
    await refused.page.getByRole("alertdialog", { name: "Invalid App Configuration" }).waitFor({ timeout: 10_000 });
    await shot(refused.page, `alert-${theme}`);
    await refused.context.close();
  });
}

for (const theme of ["dark", "light"]) {
  test(`the multichain views in the ${theme} theme`, async () => {
    const { context, page } = await devWalletPage(browser);
    await injectDevSolanaWallet(context, {});
    await page.goto(`${gateway.url}/?theme=${theme}&solana=devnet`);
    await page.getByTestId("connect").click();
    await page.getByRole("button", { name: /Connect Dev Solana Wallet/ }).waitFor({ timeout: 10_000 });
    assert.equal(await header(page), "Connect");
    await shot(page, `connect-multichain-${theme}`);
    await page.getByRole("button", { name: "Connect Dev Wallet", exact: true }).click();
    await page.getByTestId("status").filter({ hasText: /^connected$/ }).waitFor({ timeout: 10_000 });
    await page.getByTestId("connect").click();
    await page.getByRole("dialog").getByTestId("namespace-solana").waitFor({ timeout: 10_000 });
    assert.equal(await header(page), "Account");
    await shot(page, `account-multichain-${theme}`);
    await page.getByRole("dialog").getByTestId("namespace-solana").click();
    await page.getByRole("dialog").getByTestId("switch-active-chain").waitFor({ timeout: 10_000 });
    assert.equal(await header(page), "SwitchActiveChain");
    await shot(page, `switch-active-chain-${theme}`);
    await context.close();
  });
}

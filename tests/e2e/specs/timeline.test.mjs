// The replay timeline in Chromium on a session recorded through the demo: move to a chosen seq and
// see the widget's own views show that moment; screenshots of the timeline go to docs/screenshots/.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { devWalletPage, launch, ROOT, startGateway, storedCredentials, verifyAllSessions } from "./support.mjs";

const TOKEN = "e2e-admin-token-0123456789";
const SHOTS = join(ROOT, "docs/screenshots");
let gateway;
let browser;

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  gateway = await startGateway(`admin_token = "${TOKEN}"\n`);
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await gateway?.stop();
  assert.ok(verifyAllSessions(gateway.data) >= 1, "every recorded session replays with --verify");
});

test("the timeline shows the modal as the visitor saw it at a chosen seq", async () => {
  // Record a session: connect with the dev wallet.
  const { context, page } = await devWalletPage(browser);
  await page.goto(gateway.url);
  await page.getByTestId("connect").click();
  await page.getByRole("button", { name: "Connect Dev Wallet" }).waitFor();
  await page.getByRole("button", { name: "Connect Dev Wallet" }).click();
  await page.getByTestId("status").filter({ hasText: /^connected$/ }).waitFor({ timeout: 10_000 });
  await page.getByTestId("connect").click();
  await page.getByRole("dialog").getByText("Disconnect").waitFor();
  const session = (await page.evaluate(() => window.__vestibule.state())) && (await storedCredentials(page)).sessionId;
  await context.close();

  // Open the timeline on the recorded session.
  const tl = await (await browser.newContext()).newPage();
  await tl.goto(`${gateway.url}/replay.html`);
  await tl.getByLabel("Admin token").fill(TOKEN);
  await tl.getByRole("button", { name: "Load sessions" }).click();
  await tl.getByLabel("Session").selectOption(session);
  await tl.getByTestId("event").filter({ hasText: "type" }).waitFor({ timeout: 10_000 });

  // The seq at which the visitor was shown "ConnectingWallet".
  const events = await tl.evaluate(
    async ([id, token]) => (await fetch(`/debug/sessions/${id}/events`, { headers: { Authorization: `Bearer ${token}` } })).json(),
    [session, TOKEN],
  );
  const connecting = events.find((e) => e.type === "Navigated" && e.payload.view === "ConnectingWallet").seq;
  await tl.getByLabel("Seq").fill(String(connecting));
  await tl.getByTestId("seq").filter({ hasText: String(connecting) }).waitFor();
  const view = tl.getByTestId("visitor-view");
  await view.getByText("Continue in Dev Wallet").waitFor({ timeout: 10_000 });
  assert.match(await tl.getByTestId("event").textContent(), /ConnectingWallet/);
  await tl.screenshot({ path: join(SHOTS, "timeline-connecting.png"), animations: "disabled" });

  // A later moment: connected, the modal closed on Account.
  const connected = events.find((e) => e.type === "Connected").seq;
  await tl.getByLabel("Seq").fill(String(connected + 3));
  await view.getByText("(modal closed)").waitFor({ timeout: 10_000 });
  assert.ok(await tl.locator('[data-active="true"]', { hasText: /^connected$/ }).count() >= 1, "the connection chart highlights connected");
  await tl.screenshot({ path: join(SHOTS, "timeline-connected.png"), animations: "disabled" });
});

// Offline and back in Chromium: while the page is offline the session goes on (a toast expires on
// the server); back online, the widget resumes from its seq and gets every diff it missed exactly
// once, in order, and its mirror equals the server's state.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { devWalletPage, launch, startGateway, verifyAllSessions } from "./support.mjs";

const TOKEN = "e2e-admin-token-0123456789";
let gateway;
let browser;

before(async () => {
  gateway = await startGateway(`admin_token = "${TOKEN}"\n`);
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await gateway?.stop();
  assert.ok(verifyAllSessions(gateway.data) >= 1);
});

async function serverState(session) {
  const response = await fetch(`${gateway.url}/debug/sessions/${session}/state`, { headers: { Authorization: `Bearer ${TOKEN}` } });
  assert.equal(response.status, 200);
  return response.json();
}

async function until(condition, what, ms = 10_000) {
  const end = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("offline and back: the diffs made meanwhile arrive once each, in order, and the mirror equals the server", async () => {
  const { context, page } = await devWalletPage(browser);
  await page.goto(gateway.url);
  await page.waitForFunction(() => window.__vestibule?.state()?.started === true, null, { timeout: 10_000 });
  // Record every diff the mirror applies (prevSeq → seq), as the transport statechart emits them.
  await page.evaluate(() => {
    let last = window.__vestibule.seq();
    window.__applied = [];
    window.__vestibule.transport.on("applied", ({ mirror, whole }) => {
      if (!whole) window.__applied.push([last, mirror.seq]);
      last = mirror.seq;
    });
  });
  const session = await page.evaluate(() => localStorage.getItem("vestibule:demo:session"));
  const connections = await page.evaluate(() => window.__vestibule.stats().connections);

  await page.evaluate(() => window.__vestibule.send({ type: "ShowToast", message: "Shown before going offline", variant: "success", durationMs: 1500 }));
  const toast = page.getByRole("status").filter({ hasText: "Shown before going offline" });
  await toast.waitFor({ timeout: 10_000 });

  await context.setOffline(true);
  await page.waitForFunction(() => window.__vestibule.online() === false, null, { timeout: 10_000 });
  const offlineSeq = await page.evaluate(() => window.__vestibule.seq());
  // The server's timer dismisses the toast while the page cannot hear it.
  await until(async () => (await serverState(session)).state.toasts.order.length === 0, "the server to dismiss the toast");
  const { seq: serverSeq } = await serverState(session);
  assert.ok(serverSeq > offlineSeq, `the session moved on while offline (${offlineSeq} → ${serverSeq})`);
  assert.equal(await toast.count(), 1, "offline, the page still shows what it last heard");
  assert.equal(await page.evaluate(() => window.__vestibule.seq()), offlineSeq);

  await context.setOffline(false);
  await toast.waitFor({ state: "detached", timeout: 10_000 });
  await page.waitForFunction((seq) => window.__vestibule.seq() === seq, serverSeq, { timeout: 10_000 });

  const { applied, stats, mirrored } = await page.evaluate(() => ({
    applied: window.__applied,
    stats: window.__vestibule.stats(),
    mirrored: window.__vestibule.state(),
  }));
  for (let i = 1; i < applied.length; i++) {
    assert.equal(applied[i][0], applied[i - 1][1], `diff ${i} follows on from the one before (no gap, no repeat): ${JSON.stringify(applied)}`);
  }
  assert.ok(applied.some(([prev]) => prev === offlineSeq), "the missed diffs came after the reconnect");
  assert.equal(applied.at(-1)[1], serverSeq);
  assert.equal(stats.gaps, 0);
  assert.equal(stats.hashMismatches, 0);
  assert.equal(stats.connections, connections + 1, "one reconnect, made when the page came back online");
  const server = await serverState(session);
  assert.deepEqual(mirrored, server.state, "the mirror equals the server's state");
  await context.close();
});

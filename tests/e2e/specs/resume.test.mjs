// Offline and back in Chromium: while the page is offline the session goes on (a toast expires on
// the server); back online, the widget resumes from its seq and gets every diff it missed exactly
// once, in order, and its mirror equals the server's state.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { devWalletPage, launch, startGateway, storedCredentials, verifyAllSessions } from "./support.mjs";

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
  const { sessionId: session } = await storedCredentials(page);

  // A toast whose timer runs out while the page is offline. Its timer may beat the page going
  // offline on a slow machine (the dismissal then arrives while the page can still hear it): that
  // attempt proves nothing, so it is made again, online, with twice the time, until the page went
  // offline with the toast still shown. Counted by what the mirror holds, never by how long it took.
  let durationMs = 1500;
  let toast;
  let connections;
  let offlineSeq;
  for (let attempt = 1; ; attempt++) {
    const message = `Shown before going offline (${attempt})`;
    const before = await page.evaluate(() => window.__vestibule.seq());
    await page.evaluate((toast) => window.__vestibule.send({ type: "ShowToast", message: toast.message, variant: "success", durationMs: toast.durationMs }), { message, durationMs });
    toast = page.getByRole("status").filter({ hasText: message });
    // The mirror moved on (the toast's diff, as a rule; whether or not the toast is still there).
    await page.waitForFunction((seq) => window.__vestibule.seq() > seq, before, { timeout: 10_000 });
    connections = await page.evaluate(() => window.__vestibule.stats().connections);
    await context.setOffline(true);
    await page.waitForFunction(() => window.__vestibule.online() === false, null, { timeout: 10_000 });
    offlineSeq = await page.evaluate(() => window.__vestibule.seq());
    const stillShown = await page.evaluate((m) => window.__vestibule.state().toasts.order.some((id) => window.__vestibule.state().toasts.items[id]?.message === m), message);
    if (stillShown) {
      await toast.waitFor({ timeout: 10_000 });
      break;
    }
    assert.ok(attempt < 5, `the toast's timer (${durationMs} ms) ran out before the page went offline, ${attempt} times`);
    await context.setOffline(false);
    await page.waitForFunction(() => window.__vestibule.online() === true, null, { timeout: 10_000 });
    await page.waitForFunction((c) => window.__vestibule.stats().connections > c, connections, { timeout: 10_000 });
    durationMs *= 2;
  }
  // The server's timer dismisses the toast while the page cannot hear it.
  await until(async () => (await serverState(session)).state.toasts.order.length === 0, "the server to dismiss the toast", durationMs + 10_000);
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

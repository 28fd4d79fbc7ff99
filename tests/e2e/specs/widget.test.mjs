// More of the widget in Chromium: closing during a connect, the toast queue, a refused origin and
// the embeddable script. Screenshots of the views are taken by screenshots.test.mjs.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { devWalletPage, injectDevWallet, launch, ROOT, startGateway, verifyAllSessions, waitForDevWallet } from "./support.mjs";

let gateway;
let browser;
// The built client plus the host pages the tests write.
let staticDir;
let hostPages = 0;

before(async () => {
  // `demo` allows this gateway's own pages; `locked` only an origin no test page has.
  staticDir = mkdtempSync(join(tmpdir(), "vestibule-e2e-static-"));
  cpSync(join(ROOT, "client/dist"), staticDir, { recursive: true });
  gateway = await startGateway(
    `[[projects]]\nid = "demo"\nallowed_origins = ["http://127.0.0.1:*"]\n\n[[projects]]\nid = "locked"\nallowed_origins = ["https://only.example"]\n`,
    { staticDir },
  );
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await gateway?.stop();
  verifyAllSessions(gateway.data);
});

test("closing the modal during a connect rejects it with Modal closed and returns to Connect", async () => {
  const { context, page } = await devWalletPage(browser);
  await page.goto(gateway.url);
  await waitForDevWallet(page);
  await page.evaluate(() => (window.__devWallet.holdPrompts = true));
  await page.getByTestId("connect").click();
  await page.getByRole("button", { name: "Connect Dev Wallet" }).click();
  await page.getByRole("dialog").getByText("Continue in Dev Wallet").waitFor({ timeout: 10_000 });
  await page.getByRole("button", { name: "Close" }).click();
  await page.getByTestId("error").filter({ hasText: "Modal closed" }).waitFor({ timeout: 10_000 });
  assert.equal(await page.getByTestId("status").textContent(), "disconnected");
  await page.getByTestId("connect").click();
  await page.getByRole("dialog").getByText("Connect wallet").waitFor();
  await context.close();
});

test("four toasts: three show at once, and they dismiss themselves after 4 s", async () => {
  const { context, page } = await devWalletPage(browser);
  await page.goto(gateway.url);
  await page.waitForFunction(() => window.__vestibule?.state()?.started === true, null, { timeout: 10_000 });
  await page.evaluate(() => {
    for (const n of [1, 2, 3, 4]) window.__vestibule.send({ type: "ShowToast", message: `Toast ${n}`, variant: n === 4 ? "error" : "success" });
  });
  const toasts = page.getByRole("status");
  await page.waitForFunction(() => document.querySelectorAll('[data-vestibule-toasts] [role="status"]').length === 3, null, { timeout: 10_000 });
  assert.equal(await toasts.count(), 3, "at most three visible");
  // Each shown toast's deadline, set by the server when it showed, is 4 s after it was created
  // (no wall clock in the assertion: the session's own times).
  const deadlines = await page.evaluate(() => {
    const { order, items } = window.__vestibule.state().toasts;
    return order.map((id) => items[id]).filter((t) => t.visible).map((t) => t.deadlineMs - t.createdMs);
  });
  assert.deepEqual(deadlines, [4000, 4000, 4000]);
  // The first three expire; the fourth then shows (150 ms later) and expires 4 s after that.
  await page.getByRole("status").filter({ hasText: "Toast 4" }).waitFor({ timeout: 10_000 });
  await page.waitForFunction(() => document.querySelectorAll('[data-vestibule-toasts] [role="status"]').length === 0, null, { timeout: 10_000 });
  await context.close();
});

test("a toast swiped far enough is dismissed; a short slow drag is not", async () => {
  const { context, page } = await devWalletPage(browser);
  await page.goto(gateway.url);
  await page.waitForFunction(() => window.__vestibule?.state()?.started === true, null, { timeout: 10_000 });
  await page.evaluate(() => window.__vestibule.send({ type: "ShowToast", message: "Swipe me", variant: "success", persistent: true }));
  const toast = page.getByRole("status").filter({ hasText: "Swipe me" });
  await toast.waitFor({ timeout: 10_000 });
  const box = await toast.boundingBox();
  const y = box.y + box.height / 2;
  // 10 px over at least half a second: below 20 px and below 0.11 px/ms, so the server keeps it.
  // (The pause makes the gesture slow; it is input, not something the test waits on.)
  await page.evaluate(() => {
    window.__results = [];
    window.__vestibule.transport.on("result", ({ result }) => window.__results.push(result));
  });
  await page.mouse.move(box.x + 20, y);
  await page.mouse.down();
  await page.waitForTimeout(500);
  await page.mouse.move(box.x + 30, y);
  await page.mouse.up();
  // The server's answer to the swipe: refused as below the thresholds; the toast is still there.
  await page.waitForFunction(() => window.__results.some((r) => r.error?.code === "swipe_below_threshold"), null, { timeout: 10_000 });
  assert.equal(await toast.count(), 1, "a short slow drag does not dismiss");
  // 80 px at once: dismissed.
  await page.mouse.move(box.x + 20, y);
  await page.mouse.down();
  await page.mouse.move(box.x + 100, y);
  await page.mouse.up();
  await toast.waitFor({ state: "detached", timeout: 10_000 });
  await context.close();
});

test("a refused origin or project shows the configuration alert", async () => {
  const { context, page } = await devWalletPage(browser);
  await page.goto(`${gateway.url}/?projectId=locked`);
  await page.getByRole("alertdialog", { name: "Invalid App Configuration" }).waitFor({ timeout: 10_000 });
  await page.goto(`${gateway.url}/?projectId=nope`);
  await page.getByRole("alertdialog", { name: "Invalid Project ID" }).waitFor({ timeout: 10_000 });
  await context.close();
});

test("the embeddable script: a host page connects through Vestibule.create and its provider", async () => {
  // A page that knows nothing of the demo: the dev wallet is injected as an extension would be.
  const context = await browser.newContext();
  await injectDevWallet(context);
  const page = await context.newPage();
  await page.goto(`${gateway.url}/embed-example.html`);
  await page.waitForFunction(() => typeof window.Vestibule?.create === "function");
  await page.getByRole("button", { name: "Connect" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByRole("button", { name: "Connect Dev Wallet" }).click({ timeout: 10_000 });
  assert.equal(await page.evaluate(() => document.body.lastElementChild?.hasAttribute("data-vestibule")), true, "appended at the end of body");
  const address = await page.evaluate(() => window.__devWallet.address);
  // eth_requestAccounts resolved with the account the session connected.
  await page.locator("#accounts").filter({ hasText: address }).waitFor({ timeout: 10_000 });
  assert.deepEqual(await page.evaluate(() => vestibule.provider.request({ method: "eth_accounts" })), [address]);
  // The script's Solana provider is there too (this session has no Solana network: no account).
  assert.deepEqual(await page.evaluate(() => [vestibule.solana.address, vestibule.solana.chain, typeof vestibule.solana.signAndSendTransaction]), [null, null, "function"]);
  await page.evaluate(() => vestibule.solana.signMessage(new Uint8Array(1)).catch((e) => (window.__solanaError = e.code)));
  assert.equal(await page.evaluate(() => window.__solanaError), 4900);
  await context.close();
});

test("a click on Connect while the socket is still opening is not lost", async () => {
  const { context, page } = await devWalletPage(browser);
  // Hold the WebSocket, as a slow network would, until the visitor has clicked (a fixed delay
  // could run out before the click on a busy machine, and the test would prove nothing).
  let releaseSocket;
  const socketHeld = new Promise((r) => (releaseSocket = r));
  await page.routeWebSocket(/\/ws\?/, async (ws) => {
    await socketHeld;
    ws.connectToServer();
  });
  await page.goto(gateway.url);
  await page.getByTestId("connect").click();
  assert.equal(await page.evaluate(() => window.__vestibule?.state() ?? null), null, "no session yet when the visitor clicked");
  releaseSocket();
  await page.getByRole("button", { name: "Connect Dev Wallet" }).waitFor({ timeout: 10_000 });
  await context.close();
});

/** A host page served by the gateway (its own origin) that loads the real /vestibule.js and runs `script`. */
async function hostPage(script) {
  const name = `host-${hostPages++}.html`;
  writeFileSync(join(staticDir, name), `<!doctype html><html><body><h1>Host</h1><div id="slot"></div><script src="/vestibule.js"></script><script>${script}</script></body></html>`);
  const context = await browser.newContext();
  await injectDevWallet(context);
  const page = await context.newPage();
  const warnings = [];
  page.on("console", (m) => m.type() === "warning" && warnings.push(m.text()));
  await page.goto(`${gateway.url}/${name}`);
  return { context, page, warnings };
}

test("embedded mode draws the modal in the given element; enableAppend: false draws nothing until mount; unknown options are reported", async () => {
  const embedded = await hostPage(`
    window.states = [];
    window.v = Vestibule.create({ projectId: "demo", element: document.getElementById("slot"), themeMode: "light", debug: true, colour: "red" });
    window.v.subscribe((s) => window.states.push(s && s.modal.status));
  `);
  await embedded.page.evaluate(() => window.v.open());
  await embedded.page.locator("#slot").getByRole("dialog").getByText("Connect wallet").waitFor({ timeout: 10_000 });
  assert.equal(await embedded.page.locator("[data-vestibule]").count(), 0, "nothing appended to body in embedded mode");
  assert.ok((await embedded.page.evaluate(() => window.states)).includes("open"), "subscribe hears the state");
  assert.ok(embedded.warnings.some((w) => w.includes("colour")), `the unknown option is named: ${embedded.warnings}`);
  assert.equal(await embedded.page.evaluate(() => window.__vestibule.state().modal.status), "open", "debug: true exposes the debug handle");
  await embedded.context.close();

  const manual = await hostPage(`window.v = Vestibule.create({ projectId: "demo", enableAppend: false });`);
  assert.equal(await manual.page.evaluate(() => typeof window.__vestibule), "undefined", "no debug handle unless asked");
  await manual.page.waitForFunction(() => window.v.state()?.started === true, null, { timeout: 10_000 });
  await manual.page.evaluate(() => window.v.open());
  await manual.page.waitForFunction(() => window.v.state()?.modal.status === "open", null, { timeout: 10_000 });
  assert.equal(await manual.page.getByRole("dialog").count(), 0, "not drawn before mount");
  await manual.page.evaluate(() => window.v.mount(document.getElementById("slot")));
  await manual.page.locator("#slot").getByRole("dialog").waitFor({ timeout: 10_000 });
  await manual.context.close();
});

test("keyboard and pointer: the open modal takes focus, Tab stays inside, every control is labelled, Escape closes and gives focus back, Alt+T reaches the toasts, hover pauses a toast", async () => {
  const { context, page } = await devWalletPage(browser);
  await page.goto(`${gateway.url}/?email=on&socials=google,github`);
  const inDialog = () => page.evaluate(() => !!document.activeElement?.closest('[role="dialog"]'));
  await page.getByTestId("connect").click();
  await page.getByRole("button", { name: "Connect Dev Wallet" }).waitFor({ timeout: 10_000 });
  await page.waitForFunction(() => !!document.activeElement?.closest('[role="dialog"]'), null, { timeout: 5_000 });
  for (let i = 0; i < 12; i++) {
    await page.keyboard.press(i % 3 === 2 ? "Shift+Tab" : "Tab");
    assert.ok(await inDialog(), `focus stays in the modal (step ${i})`);
  }
  const unlabelled = await page.evaluate(() =>
    Array.from(document.querySelectorAll('[role="dialog"] button, [role="dialog"] input'))
      .filter((c) => !(c.getAttribute("aria-label") || c.textContent.trim() || c.labels?.length))
      .map((c) => c.outerHTML),
  );
  assert.deepEqual(unlabelled, [], "every control has a name");
  await page.keyboard.press("Escape");
  await page.getByRole("dialog").waitFor({ state: "detached", timeout: 10_000 });
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("data-testid")), "connect", "focus returns to the opener");

  // Longer than the hover's own bound (10 s): the toast cannot close before the hover reaches the
  // server, however slow the machine (the time it had left is then kept, and runs after unhovering).
  const HOVER_ME_MS = 15_000;
  await page.evaluate((durationMs) => window.__vestibule.send({ type: "ShowToast", message: "Hover me", variant: "success", durationMs }), HOVER_ME_MS);
  const toast = page.getByRole("status").filter({ hasText: "Hover me" });
  await toast.hover({ timeout: 10_000 });
  // Hovered: the server pauses the timers; the toast keeps the time it had left and no deadline.
  await page.waitForFunction(() => window.__vestibule.state().toasts.timers === "paused", null, { timeout: 10_000 });
  const paused = await page.evaluate(() => Object.values(window.__vestibule.state().toasts.items).find((t) => t.message === "Hover me"));
  assert.equal(paused.deadlineMs, null, "no deadline while hovered");
  assert.ok(paused.remainingMs > 0 && paused.remainingMs <= HOVER_ME_MS, `time left kept: ${paused.remainingMs}`);
  assert.equal(await toast.count(), 1);
  // Unhovered, the timer runs again (for the time that was left) and the toast goes.
  await page.mouse.move(5, 5);
  await toast.waitFor({ state: "detached", timeout: paused.remainingMs + 10_000 });

  await page.evaluate(() => window.__vestibule.send({ type: "ShowToast", message: "Reach me", variant: "loading", persistent: true }));
  await page.getByRole("status").filter({ hasText: "Reach me" }).waitFor({ timeout: 10_000 });
  await page.keyboard.press("Alt+T");
  assert.equal(await page.evaluate(() => document.activeElement?.hasAttribute("data-vestibule-toasts")), true, "Alt+T focused the toasts");
  await context.close();
});

test("the chrome's numbers: modal 360 px at z-index 999, transitions 150 / 120 / 150 ms, toasts 356 px wide with a 14 px gap", async () => {
  const { context, page } = await devWalletPage(browser);
  await page.goto(gateway.url);
  await page.getByTestId("connect").click();
  const dialog = page.getByRole("dialog");
  await dialog.getByRole("button", { name: "Connect Dev Wallet" }).waitFor({ timeout: 10_000 });
  const chrome = await page.evaluate(() => {
    const dialog = document.querySelector('[role="dialog"]');
    const title = dialog.querySelector("header h2");
    const heightBox = dialog.querySelector("header").nextElementSibling;
    const view = heightBox.firstElementChild.firstElementChild;
    return {
      width: dialog.getBoundingClientRect().width,
      zIndex: getComputedStyle(dialog.parentElement).zIndex,
      header: getComputedStyle(title).animationDuration,
      view: getComputedStyle(view).animationDuration,
      height: getComputedStyle(heightBox).transition,
    };
  });
  assert.deepEqual(chrome, { width: 360, zIndex: "999", header: "0.12s", view: "0.15s", height: "height 0.15s ease-out" });

  await page.getByRole("button", { name: "Close" }).click();
  await page.evaluate(() => {
    for (const n of [1, 2]) window.__vestibule.send({ type: "ShowToast", message: `Measure ${n}`, variant: "success", persistent: true });
  });
  await page.waitForFunction(() => document.querySelectorAll('[data-vestibule-toasts] [role="status"]').length === 2, null, { timeout: 10_000 });
  // Measured once their entrance animations have finished.
  await page.waitForFunction(() => Array.from(document.querySelectorAll('[data-vestibule-toasts] [role="status"]')).every((e) => e.getAnimations().every((a) => a.playState === "finished")), null, { timeout: 10_000 });
  const toasts = await page.evaluate(() => {
    const [a, b] = Array.from(document.querySelectorAll('[data-vestibule-toasts] [role="status"]'), (e) => e.getBoundingClientRect());
    return { width: a.width, gap: b.top - a.bottom, right: innerWidth - a.right, bottom: innerHeight - b.bottom };
  });
  assert.deepEqual({ width: toasts.width, gap: toasts.gap }, { width: 356, gap: 14 });
  assert.ok(toasts.right < 40 && toasts.bottom < 40, `bottom-right: ${JSON.stringify(toasts)}`);
  await context.close();
});

test("the host's wallet options: an excluded wallet is not offered, a featured one shows under Featured", async () => {
  const groups = (page) => page.evaluate(() => Array.from(document.querySelectorAll("[data-connector-group]"), (e) => e.getAttribute("data-connector-group")));
  const excluded = await hostPage(`window.v = Vestibule.create({ projectId: "demo", excludeWalletIds: ["dev.vestibule.wallet"] });`);
  await excluded.page.waitForFunction(() => window.v.state()?.connection.connectors.length > 0, null, { timeout: 10_000 });
  await excluded.page.evaluate(() => window.v.open());
  await excluded.page.getByText("No wallet found in this browser.").waitFor({ timeout: 10_000 });
  assert.deepEqual(await groups(excluded.page), []);
  await excluded.context.close();

  const featured = await hostPage(`window.v = Vestibule.create({ projectId: "demo", featuredWalletIds: ["dev.vestibule.wallet"] });`);
  await featured.page.evaluate(() => window.v.open());
  await featured.page.getByRole("group", { name: "Featured" }).getByRole("button", { name: "Connect Dev Wallet" }).waitFor({ timeout: 10_000 });
  assert.deepEqual(await groups(featured.page), ["featured"]);
  await featured.context.close();
});

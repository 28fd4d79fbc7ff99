// The embeddable script in Chromium: the loader opens the socket at once and loads only the core
// chunk, the modal chunk on first need (or when idle), a part only when its feature is enabled and
// drawn; the widget's lifecycle (destroy, StrictMode, two widgets on a page); every theme variable
// of the contract changes what is drawn (computed styles).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { devWalletPage, injectDevWallet, launch, ROOT, startGateway, verifyAllSessions } from "./support.mjs";

let gateway;
let browser;
let staticDir;
let pages = 0;

before(async () => {
  staticDir = mkdtempSync(join(tmpdir(), "vestibule-e2e-embed-"));
  cpSync(join(ROOT, "client/dist"), staticDir, { recursive: true });
  gateway = await startGateway(
    `[[projects]]\nid = "demo"\nallowed_origins = ["http://127.0.0.1:*"]\n\n[[projects]]\nid = "second"\nallowed_origins = ["http://127.0.0.1:*"]\n`,
    { staticDir },
  );
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await gateway?.stop();
  assert.ok(verifyAllSessions(gateway.data) >= 1);
});

/** A host page served by the gateway that loads /vestibule.js and runs `script`; records what the
 * page fetched and its WebSockets, in the order they happened. */
async function hostPage(script, { body = "", head = "" } = {}) {
  const name = `embed-host-${pages++}.html`;
  writeFileSync(join(staticDir, name), `<!doctype html><html lang="en"><head><title>Host</title>${head}</head><body><main><h1>Host</h1>${body}</main><script src="/vestibule.js"></script><script>${script}</script></body></html>`);
  const context = await browser.newContext();
  await injectDevWallet(context);
  const page = await context.newPage();
  const log = [];
  const sockets = [];
  page.on("request", (r) => log.push(`request ${new URL(r.url()).pathname}`));
  page.on("requestfinished", (r) => log.push(`finished ${new URL(r.url()).pathname}`));
  page.on("websocket", (ws) => {
    log.push("websocket");
    sockets.push(ws);
  });
  await page.goto(`${gateway.url}/${name}`);
  return { context, page, log, sockets };
}

const chunk = (log, name) => log.some((l) => new RegExp(`^request /vestibule/${name}-[\\w-]+\\.js$`).test(l));

test("the loader opens the socket at once and loads the core chunk; the modal chunk loads on the first open, a part only when enabled and drawn", async () => {
  const { context, page, log, sockets } = await hostPage(`window.v = Vestibule.create({ projectId: "demo", preloadModal: "open" });`);
  await page.evaluate(() => window.v.ready);
  await page.waitForFunction(() => window.v.state()?.started === true, null, { timeout: 10_000 });
  assert.equal(sockets.length, 1, "one socket");
  const coreFinished = log.findIndex((l) => /^finished \/vestibule\/core-/.test(l));
  assert.ok(coreFinished > 0, `the core chunk loaded: ${log.join(", ")}`);
  assert.ok(log.indexOf("websocket") < coreFinished, `the socket opened before the core chunk arrived: ${log.join(", ")}`);
  assert.equal(chunk(log, "modal"), false, "no modal chunk before anything is drawn");
  // The first open loads it (the positive probe for the check above) and draws Connect.
  await page.evaluate(() => window.v.open());
  await page.getByRole("dialog").getByRole("button", { name: "Connect Dev Wallet" }).waitFor({ timeout: 10_000 });
  assert.equal(chunk(log, "modal"), true, "the modal chunk loaded on the first open");
  assert.equal(chunk(log, "EmailLogin"), false, "email is off: its part is not loaded");
  assert.equal(chunk(log, "SocialLogin"), false, "socials are off: their part is not loaded");
  await context.close();

  const enabled = await hostPage(`window.v = Vestibule.create({ projectId: "demo", preloadModal: "open", features: { email: true, socials: ["google"] } });`);
  await enabled.page.evaluate(() => window.v.ready);
  await enabled.page.waitForFunction(() => window.v.state()?.started === true, null, { timeout: 10_000 });
  assert.equal(chunk(enabled.log, "EmailLogin"), false, "enabled but not drawn yet: not loaded");
  await enabled.page.evaluate(() => window.v.open());
  await enabled.page.getByRole("button", { name: "Continue with Google" }).waitFor({ timeout: 10_000 });
  assert.equal(chunk(enabled.log, "EmailLogin"), true);
  assert.equal(chunk(enabled.log, "SocialLogin"), true);
  await enabled.context.close();
});

test("a page that gives no project id gets the Project ID Not Configured alert", async () => {
  const { context, page } = await hostPage(`window.v = Vestibule.create({});`);
  await page.getByRole("alertdialog", { name: "Project ID Not Configured" }).waitFor({ timeout: 10_000 });
  await context.close();
});

test("by default the modal chunk loads when the page is idle, before any open", async () => {
  const { context, page, log } = await hostPage(`window.v = Vestibule.create({ projectId: "demo" });`);
  // The chunk arrived (from the page's log: it may have been fetched before this line runs)...
  const modalFinished = (l) => /^finished \/vestibule\/modal-[\w-]+\.js$/.test(l);
  const end = Date.now() + 15_000;
  while (!log.some(modalFinished)) {
    assert.ok(Date.now() < end, `the modal chunk loaded while the page was idle: ${log.join(", ")}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  // ...and ran: its React root is drawn in the widget's element, for a started session (the drawing
  // would hold the dialog now if the modal were open).
  await page.waitForFunction(() => window.v.state()?.started === true && document.querySelector("[data-vestibule] [data-vestibule-root]") !== null, null, {
    timeout: 15_000,
  });
  assert.equal(await page.getByRole("dialog").count(), 0, "loaded, not opened");
  // The positive probe: an open draws the dialog at once from the chunk already there.
  await page.evaluate(() => window.v.open());
  await page.getByRole("dialog").getByRole("button", { name: "Connect Dev Wallet" }).waitFor({ timeout: 15_000 });
  assert.equal(log.filter((l) => /^request \/vestibule\/modal-[\w-]+\.js$/.test(l)).length, 1, "the chunk was fetched once, before the open");
  await context.close();
});

test("destroy() closes the socket and removes the drawing; a widget created afterwards is the only one that connects", async () => {
  const { context, page, sockets } = await hostPage(`window.v = Vestibule.create({ projectId: "demo", preloadModal: "open" });`);
  await page.waitForFunction(() => window.v.state()?.started === true, null, { timeout: 10_000 });
  await page.evaluate(() => window.v.open());
  await page.getByRole("dialog").waitFor({ timeout: 10_000 });
  await page.evaluate(() => window.v.destroy());
  await page.waitForFunction(() => document.querySelector("[data-vestibule]") === null, null, { timeout: 10_000 });
  await page.getByRole("dialog").waitFor({ state: "detached", timeout: 10_000 });
  if (!sockets[0].isClosed()) await sockets[0].waitForEvent("close", { timeout: 10_000 });
  assert.equal(sockets[0].isClosed(), true, "the socket closed");
  // Events that would wake a live transport do nothing now; a new widget opens exactly one socket.
  await page.evaluate(() => {
    dispatchEvent(new Event("online"));
    document.dispatchEvent(new Event("visibilitychange"));
    window.w = Vestibule.create({ projectId: "demo", preloadModal: "open" });
  });
  await page.waitForFunction(() => window.w.state()?.started === true, null, { timeout: 10_000 });
  assert.equal(sockets.length, 2, "the destroyed widget did not reconnect");
  await assert.rejects(page.evaluate(() => window.v.provider.request({ method: "eth_accounts" })), /destroyed/);
  await context.close();
});

test("two widgets on one page: their own sockets, sessions, dialogs and keyboard handling", async () => {
  const { context, page, sockets } = await hostPage(
    `window.a = Vestibule.create({ projectId: "demo", preloadModal: "open" });
     window.b = Vestibule.create({ projectId: "second", preloadModal: "open", themeMode: "light" });`,
  );
  await page.waitForFunction(() => window.a.state()?.started && window.b.state()?.started, null, { timeout: 10_000 });
  assert.equal(sockets.length, 2);
  assert.deepEqual(sockets.map((s) => new URL(s.url()).searchParams.get("projectId")).sort(), ["demo", "second"]);
  await page.evaluate(() => window.a.open());
  const dialog = page.getByRole("dialog");
  await dialog.getByRole("button", { name: "Connect Dev Wallet" }).waitFor({ timeout: 10_000 });
  assert.equal(await dialog.count(), 1, "only A's modal");
  assert.equal(await page.evaluate(() => window.b.state().modal.status), "closed");
  assert.equal(await dialog.evaluate((d) => d.closest("[data-vestibule-root]").getAttribute("data-theme")), "dark", "it is A's (dark)");
  // Escape closes A and only A; then B opens on its own.
  await page.keyboard.press("Escape");
  await page.waitForFunction(() => window.a.state().modal.status === "closed", null, { timeout: 10_000 });
  await page.evaluate(() => window.b.open());
  await page.waitForFunction(() => window.b.state().modal.status === "open", null, { timeout: 10_000 });
  await dialog.getByRole("button", { name: "Connect Dev Wallet" }).waitFor({ timeout: 10_000 });
  assert.equal(await dialog.evaluate((d) => d.closest("[data-vestibule-root]").getAttribute("data-theme")), "light", "now B's (light)");
  assert.equal(await page.evaluate(() => window.a.state().modal.status), "closed");
  // Both drew with unique ids (no fixed ids): every id in the document is unique.
  assert.equal(await page.evaluate(() => { const ids = Array.from(document.querySelectorAll("[id]"), (e) => e.id); return ids.length - new Set(ids).size; }), 0);
  await context.close();
});

test("the demo (React, StrictMode) opens exactly one WebSocket per page load", async () => {
  const { context, page } = await devWalletPage(browser);
  const sockets = [];
  page.on("websocket", (ws) => sockets.push(ws.url()));
  await page.goto(gateway.url);
  await page.waitForFunction(() => window.__vestibule?.state()?.started === true, null, { timeout: 10_000 });
  assert.equal(sockets.length, 1);
  // The positive probe: a reload is seen as a second socket.
  await page.reload();
  await page.waitForFunction(() => window.__vestibule?.state()?.started === true, null, { timeout: 10_000 });
  assert.equal(sockets.length, 2);
  await context.close();
});

test("every theme variable of the contract changes what is drawn", async () => {
  const computed = (page) =>
    page.evaluate(() => {
      const dialog = document.querySelector('[role="dialog"]');
      const primary = document.querySelector('[data-variant="primary"]');
      const probe = document.createElement("div");
      dialog.appendChild(probe);
      probe.style.background = "color-mix(in srgb, rgb(255, 0, 0) 50%, #141414)";
      const mixed = getComputedStyle(probe).backgroundColor;
      probe.remove();
      const s = getComputedStyle(dialog);
      return {
        accent: getComputedStyle(primary).backgroundColor,
        fontFamily: s.fontFamily,
        fontSize: s.fontSize,
        radius: s.borderTopLeftRadius,
        zIndex: getComputedStyle(dialog.parentElement).zIndex,
        background: s.backgroundColor,
        mixed,
      };
    });
  const open = async (themeVariables) => {
    const p = await hostPage(`window.v = Vestibule.create({ projectId: "demo", preloadModal: "open", features: { email: true }, themeVariables: ${JSON.stringify(themeVariables)} });`);
    await p.page.evaluate(() => window.v.open());
    await p.page.getByRole("button", { name: "Continue with email" }).waitFor({ timeout: 10_000 });
    return p;
  };
  const defaults = await open({});
  const base = await computed(defaults.page);
  await defaults.context.close();
  assert.deepEqual({ ...base, mixed: undefined }, { accent: "rgb(59, 91, 219)", fontFamily: base.fontFamily, fontSize: "14px", radius: "24px", zIndex: "999", background: "color(srgb 0.0784314 0.0784314 0.0784314)", mixed: undefined });

  const themed = await open({
    "--vst-accent": "rgb(1, 2, 3)",
    "--vst-font-family": "Courier New, monospace",
    "--vst-font-size-master": "12px",
    "--vst-border-radius-master": "6px",
    "--vst-z-index": "1234",
    "--vst-color-mix": "rgb(255, 0, 0)",
    "--vst-color-mix-strength": "50",
  });
  const t = await computed(themed.page);
  assert.equal(t.accent, "rgb(1, 2, 3)", "--vst-accent");
  assert.match(t.fontFamily, /Courier New/, "--vst-font-family");
  assert.equal(t.fontSize, "16.8px", "--vst-font-size-master (x 1.4)");
  assert.equal(t.radius, "36px", "--vst-border-radius-master (x 6)");
  assert.equal(t.zIndex, "1234", "--vst-z-index");
  assert.equal(t.background, t.mixed, "--vst-color-mix and --vst-color-mix-strength");
  assert.notEqual(t.background, base.background);
  await themed.context.close();
});

test("a host page whose CSP allows no inline style (style-src 'self') draws the modal as styled as any other page", async () => {
  const { context, page } = await hostPage(`window.v = Vestibule.create({ projectId: "demo", preloadModal: "open", features: { email: true } });`, {
    head: `<meta http-equiv="Content-Security-Policy" content="style-src 'self'">`,
    body: `<p id="probe">probe</p>`,
  });
  const violations = [];
  page.on("console", (m) => /Content Security Policy/i.test(m.text()) && violations.push(m.text()));
  // The fence: the page's policy is in force (a <style> of its own does not apply).
  await page.evaluate(() => {
    const own = document.createElement("style");
    own.textContent = "#probe { color: rgb(1, 2, 3); }";
    document.head.append(own);
  });
  assert.notEqual(await page.locator("#probe").evaluate((p) => getComputedStyle(p).color), "rgb(1, 2, 3)", "the page's CSP refuses inline style");
  assert.equal(violations.length, 1, `the page's own <style> was reported: ${violations.join(" | ")}`);
  await page.evaluate(() => window.v.open());
  await page.getByRole("button", { name: "Continue with email" }).waitFor({ timeout: 10_000 });
  // As "every theme variable of the contract" measures the default theme on a page without a policy.
  const drawn = await page.evaluate(() => {
    const dialog = document.querySelector('[role="dialog"]');
    const s = getComputedStyle(dialog);
    return {
      accent: getComputedStyle(document.querySelector('[data-variant="primary"]')).backgroundColor,
      fontSize: s.fontSize,
      radius: s.borderTopLeftRadius,
      position: getComputedStyle(dialog.parentElement).position,
      zIndex: getComputedStyle(dialog.parentElement).zIndex,
    };
  });
  assert.deepEqual(drawn, { accent: "rgb(59, 91, 219)", fontSize: "14px", radius: "24px", position: "fixed", zIndex: "999" });
  assert.equal(violations.length, 1, `nothing of the widget was refused: ${violations.join(" | ")}`);
  // Its sheets are the document's constructed ones, each once (a second open draws them again).
  await page.evaluate(() => (window.v.close(), window.v.open()));
  await page.getByRole("button", { name: "Continue with email" }).waitFor({ timeout: 10_000 });
  const sheets = await page.evaluate(() => document.adoptedStyleSheets.map((s) => s.cssRules[0]?.selectorText));
  assert.ok(sheets.includes('[data-vestibule-sheet="modal"]') && sheets.includes('[data-vestibule-sheet="theme"]'), sheets.join(", "));
  assert.equal(new Set(sheets).size, sheets.length, `each sheet once: ${sheets.join(", ")}`);
  await context.close();
});

// Measures the embeddable widget in Chromium on loopback (a script, not a test; figures go to
// docs/performance.md):
//   node tests/e2e/measure.mjs [runs]        (after ./scripts/test-client built client/dist)
// - loader bytes: what `<script src="/vestibule.js">` costs;
// - bytes until the Connect view is drawn (a page that opens the modal at once), as transferred
//   (the gateway serves files uncompressed) and as they would be with gzip -9;
// - first click to drawn: from the click's handler to the frame after the Connect view is in the
//   DOM, cold (new browser profile: nothing cached), warm (a reload: HTTP cache) and preloaded (the
//   default: the modal chunk was fetched when the page was idle). Median and p90 of `runs` (10).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { cpSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { injectDevWallet, launch, ROOT, startGateway } from "./specs/support.mjs";

const RUNS = Number(process.argv[2] ?? 10);
const staticDir = mkdtempSync(join(tmpdir(), "vestibule-measure-"));
cpSync(join(ROOT, "client/dist"), staticDir, { recursive: true });
const page = (name, preload, openAtLoad) =>
  writeFileSync(
    join(staticDir, name),
    `<!doctype html><html><body><button id="connect">Connect</button><script src="/vestibule.js"></script><script>
      window.v = Vestibule.create({ projectId: "demo", preloadModal: "${preload}" });
      ${openAtLoad ? "v.open();" : ""}
      document.getElementById("connect").onclick = () => { window.__clickAt = performance.now(); v.open(); };
    </script></body></html>`,
  );
page("m-open.html", "open", true);
page("m-cold.html", "open", false);
page("m-idle.html", "idle", false);

const gateway = await startGateway(`[[projects]]\nid = "demo"\nallowed_origins = ["http://127.0.0.1:*"]\n`, { staticDir });
const browser = await launch();
const gz = (path) => gzipSync(readFileSync(join(ROOT, "client/dist", path)), { level: 9 }).length;

/** Resolves with the time from the click to the frame after the Connect view appeared. */
async function clickToDrawn(p) {
  await p.evaluate(() => window.v.ready);
  await p.waitForFunction(() => window.v.state()?.started === true);
  await p.evaluate(() => {
    window.__drawn = new Promise((resolve) => {
        const seen = () => document.querySelector('[role="dialog"] [data-connect-method="wallet"]');
        const observer = new MutationObserver(() => {
          if (!seen()) return;
          observer.disconnect();
          requestAnimationFrame(() => resolve(performance.now()));
        });
        observer.observe(document.body, { childList: true, subtree: true });
    });
  });
  await p.click("#connect");
  return p.evaluate(async () => (await window.__drawn) - window.__clickAt);
}

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (f) => s[Math.min(s.length - 1, Math.floor(f * s.length))];
  return `median ${q(0.5).toFixed(1)} ms, p90 ${q(0.9).toFixed(1)} ms (n=${s.length})`;
};

// Bytes until Connect is drawn.
{
  const context = await browser.newContext();
  await injectDevWallet(context);
  const p = await context.newPage();
  const cdp = await context.newCDPSession(p);
  await cdp.send("Network.enable");
  const files = new Map();
  const urls = new Map();
  cdp.on("Network.responseReceived", (e) => urls.set(e.requestId, new URL(e.response.url).pathname));
  cdp.on("Network.loadingFinished", (e) => files.set(e.requestId, e.encodedDataLength));
  await p.goto(`${gateway.url}/m-open.html`);
  await p.getByRole("dialog").locator('[data-connect-method="wallet"]').waitFor();
  // What the page and the widget fetched (not the injected dev wallet, its data: icon or the favicon).
  const list = [...files].map(([id, bytes]) => [urls.get(id), bytes]).filter(([u]) => u?.startsWith("/") && !["/dev-wallet.js", "/favicon.ico"].includes(u));
  const scripts = list.filter(([u]) => u.endsWith(".js"));
  console.log("loader: vestibule.js", readFileSync(join(ROOT, "client/dist/vestibule.js")).length, "B,", gz("vestibule.js"), "B gzip -9");
  console.log("until Connect is drawn:");
  for (const [u, b] of list) console.log(`  ${u}  ${b} B transferred${u.endsWith(".js") ? `, ${gz(u.slice(1))} B gzip -9` : ""}`);
  console.log(`  total ${list.reduce((n, [, b]) => n + b, 0)} B transferred (headers included); scripts ${scripts.reduce((n, [u]) => n + gz(u.slice(1)), 0)} B gzip -9`);
  await context.close();
}

const cold = [];
const warm = [];
const preloaded = [];
for (let i = 0; i < RUNS; i++) {
  const context = await browser.newContext();
  await injectDevWallet(context);
  const p = await context.newPage();
  await p.goto(`${gateway.url}/m-cold.html`);
  cold.push(await clickToDrawn(p));
  await p.reload();
  warm.push(await clickToDrawn(p));
  await p.goto(`${gateway.url}/m-idle.html`);
  await p.waitForFunction(() => performance.getEntriesByType("resource").some((e) => /\/vestibule\/modal-/.test(e.name) && e.responseEnd > 0));
  preloaded.push(await clickToDrawn(p));
  await context.close();
}
console.log(`first click to Connect drawn, cold (nothing cached): ${stats(cold)}`);
console.log(`first click to Connect drawn, warm (reload, HTTP cache): ${stats(warm)}`);
console.log(`first click to Connect drawn, preloaded (modal chunk fetched when idle): ${stats(preloaded)}`);
await browser.close();
await gateway.stop();

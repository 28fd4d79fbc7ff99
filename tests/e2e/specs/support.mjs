// A real `vestibule serve` on a free loopback port with a fresh data directory, and Debian's
// Chromium (never a downloaded browser) driven by playwright-core.
import { spawn, spawnSync, execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

export const ROOT = resolve(import.meta.dirname, "../../..");
// Not a VESTIBULE_ variable: the gateway reads those as configuration, and it refuses unknown ones.
export const BIN = process.env.E2E_GATEWAY_BIN ?? join(ROOT, "target/debug/vestibule");

/** `staticDir`: the pages to serve at `/` (default: the built client); `args`: more `serve` arguments. */
export async function startGateway(configToml = "", { staticDir = join(ROOT, "client/dist"), args = [] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "vestibule-e2e-"));
  const data = join(dir, "data");
  mkdirSync(data, { recursive: true });
  const config = join(dir, "vestibule.toml");
  writeFileSync(config, configToml);
  const child = spawn(BIN, ["serve", "--listen", "127.0.0.1:0", "--data", data, "--config", config, "--static-dir", staticDir, ...args], {
    env: { ...process.env, VESTIBULE_LOG: "error" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const line = await new Promise((ok, fail) => {
    createInterface({ input: child.stdout }).once("line", ok);
    child.once("exit", (code) => fail(new Error(`vestibule exited with ${code}`)));
  });
  const url = String(line).replace("vestibule listening on ", "").trim();
  return {
    url,
    data,
    pid: child.pid,
    stop() {
      // A gateway that already ended (crashed) has no exit left to wait for.
      if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
      const exited = new Promise((ok) => child.once("exit", ok));
      child.kill("SIGTERM");
      return exited;
    },
  };
}

// Playwright gives every launch a fresh temporary profile (it refuses --user-data-dir here).
export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    headless: true,
  });
}

/** A page with the demo's dev wallet switched on (and rejecting, if asked). */
export async function devWalletPage(browser, { rejects = false } = {}) {
  const context = await browser.newContext();
  await context.addInitScript(
    ([rejects]) => {
      localStorage.setItem("vestibule:demo:devWallet", "on");
      localStorage.setItem("vestibule:demo:devWalletRejects", rejects ? "on" : "off");
    },
    [rejects],
  );
  return { context, page: await context.newPage() };
}

/** Waits until the demo page has installed its dev wallet as `window.__devWallet`. The demo does
 * that only once it has asked the gateway for `/devnet.json`, which can be after `page.goto`
 * resolves (at the load event) on a busy machine. */
export async function waitForDevWallet(page) {
  await page.waitForFunction(() => window.__devWallet !== undefined, null, { timeout: 10_000 });
}

/** Injects the dev wallet (`client/dist/dev-wallet.js`) into every page of `context`, as a wallet
 * extension would be: `config` is `{ key?, rpcUrl?, rejects? }`. */
export async function injectDevWallet(context, config = {}) {
  await context.addInitScript((c) => (window.__devWalletConfig = c), config);
  await context.addInitScript({ path: join(ROOT, "client/dist/dev-wallet.js") });
}

/** Injects the dev Solana wallet (`client/dist/dev-solana-wallet.js`) into every page of `context`,
 * registered through the Wallet Standard as an extension would be: `config` is
 * `{ key?, rpcUrl?, rejects?, chains? }` (key: hex ed25519 seed). */
export async function injectDevSolanaWallet(context, config = {}) {
  await context.addInitScript((c) => (window.__devSolanaWalletConfig = c), config);
  await context.addInitScript({ path: join(ROOT, "client/dist/dev-solana-wallet.js") });
}

/** Every session in the data directory replays with --verify (the gateway must be stopped). */
/** The session id and resume token the widget keeps in `page`'s storage (its keys name the
 * gateway's socket URL and the project: client/src/core/transport/transport.ts). */
export function storedCredentials(page) {
  return page.evaluate(() => {
    const kept = (suffix) => Object.entries(localStorage).find(([key]) => key.startsWith("vestibule:ws") && key.endsWith(suffix))?.[1] ?? null;
    return { sessionId: kept(":session"), resumeToken: kept(":token") };
  });
}

export function verifyAllSessions(data) {
  const list = execFileSync(BIN, ["sessions", "list", "--data", data, "--format", "json"], { encoding: "utf8" });
  const ids = list.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l).session);
  for (const id of ids) execFileSync(BIN, ["replay", "--data", data, id, "--verify"], { stdio: ["ignore", "ignore", "pipe"] });
  return ids.length;
}

const require = createRequire(import.meta.url);
const AXE = require.resolve("axe-core/axe.min.js");

/** axe-core (from npm, injected into the page) on `selector` (default: the whole page, so the
 * modal and the toasts are in): the violations of impact serious or critical, with their nodes. */
export async function seriousViolations(page, selector = "body") {
  if (!(await page.evaluate(() => typeof window.axe === "object"))) await page.addScriptTag({ path: AXE });
  const result = await page.evaluate(async (sel) => {
    const r = await window.axe.run(document.querySelector(sel), { resultTypes: ["violations"] });
    return { violations: r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")) })), passes: r.passes.length };
  }, selector);
  // A run that checked nothing proves nothing.
  if (result.passes === 0 && result.violations.length === 0) throw new Error(`axe checked nothing in ${selector}`);
  return result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
}

// The modal animates its height: a picture is taken once the box under the header has settled on
// its content's height (nothing cut off). Finite animations are finished and infinite ones
// (spinners) drawn at their start by `animations: "disabled"`.
const modalClippedPixels = () => {
  const box = document.querySelector('[role="dialog"] header')?.nextElementSibling;
  return box ? box.scrollHeight - box.clientHeight : 0;
};
const modalNotClipped = () => {
  const box = document.querySelector('[role="dialog"] header')?.nextElementSibling;
  return !box || box.scrollHeight - box.clientHeight === 0;
};

/**
 * Writes the page's picture to `path` once the modal's height has settled (waiting up to 10 s).
 * Answers how many pixels of the modal's content were still cut off (0 when settled), for the
 * caller to assert after its other checks.
 */
export async function settledScreenshot(page, path) {
  const settled = await page.waitForFunction(modalNotClipped, null, { timeout: 10_000 }).then(() => true, () => false);
  await page.screenshot({ path, animations: "disabled" });
  return settled ? 0 : await page.evaluate(modalClippedPixels);
}

/**
 * `startGateway` with the gateway's output kept: stdout and stderr are read whole and `output()`
 * answers everything it printed so far, for a test that must prove what the logs do not contain.
 * `log`: VESTIBULE_LOG (default "info", what an operator would run); `echo` (default: when the
 * environment sets E2E_ECHO_GATEWAY): stderr is also copied to this process's stderr. A gateway that exits before listening (e.g. a configuration it refuses)
 * rejects with its stderr in the message.
 */
export async function startGatewayLogged(configToml = "", { staticDir = join(ROOT, "client/dist"), args = [], log = "info", echo = Boolean(process.env.E2E_ECHO_GATEWAY) } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "vestibule-e2e-"));
  const data = join(dir, "data");
  mkdirSync(data, { recursive: true });
  const config = join(dir, "vestibule.toml");
  writeFileSync(config, configToml);
  const child = spawn(BIN, ["serve", "--listen", "127.0.0.1:0", "--data", data, "--config", config, "--static-dir", staticDir, ...args], {
    // The gateway reads VESTIBULE_* variables as configuration: the tests' own (the binary's path,
    // a dist override) must not reach it.
    env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VESTIBULE_"))), VESTIBULE_LOG: log },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const kill = () => {
    try {
      child.kill("SIGKILL");
    } catch {}
  };
  process.once("exit", kill);
  let out = "";
  let err = "";
  child.stderr.on("data", (d) => {
    err += d;
    if (echo) process.stderr.write(d);
  });
  const lines = createInterface({ input: child.stdout });
  const line = await new Promise((ok, fail) => {
    lines.once("line", ok);
    child.once("exit", (code) => setTimeout(() => fail(new Error(`vestibule exited with ${code} before listening: ${err.trim()}`)), 50));
  });
  out += `${line}\n`;
  lines.on("line", (l) => (out += `${l}\n`));
  const url = String(line).replace("vestibule listening on ", "").trim();
  return {
    url,
    data,
    config,
    pid: child.pid,
    /** Everything the gateway printed so far: `{ stdout, stderr }`. */
    output: () => ({ stdout: out, stderr: err }),
    stop() {
      process.removeListener("exit", kill);
      if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
      const exited = new Promise((ok) => child.once("exit", ok));
      child.kill("SIGTERM");
      return exited;
    },
  };
}

/** What the CLI prints of every session in `data` (the gateway must be stopped): the list, each
 * session's export (the event log as JSONL) and its replay (text and JSON with patches). For tests
 * that prove a secret never entered the log. */
export function sessionsAsPrinted(data) {
  const list = execFileSync(BIN, ["sessions", "list", "--data", data, "--format", "json"], { encoding: "utf8" });
  const ids = list.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l).session);
  // Both streams: what the CLI says on stderr ("exported 9 events", warnings) counts as printed too.
  const run = (args) => {
    const r = spawnSync(BIN, args, { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
    if (r.status !== 0) throw new Error(`vestibule ${args.join(" ")} exited with ${r.status}: ${r.stderr}`);
    return `${r.stdout}\n${r.stderr}`;
  };
  const parts = [list];
  for (const id of ids) {
    parts.push(run(["export", "--data", data, id]));
    parts.push(run(["replay", "--data", data, id]));
    parts.push(run(["replay", "--data", data, id, "--format", "json", "--patch"]));
  }
  return { ids, text: parts.join("\n") };
}

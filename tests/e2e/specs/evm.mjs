// The EVM account's world for the Chromium tests: the devnet (two real anvils, chain ids 31337 and
// 31338, the demo ERC-20 deployed on both and the dev wallet funded, by the same
// tests/peers/scripts/devnet-setup.mjs that `./scripts/run` uses), a real `vestibule serve` whose
// chain service is configured at both chains (the chain.toml the setup writes), and a host page
// served by that gateway that creates the widget with `Vestibule.create` on those networks, in
// Chromium with the dev wallet injected as an extension would be, holding the dev wallet's key.
//
//   const world = await startEvmWorld();           // in before()
//   const { page, wallet } = await world.open();   // a fresh context on the host page
//   await world.stop();                            // in after(): browser, gateway, then every anvil
//
// or, for a whole test file, `const world = evmWorldForFile(options, minSessions)`: the same world
// started in before() and stopped in after(), asserting that at least `minSessions` sessions
// replayed with --verify.
//
// Nothing here sleeps: every wait is on a condition (the page, the node), with generous bounds.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { after, before } from "node:test";
import { createRequire } from "node:module";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startAnvil, waitForReceipt } from "../../peers/anvil.mjs";
import { injectDevWallet, launch, ROOT, startGateway, verifyAllSessions } from "./support.mjs";

export const DEV_WALLET = JSON.parse(readFileSync(join(ROOT, "tests/peers/dev-wallet.json"), "utf8"));
export const CHAIN_A = 31337;
export const CHAIN_B = 31338;
/** A chain the session lists but the gateway's chain service does not serve. */
export const CHAIN_UNSERVED = 31339;
/** anvil's second development account: a receiver that is not the dev wallet. */
export const RECEIVER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
export const ETHER = 10n ** 18n;

const SETUP = join(ROOT, "tests/peers/scripts/devnet-setup.mjs");

let rpcId = 1;
/** A JSON-RPC call straight to a node (what the chain holds, read without the widget). */
export async function rpc(url, method, params = []) {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: rpcId++, method, params }) });
  const body = await response.json();
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

const word = (hex) => hex.toLowerCase().replace(/^0x/, "").padStart(64, "0");
/** `balanceOf(owner)` call data. */
export const balanceOfData = (owner) => `0x70a08231${word(owner)}`;
export async function tokenBalance(url, token, owner) {
  return BigInt(await rpc(url, "eth_call", [{ to: token, data: balanceOfData(owner) }, "latest"]));
}
export async function nativeBalance(url, owner) {
  return BigInt(await rpc(url, "eth_getBalance", [owner, "latest"]));
}
export { waitForReceipt };

/** The session's network definition for an anvil chain (custom: not in the catalogue). */
function networkOf(chainId, rpcUrl) {
  return { caipNetworkId: `eip155:${chainId}`, name: `Anvil ${chainId}`, nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: [rpcUrl], testnet: true };
}

/**
 * Starts the devnet, the gateway and Chromium. `activityPageSize`: the gateway's Activity page
 * size on both chains (default: the gateway's). `gatewayDevnet`: the gateway gets the devnet as
 * `./scripts/run` gives it (`--devnet devnet.json`) instead of a configuration file.
 * `genesisTimestamp`: every anvil's genesis time (seconds), so blocks are dated from it (the
 * screenshots' Activity shows the same day on every run). On a failure part way, what did start is stopped
 * before the error is thrown.
 */
export async function startEvmWorld({ activityPageSize, gatewayDevnet = false, genesisTimestamp } = {}) {
  const started = { anvils: [], gateway: null, browser: null };
  // If this process ends without after() having stopped them (an uncaught error, process.exit),
  // the nodes and the gateway go with it: no orphans either way.
  const orphans = () => {
    for (const p of [started.gateway, ...started.anvils]) {
      try {
        if (p?.pid) process.kill(p.pid, "SIGKILL");
      } catch {}
    }
  };
  process.once("exit", orphans);
  const stop = async () => {
    await started.browser?.close().catch(() => {});
    await started.gateway?.stop();
    for (const a of started.anvils) await a.stop();
    process.removeListener("exit", orphans);
  };
  try {
    const anvils = {};
    for (const id of [CHAIN_A, CHAIN_B, CHAIN_UNSERVED]) {
      anvils[id] = await startAnvil(id, { genesisTimestamp });
      started.anvils.push(anvils[id]);
    }
    // The devnet proper (the two served chains), set up as ./scripts/run does.
    const out = mkdtempSync(join(tmpdir(), "vestibule-e2e-devnet-"));
    execFileSync(process.execPath, [SETUP, out, `${CHAIN_A}=${anvils[CHAIN_A].url}`, `${CHAIN_B}=${anvils[CHAIN_B].url}`], { stdio: ["ignore", "inherit", "inherit"] });
    const devnet = JSON.parse(readFileSync(join(out, "devnet.json"), "utf8"));
    // The setup's chain.toml as it is, or (to page the Activity in small pages) the same networks
    // with an activity page size.
    const chainToml = activityPageSize
      ? Object.entries(devnet.networks)
          .map(
            ([key, n]) =>
              `[networks."${key}"]\nrpc_urls = ["${n.rpcUrl}"]\n` +
              `tokens = [{ address = "${n.token.address}", name = "${n.token.name}", symbol = "${n.token.symbol}", decimals = ${n.token.decimals} }]\n` +
              `activity = { source = "otterscan", page_size = ${activityPageSize} }\n`,
          )
          .join("\n")
      : readFileSync(join(out, "chain.toml"), "utf8");
    // The unserved chain funds the dev wallet too (it must have a reason to send there).
    await rpc(anvils[CHAIN_UNSERVED].url, "anvil_setBalance", [DEV_WALLET.address, `0x${(10n * ETHER).toString(16)}`]);

    // The built client plus the host page.
    const staticDir = mkdtempSync(join(tmpdir(), "vestibule-e2e-static-"));
    cpSync(join(ROOT, "client/dist"), staticDir, { recursive: true });
    const networks = [CHAIN_A, CHAIN_B, CHAIN_UNSERVED].map((id) => networkOf(id, anvils[id].url));
    writeFileSync(
      join(staticDir, "account-host.html"),
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Account host</title></head><body>
<h1>Host</h1><p>Accounts: <span id="accounts">none</span></p>
<script src="/vestibule.js"></script>
<script>
  const networks = ${JSON.stringify(networks)};
  const params = new URLSearchParams(location.search);
  const first = params.get("network") || "eip155:${CHAIN_A}";
  const theme = params.get("theme") ? { themeMode: params.get("theme") } : {};
  window.v = Vestibule.create({ projectId: "demo", networks, defaultNetwork: first, debug: true, ...theme });
</script></body></html>`,
    );
    // As ./scripts/run starts it (`--devnet devnet.json`: the networks from the file, which the
    // gateway also serves to the demo), or with the networks in its configuration file.
    started.gateway = gatewayDevnet
      ? await startGateway("", { staticDir, args: ["--devnet", join(out, "devnet.json")] })
      : await startGateway(chainToml, { staticDir });
    started.browser = await launch();
    const { gateway, browser } = started;

    return {
      gateway,
      browser,
      anvils,
      devnet,
      /** The demo token's address on `chainId`. */
      token: (chainId) => devnet.networks[`eip155:${chainId}`].token.address,
      url: (chainId) => anvils[chainId].url,
      /**
       * A fresh browser context on the host page with the dev wallet injected, on `chainId`.
       * `walletChains`: the chains the wallet knows at start (default: only `chainId`, so a switch
       * to another gets 4902 and then an add). `window.__walletCalls` records every method the
       * page asks the wallet, so a test can tell what reached it. `theme`: the host's `themeMode`
       * (`dark` or `light`; default: the widget's).
       */
      async open({ chainId = CHAIN_A, walletChains = [chainId], network, theme } = {}) {
        const context = await browser.newContext();
        const chains = Object.fromEntries(walletChains.map((id) => [id, anvils[id].url]));
        await injectDevWallet(context, { key: DEV_WALLET.privateKey, chains, chainId });
        await context.addInitScript(() => {
          window.__walletCalls = [];
          const wallet = window.__devWallet;
          const request = wallet.request.bind(wallet);
          wallet.request = (args) => {
            window.__walletCalls.push(args.method);
            return request(args);
          };
        });
        const page = await context.newPage();
        const errors = [];
        page.on("pageerror", (e) => errors.push(e));
        const query = new URLSearchParams({ ...(network ? { network } : {}), ...(theme ? { theme } : {}) }).toString();
        await page.goto(`${gateway.url}/account-host.html${query ? `?${query}` : ""}`);
        await page.waitForFunction(() => window.v?.state()?.started === true, null, { timeout: 15_000 });
        return { context, page, errors };
      },
      /** Stops everything (browser, gateway, anvils) and replays every session with --verify. */
      async stop() {
        await stop();
        return verifyAllSessions(gateway.data);
      },
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** Connects the injected dev wallet through the modal and waits for the session to say connected. */
export async function connect(page) {
  await page.evaluate(() => window.v.open());
  await page.getByRole("dialog").getByRole("button", { name: "Connect Dev Wallet" }).click({ timeout: 15_000 });
  await page.waitForFunction(() => window.v.state()?.connection.namespaces.eip155?.status === "connected", null, { timeout: 15_000 });
  return page.evaluate(() => window.v.state().connection.namespaces.eip155.address);
}

/** Opens the modal on the Account view (the modal closes after a connect). */
export async function openAccount(page) {
  if ((await page.evaluate(() => window.v.state().modal.status)) !== "open") await page.evaluate(() => window.v.open());
  await page.getByRole("dialog").getByRole("region", { name: "Account" }).waitFor({ timeout: 15_000 });
  return page.getByRole("dialog");
}

/** Formats a raw amount the way the modal shows balances: floored to 3 decimals, no trailing zeros. */
export function display(raw, decimals = 18) {
  const unit = 10n ** BigInt(decimals);
  const whole = raw / unit;
  const milli = ((raw % unit) * 1000n) / unit;
  return milli === 0n ? whole.toString() : `${whole}.${milli.toString().padStart(3, "0").replace(/0+$/, "")}`;
}

const JSQR = createRequire(import.meta.url).resolve("jsqr/dist/jsQR.js");

/**
 * What the QR code `locator` shows says, read as a phone would: a screenshot of the element as
 * Chromium drew it, decoded by jsQR (npm) in the page. Null when no QR code is found in it.
 */
export async function readQrCode(page, locator) {
  const png = (await locator.screenshot()).toString("base64");
  if (!(await page.evaluate(() => typeof window.jsQR === "function"))) await page.addScriptTag({ path: JSQR });
  return page.evaluate(async (png) => {
    const image = new Image();
    image.src = `data:image/png;base64,${png}`;
    await image.decode();
    // A white margin around it, as on paper.
    const margin = 32;
    const canvas = document.createElement("canvas");
    canvas.width = image.width + 2 * margin;
    canvas.height = image.height + 2 * margin;
    const g = canvas.getContext("2d");
    g.fillStyle = "#fff";
    g.fillRect(0, 0, canvas.width, canvas.height);
    g.drawImage(image, margin, margin);
    const data = g.getImageData(0, 0, canvas.width, canvas.height);
    return window.jsQR(data.data, data.width, data.height, { inversionAttempts: "attemptBoth" })?.data ?? null;
  }, png);
}

/**
 * The file's world: started in before(), stopped in after() (every session replayed with
 * --verify, at least `minSessions` of them). Usable as the world itself once before() has run.
 */
export function evmWorldForFile(options = {}, minSessions = 2) {
  let world;
  before(async () => {
    world = await startEvmWorld(options);
  });
  after(async () => {
    if (!world) return;
    const sessions = await world.stop();
    assert.ok(sessions >= minSessions, `sessions replayed with --verify: ${sessions}`);
  });
  return new Proxy({}, {
    get(_, key) {
      if (!world) throw new Error(`the world is used before before() started it (${String(key)})`);
      const value = world[key];
      return typeof value === "function" ? value.bind(world) : value;
    },
  });
}

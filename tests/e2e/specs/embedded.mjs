// The embedded wallet's world for the Chromium tests (issue 15, docs/embedded-wallet.md): a real
// `vestibule serve` with `[embedded]` (the secure frame on its own loopback origin), `[smtp]` at a
// local SMTP sink (aiosmtpd, tests/peers/smtp.mjs) from which tests read the OTP, `[social.*]` at a
// local OIDC provider (oauth2-mock-server, tests/peers/oidc.mjs), and the chain service at anvil;
// a host page served by that gateway that creates the widget with email and socials enabled.
//
//   const world = embeddedWorldForFile({ sessions: 3 });   // before()/after() of the file
//   const { page } = await world.open();                   // a fresh context (a new device)
//   const { address } = await emailLogin(world, page, "alice@example.test");
//
// After the file: every session replays with --verify, and no OTP code read from the sink (nor the
// share and recovery keys) appears in the gateway's stdout/stderr, the event log as `vestibule
// export` prints it, or a replay.
//
// While the feature is missing, everything fails fast with what is missing (the gateway refusing
// `[embedded]`, no frame iframe, the old "Unable to load email login dependency"): no wait here is
// unbounded.
//
// Every selector and visible text the specs rely on is in `selectors` / `texts` below, so they can
// be matched to the views in one place.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { cpSync, existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { ANVIL_KEY_0, startAnvil, waitForReceipt } from "../../peers/anvil.mjs";
import { startOidcProvider } from "../../peers/oidc.mjs";
import { startFarcasterChain, startFarcasterRelay } from "../../peers/farcaster.mjs";
import { codeOf, freePort, startSmtpSink } from "../../peers/smtp.mjs";
import { launch, ROOT, sessionsAsPrinted, startGatewayLogged, verifyAllSessions } from "./support.mjs";

export { waitForReceipt, ANVIL_KEY_0 };

/** The built client (the host page's widget) and the built secure frame. Overridable to run the
 * specs from a worktree without its own build (e.g. against another checkout's dist). */
export const CLIENT_DIST = process.env.VESTIBULE_E2E_CLIENT_DIST ?? join(ROOT, "client/dist");
export const FRAME_DIST = process.env.VESTIBULE_E2E_FRAME_DIST ?? join(ROOT, "client/dist-frame");

export const CHAIN = 31337;
/** anvil's first development account (unlocked on anvil): funds the embedded address. */
export const FUNDER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
/** anvil's second development account: a receiver. */
export const RECEIVER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
export const ETHER = 10n ** 18n;
export const CLIENT_ID = "vestibule-test";

/** Bounds of every wait (ms). The frame's own load timeout is 20 s (spec §9). */
export const WAIT = { frame: 20_000, mail: 20_000, connect: 30_000, ui: 15_000, popup: 15_000 };

// ---------------------------------------------------------------------------------------------
// Selectors and texts: the one place to match them to the views.
// ---------------------------------------------------------------------------------------------
export const selectors = {
  dialog: (page) => page.getByRole("dialog"),
  /** Connect view: the email field and its submit button. */
  emailInput: (dialog) => dialog.getByRole("textbox", { name: /email/i }),
  emailSubmit: (dialog) => dialog.getByRole("button", { name: "Continue with email" }),
  /** VERIFY_OTP / VERIFY_DEVICE / the update-email OTP steps: the code field (a textbox named Code). */
  otpInput: (dialog) => dialog.getByRole("textbox", { name: /^code$/i }),
  /** True: the code is submitted with Enter after filling; false: the field submits itself at 6 digits. */
  otpSubmitWithEnter: true,
  /** The modal's Back button (to trigger a second email login from the same session). */
  back: (dialog) => dialog.getByRole("button", { name: "Back" }),
  /** Social buttons of the Connect view. */
  social: (dialog, name) => dialog.getByRole("button", { name: `Continue with ${name}` }),
  /** The Account view, and the button leading to UpdateEmailWallet in it. */
  account: (dialog) => dialog.getByRole("region", { name: "Account" }),
  accountAddress: (dialog) => dialog.getByTestId("account-address"),
  updateEmail: (dialog) => dialog.getByRole("button", { name: /update email|change email|edit email/i }),
  /** UpdateEmailWallet: the new address field and its submit button. */
  newEmailInput: (dialog) => dialog.getByRole("textbox", { name: /email/i }),
  newEmailSubmit: (dialog) => dialog.getByRole("button", { name: /^(save|update|continue)/i }),
  /** The secure frame's iframe in the host page (its src starts with the frame origin). */
  frameIframe: (page, frameOrigin) => page.locator(`iframe[src^="${frameOrigin}/"]`),
  /** Inside the frame, while a request waits: what is asked, Reject, and the button that opens the
   * approval window (client/src/frame/approvalWindow.ts). Nothing in the frame approves. */
  openApproval: (frame) => frame.getByRole("button", { name: "Approve in a new window" }),
  reject: (frameOrWindow) => frameOrWindow.getByRole("button", { name: "Reject" }),
  /** In the approval window (a page of its own on the frame origin: approvalPage.ts). */
  approve: (approvalWindow) => approvalWindow.getByRole("button", { name: "Approve" }),
  /** Toasts and inline messages anywhere in the host page. */
  message: (page, text) => page.getByText(text),
};

export const texts = {
  wrongOtp: "Invalid code",
  expiredOtp: /expired/i,
  cooldown: /Please try again after \d+ seconds?/,
  notAllowed: "Requested RPC call is not allowed",
  popupClosed: "Popup closed",
  /** What the widget said before issue 15 (decision 0400): seeing it means the feature is missing. */
  missing: ["Unable to load email login dependency", "Failed to initiate social connection"],
};

// ---------------------------------------------------------------------------------------------

let rpcId = 1;
/** A JSON-RPC call straight to a node. */
export async function rpc(url, method, params = []) {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: rpcId++, method, params }) });
  const body = await response.json();
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}
export const nativeBalance = async (url, owner) => BigInt(await rpc(url, "eth_getBalance", [owner, "latest"]));

/** The signer of an EIP-191 personal_sign `signature` over `messageHex`, recovered by the node
 * (web3_sha3 for the hash, the ecrecover precompile for the address): no client-side crypto. */
export async function recoverPersonalSign(url, messageHex, signature) {
  const msg = Buffer.from(messageHex.replace(/^0x/, ""), "hex");
  const prefixed = Buffer.concat([Buffer.from(`\x19Ethereum Signed Message:\n${msg.length}`), msg]);
  const hash = await rpc(url, "web3_sha3", [`0x${prefixed.toString("hex")}`]);
  const sig = signature.replace(/^0x/, "");
  assert.equal(sig.length, 130, `a 65-byte signature: ${signature}`);
  const r = sig.slice(0, 64);
  const s = sig.slice(64, 128);
  let v = parseInt(sig.slice(128, 130), 16);
  if (v < 27) v += 27;
  const input = `0x${hash.slice(2)}${v.toString(16).padStart(64, "0")}${r}${s}`;
  const out = await rpc(url, "eth_call", [{ to: "0x0000000000000000000000000000000000000001", data: input }, "latest"]);
  return `0x${out.slice(-40)}`;
}

/**
 * Where `[smtp]` and `[social.*]` sit: top-level tables (false, the layout the lead's brief gives)
 * or inside `[embedded]` as `[embedded.smtp]` / `[embedded.social.*]` (true, the layout of the
 * embedded crate's own EmbeddedConfig on branch emb-server). The one switch to flip if the merged
 * gateway reads the other.
 */
export const CONFIG_NESTED = true;

/** The gateway configuration of the feature (docs/embedded-wallet.md, the lead's brief). */
export function configToml({ framePort, keys, otpTtl, smtpPort, oidcUrl, anvilUrl, farcaster = null }) {
  const t = (name) => (CONFIG_NESTED ? `embedded.${name}` : name);
  return `[networks."eip155:${CHAIN}"]
rpc_urls = ["${anvilUrl}"]

[embedded]
frame_listen = "127.0.0.1:${framePort}"
frame_origin = "http://127.0.0.1:${framePort}"
frame_assets_dir = "${FRAME_DIST}"
share_key_file = "${keys.shareFile}"
recovery_key_file = "${keys.recoveryFile}"
otp_ttl = "${otpTtl}"

[${t("smtp")}]
host = "127.0.0.1"
port = ${smtpPort}
from = "Vestibule <login@vestibule.test>"
tls = "none"

[${t("social.google")}]
client_id = "${CLIENT_ID}"
client_secret = "test-secret"
authorization_endpoint = "${oidcUrl}/authorize"
token_endpoint = "${oidcUrl}/token"
jwks_uri = "${oidcUrl}/jwks"
issuer = "${oidcUrl}"
scopes = ["openid", "email", "profile"]

[${t("social.discord")}]
client_id = "${CLIENT_ID}"
client_secret = "test-secret"
authorization_endpoint = "${oidcUrl}/authorize"
token_endpoint = "${oidcUrl}/token"
userinfo_endpoint = "${oidcUrl}/discord/users/@me"
scopes = ["identify"]
${
  farcaster
    ? `
[embedded.farcaster]
relay_url = "${farcaster.relayUrl}"
rpc_url = "${farcaster.rpcUrl}"
id_registry = "${farcaster.idRegistry}"
`
    : ""
}`;
}

/** The host page: the widget on the anvil chain with email and socials on; `window.v` is the widget. */
function hostHtml(anvilUrl, socials = ["google", "discord"], extraOptions = "", extraNetworks = []) {
  const networks = [{ caipNetworkId: `eip155:${CHAIN}`, name: `Anvil ${CHAIN}`, nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: [anvilUrl], testnet: true }, ...extraNetworks];
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Embedded host</title></head><body>
<main><h1>Host</h1></main>
<script src="/vestibule.js"></script>
<script>
  window.v = Vestibule.create({ projectId: "demo", networks: ${JSON.stringify(networks)}, defaultNetwork: "eip155:${CHAIN}", debug: true,
    features: { email: true, socials: ${JSON.stringify(socials)} }${extraOptions} });
</script></body></html>`;
}

/** A page of another origin (the gateway reached as localhost, not 127.0.0.1) that posts the
 * messages in its fragment (JSON) to its parent and its opener with target "*", then titles
 * itself "posted". */
export const FOREIGN_HTML = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>foreign</title></head><body><script>
  const messages = JSON.parse(decodeURIComponent(location.hash.slice(1)) || "[]");
  for (const m of messages) { parent.postMessage(m, "*"); if (window.opener) window.opener.postMessage(m, "*"); }
  document.title = "posted";
</script></body></html>`;

/**
 * Starts the peers (SMTP sink, OIDC provider, anvil), a gateway and Chromium. What did start is
 * stopped before an error is thrown.
 */
export async function startEmbeddedWorld({ otpTtl = "10m", farcaster: withFarcaster = false } = {}) {
  const started = { sink: null, oidc: null, anvil: null, gateways: [], browser: null, relay: null, farcasterChain: null };
  const orphans = () => {
    for (const p of [...started.gateways, started.anvil, started.farcasterChain]) {
      try {
        if (p?.pid) process.kill(p.pid, "SIGKILL");
      } catch {}
    }
  };
  process.once("exit", orphans);
  const stopAll = async () => {
    await started.browser?.close().catch(() => {});
    for (const g of started.gateways) await g.stop();
    await started.anvil?.stop();
    await started.farcasterChain?.stop();
    await started.relay?.stop();
    await started.oidc?.stop();
    await started.sink?.stop();
    process.removeListener("exit", orphans);
  };
  try {
    started.sink = await startSmtpSink();
    started.oidc = await startOidcProvider({ clientId: CLIENT_ID });
    started.anvil = await startAnvil(CHAIN);
    const anvilUrl = started.anvil.url;
    // Sign In With Farcaster: the fake relay and chain 10 with the stub IdRegistry (tests/peers/farcaster.mjs).
    let farcaster = null;
    if (withFarcaster) {
      started.relay = await startFarcasterRelay();
      started.farcasterChain = await startFarcasterChain();
      farcaster = { relayUrl: started.relay.url, rpcUrl: started.farcasterChain.url, idRegistry: started.farcasterChain.idRegistry };
    }

    if (!existsSync(join(CLIENT_DIST, "vestibule.js"))) throw new Error(`the built client is missing (${CLIENT_DIST}/vestibule.js): run ./scripts/test-client`);
    const staticDir = mkdtempSync(join(tmpdir(), "vestibule-e2e-embedded-"));
    cpSync(CLIENT_DIST, staticDir, { recursive: true });
    writeFileSync(join(staticDir, "embedded-host.html"), hostHtml(anvilUrl, withFarcaster ? ["google", "farcaster", "discord"] : undefined));
    // The same host with sign-in required (SIWX through the embedded wallet).
    writeFileSync(join(staticDir, "embedded-host-siwx.html"), hostHtml(anvilUrl, undefined, ", siwx: { required: true, signOutOnDisconnect: false }"));
    // The same host with Ethereum (the catalogue's, no chain service) as a second network.
    writeFileSync(join(staticDir, "embedded-host-two-chains.html"), hostHtml(anvilUrl, undefined, "", ["eip155:1"]));
    writeFileSync(join(staticDir, "foreign.html"), FOREIGN_HTML);

    const keysDir = mkdtempSync(join(tmpdir(), "vestibule-e2e-keys-"));
    const keys = { shareFile: join(keysDir, "share.key"), recoveryFile: join(keysDir, "recovery.key"), share: randomBytes(32).toString("hex"), recovery: randomBytes(32).toString("hex") };
    writeFileSync(keys.shareFile, keys.share, { mode: 0o600 });
    writeFileSync(keys.recoveryFile, keys.recovery, { mode: 0o600 });

    /** Starts one more gateway on the same peers (e.g. with a short OTP lifetime). */
    const addGateway = async ({ otpTtl: ttl = otpTtl } = {}) => {
      const framePort = await freePort();
      const frameOrigin = `http://127.0.0.1:${framePort}`;
      const toml = configToml({ framePort, keys, otpTtl: ttl, smtpPort: started.sink.port, oidcUrl: started.oidc.url, anvilUrl, farcaster });
      let gateway;
      try {
        gateway = await startGatewayLogged(toml, { staticDir });
      } catch (e) {
        throw new Error(`the gateway did not start with the embedded wallet's configuration ([embedded], [smtp], [social.*]; issue 15's gateway part): ${e.message}`);
      }
      started.gateways.push(gateway);
      // The frame origin answers (its /loading page) within the frame's own load bound.
      const until = Date.now() + WAIT.frame;
      for (;;) {
        const status = await fetch(`${frameOrigin}/loading`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.status, (e) => e.cause?.code ?? String(e));
        if (status === 200) break;
        if (Date.now() > until) throw new Error(`the gateway does not serve the frame origin: GET ${frameOrigin}/loading gave ${status} for ${WAIT.frame / 1000} s`);
        await new Promise((ok) => setTimeout(ok, 100));
      }
      if (!existsSync(join(FRAME_DIST, "frame.html"))) throw new Error(`the built secure frame is missing (${FRAME_DIST}/frame.html; issue 15's client part builds it)`);
      return { ...gateway, frameOrigin, hostUrl: `${gateway.url}/embedded-host.html`, siwxHostUrl: `${gateway.url}/embedded-host-siwx.html`, twoChainsHostUrl: `${gateway.url}/embedded-host-two-chains.html`, foreignUrl: `${gateway.url.replace("127.0.0.1", "localhost")}/foreign.html` };
    };

    const gateway = await addGateway();
    started.browser = await launch();
    const browser = started.browser;

    return {
      sink: started.sink,
      oidc: started.oidc,
      anvil: started.anvil,
      anvilUrl,
      relay: started.relay,
      farcasterChain: started.farcasterChain,
      browser,
      gateway,
      keys,
      addGateway,
      /**
       * A fresh browser context (a new device: its own IndexedDB) on the host page of `gw`
       * (default: the first gateway), the widget started. `errors`: the page's uncaught errors.
       */
      async open({ gw = gateway, context, siwx = false, twoChains = false } = {}) {
        context ??= await browser.newContext();
        const page = await context.newPage();
        page.setDefaultTimeout(WAIT.ui);
        const errors = [];
        page.on("pageerror", (e) => errors.push(e));
        recordApiRefusals(page, gw);
        await page.goto(siwx ? gw.siwxHostUrl : twoChains ? gw.twoChainsHostUrl : gw.hostUrl);
        await page.waitForFunction(() => window.v?.state()?.started === true, null, { timeout: WAIT.ui });
        return { context, page, errors, gw };
      },
      /**
       * Stops everything; then every session of every gateway replays with --verify and no secret
       * (every OTP the sink delivered, the share and recovery keys) appears in any gateway's
       * output or in the event log and replays as the CLI prints them. Answers the number of
       * sessions verified.
       */
      async stop() {
        await stopAll();
        let sessions = 0;
        // Every code the sink delivered (read by a test or not).
        const secrets = [...new Set([...started.sink.codes, ...started.sink.messages().map((m) => codeOf(m.raw)).filter(Boolean)])];
        for (const g of started.gateways) {
          sessions += verifyAllSessions(g.data);
          // Colour codes stripped: "\x1b[0m123456" must read as the token 123456.
          const plain = (t) => t.replace(/\x1b\[[0-9;]*[A-Za-z]/g, "");
          const stdout = plain(g.output().stdout);
          const stderr = plain(g.output().stderr);
          const printed = plain(sessionsAsPrinted(g.data).text);
          for (const [where, text] of [["gateway stdout", stdout], ["gateway stderr", stderr], ["event log (export) or a replay", printed]]) {
            for (const code of secrets) assert.ok(!standalone(code).test(text), `the OTP ${code} appears in the ${where}`);
            for (const key of [keys.share, keys.recovery]) assert.ok(!text.toLowerCase().includes(key), `a share-encryption key appears in the ${where}`);
          }
        }
        return { sessions, secrets: secrets.length };
      },
    };
  } catch (e) {
    await stopAll();
    throw e;
  }
}

/** `code` as a token of its own (not inside a longer number, a hash or a timestamp). */
export const standalone = (code) => new RegExp(`(?<![0-9A-Za-z])${code}(?![0-9A-Za-z])`);

/**
 * The file's world: started in before(), stopped in after() (asserting at least `sessions`
 * sessions verified and at least one OTP checked for when `otps`). Usable once before() has run.
 */
export function embeddedWorldForFile({ sessions: minSessions = 1, otps = true, ...options } = {}) {
  let world;
  before(async () => {
    world = await startEmbeddedWorld(options);
  });
  after(async () => {
    if (!world) return;
    const { sessions, secrets } = await world.stop();
    assert.ok(sessions >= minSessions, `sessions replayed with --verify: ${sessions}`);
    if (otps) assert.ok(secrets >= 1, "the secrets check had OTP codes to look for");
  });
  return new Proxy(
    {},
    {
      get(_, key) {
        if (!world) throw new Error(`the world is used before before() started it (${String(key)})`);
        const value = world[key];
        return typeof value === "function" ? value.bind(world) : value;
      },
    },
  );
}

// ---------------------------------------------------------------------------------------------
// Steps
// ---------------------------------------------------------------------------------------------

/** Opens the modal when closed; answers the dialog locator. */
export async function openModal(page) {
  if ((await page.evaluate(() => window.v.state().modal.status)) !== "open") await page.evaluate(() => window.v.open());
  const dialog = selectors.dialog(page);
  await dialog.waitFor({ timeout: WAIT.ui });
  return dialog;
}

/**
 * Waits for `condition` (a locator becoming visible) or fails fast on the pre-issue-15 texts, or on
 * the bound with `what` named. Answers which came first.
 */
async function expectOrMissing(page, locator, what, timeout = WAIT.frame) {
  const missing = texts.missing.map((t) => selectors.message(page, t).first());
  const winner = await Promise.race([
    locator.waitFor({ state: "attached", timeout }).then(() => "ok", () => "timeout"),
    ...missing.map((m, i) => m.waitFor({ timeout }).then(() => texts.missing[i], () => new Promise(() => {}))),
  ]);
  if (winner === "timeout") throw new Error(`${what} within ${timeout / 1000} s`);
  if (winner !== "ok") throw new Error(`the widget still answers "${winner}" (the embedded wallet is not wired in): ${what}`);
}

/** The secure frame's iframe appears in the host page (fails fast and clearly while it does not). */
export async function waitForFrame(page, gw) {
  const iframe = selectors.frameIframe(page, gw.frameOrigin);
  await expectOrMissing(page, iframe, `no frame iframe (src starting with ${gw.frameOrigin}/) appeared`);
  return iframe;
}

/** The frame's content, for its approval page. */
export function frameOf(page, gw) {
  return page.frameLocator(`iframe[src^="${gw.frameOrigin}/"]`);
}

/** Types `code` into the code field (of the modal) and submits it. */
export async function submitCode(dialog, code) {
  const input = selectors.otpInput(dialog);
  await input.waitFor({ timeout: WAIT.ui });
  await input.fill(code);
  if (selectors.otpSubmitWithEnter) await input.press("Enter");
}

/** Submits `email` on the Connect view (the modal opened if closed); answers when it was sent. */
export async function submitEmail(page, gw, email) {
  const dialog = await openModal(page);
  const t0 = Date.now();
  await selectors.emailInput(dialog).fill(email);
  await selectors.emailSubmit(dialog).click();
  await waitForFrame(page, gw);
  await expectOrMissing(page, selectors.otpInput(dialog), `no code field (a textbox named Code) after submitting ${email}`, WAIT.mail);
  return { dialog, t0 };
}

/** The session's eip155 connection: `{ status, address }`. */
export const eip155 = (page) => page.evaluate(() => window.v.state()?.connection.namespaces.eip155 ?? null);

/** By page opened by `world.open`: its gateway, and the frame's API calls that gateway refused
 * (status ≥ 400). A failed login's message gives both, since the gateway does not log a refusal. */
const diagnostics = new WeakMap();

function recordApiRefusals(page, gw) {
  const refused = [];
  diagnostics.set(page, { gw, refused });
  page.on("response", (r) => {
    if (r.status() < 400 || !r.url().startsWith(`${gw.frameOrigin}/api/`)) return;
    r.text().then(
      (body) => refused.push(`${r.status()} ${new URL(r.url()).pathname}: ${body.slice(0, 300)}`),
      () => refused.push(`${r.status()} ${new URL(r.url()).pathname}`),
    );
  });
}

/** The last warnings and errors a logged gateway printed (colour codes stripped), for a failure's message. */
function gatewayWarnings(gw, last = 20) {
  const lines = (gw?.output?.().stderr ?? "").replace(/\x1b\[[0-9;]*[A-Za-z]/g, "").split("\n");
  return lines.filter((l) => /\b(WARN|ERROR)\b/.test(l)).slice(-last).join("\n");
}

/** Waits until the session says eip155 connected; answers the address. A failure also gives the
 * page's gateway's last warnings and errors, and the frame's API calls it refused. */
export async function waitConnected(page, what = "the session did not connect") {
  const ok = await page
    .waitForFunction(() => window.v.state()?.connection.namespaces.eip155?.status === "connected", null, { timeout: WAIT.connect })
    .then(() => true, () => false);
  if (!ok) {
    const known = diagnostics.get(page);
    const warnings = known ? `\nthe gateway's last warnings and errors:\n${gatewayWarnings(known.gw) || "(none)"}` : "";
    const refused = known ? `\nthe frame's API calls refused: ${JSON.stringify(known.refused)}` : "";
    throw new Error(`${what} within ${WAIT.connect / 1000} s (eip155: ${JSON.stringify(await eip155(page))})${warnings}${refused}`);
  }
  const { address } = await eip155(page);
  assert.match(address, /^0x[0-9a-fA-F]{40}$/);
  return address;
}

/**
 * A whole email login: the email submitted, the code read from the sink, typed, connected.
 * Answers `{ address, code }`.
 */
export async function emailLogin(world, page, email, { gw = world.gateway } = {}) {
  const { dialog, t0 } = await submitEmail(page, gw, email);
  const code = await world.sink.waitForCode(email, { after: t0, timeoutMs: WAIT.mail });
  await submitCode(dialog, code);
  const address = await waitConnected(page, `the email login of ${email} did not connect`);
  return { address, code };
}

/**
 * Clicks "Continue with {provider}" and answers the popup it opened (fails fast when none opens,
 * or when the widget answers with the pre-issue-15 error), with every URL it navigated to.
 */
export async function openSocialPopup(page, gw, provider) {
  const dialog = await openModal(page);
  // Every document the context's pages navigate to (the popup's /loading, the provider, the callback).
  const urls = [];
  page.context().on("request", (r) => {
    if (r.isNavigationRequest()) urls.push(r.url());
  });
  const popupOpened = page.waitForEvent("popup", { timeout: WAIT.popup });
  popupOpened.catch(() => {}); // handled in the race below; never an unhandled rejection
  await selectors.social(dialog, provider).click();
  const failed = selectors.message(page, texts.missing[1]).first();
  const popup = await Promise.race([
    popupOpened,
    failed.waitFor({ timeout: WAIT.popup }).then(
      () => Promise.reject(new Error(`the widget still answers "${texts.missing[1]}" (the embedded wallet is not wired in)`)),
      () => new Promise(() => {}),
    ),
  ]).catch((e) => {
    throw new Error(`no login popup after Continue with ${provider}: ${e.message}`);
  });
  await waitForFrame(page, gw);
  return { dialog, popup, urls };
}

/** Starts a request through the host page's EIP-1193 provider; the promise settles to `{ result }`
 * or `{ code, message }` (as host_provider.test.mjs does, but not awaited at once). */
export function hostRequest(page, method, params) {
  const answer = page.evaluate(
    ({ method, params }) =>
      window.v.provider.request({ method, params }).then(
        (result) => ({ result }),
        (e) => ({ code: e.code, message: e.message }),
      ),
    { method, params },
  );
  // A request a failed test left pending rejects when its page closes: never an unhandled rejection.
  answer.catch(() => {});
  return answer;
}

/** Clicks the frame's button that opens the approval window, once shown; gives the window's page
 * (a top-level page of the frame origin, loaded). */
export async function openApprovalWindow(page, gw) {
  const open = selectors.openApproval(frameOf(page, gw));
  const shown = await open.waitFor({ state: "visible", timeout: WAIT.ui }).then(() => true, () => false);
  if (!shown) throw new Error(`the frame showed no waiting request within ${WAIT.ui / 1000} s`);
  const [approvalWindow] = await Promise.all([page.context().waitForEvent("page", { timeout: WAIT.popup }), open.click()]);
  await approvalWindow.waitForLoadState("domcontentloaded");
  return approvalWindow;
}

/** Clicks `locator` in the approval window, whose answer closes the window: the click may see its page
 * go before it returns (that is no error), and the window must close. */
export async function clickThatCloses(approvalWindow, locator) {
  const closed = approvalWindow.waitForEvent("close", { timeout: WAIT.ui });
  await locator.click({ timeout: WAIT.ui }).catch((e) => {
    if (!approvalWindow.isClosed()) throw e;
  });
  await closed;
}

/** Answers the request waiting in the frame: selectors.approve in the approval window it opens (the
 * click waits for Approve to arm), or selectors.reject in the frame itself. */
export async function answerInFrame(page, gw, button) {
  const frame = frameOf(page, gw);
  if (button === selectors.approve) {
    const approvalWindow = await openApprovalWindow(page, gw);
    await clickThatCloses(approvalWindow, selectors.approve(approvalWindow));
  } else {
    const shown = await button(frame).waitFor({ state: "visible", timeout: WAIT.ui }).then(() => true, () => false);
    if (!shown) throw new Error(`the frame showed no waiting request within ${WAIT.ui / 1000} s`);
    await button(frame).click();
  }
  // The frame's page goes away once answered (so the next request's page is not this one's).
  const gone = await selectors.openApproval(frame).waitFor({ state: "hidden", timeout: WAIT.ui }).then(() => true, () => false);
  if (!gone) throw new Error(`the frame's waiting request stayed up ${WAIT.ui / 1000} s after the answer`);
}

/** A settled promise's value, or throws after `ms` naming `what` (a request that never settles). */
export async function within(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, fail) => (timer = setTimeout(() => fail(new Error(`${what}: no answer within ${ms / 1000} s`)), ms)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Until `Date.now()` passes `deadline` (polling the clock, never one long sleep). */
export async function untilClockPasses(deadline) {
  while (Date.now() <= deadline) await new Promise((ok) => setTimeout(ok, Math.min(200, Math.max(1, deadline - Date.now() + 1))));
}

/**
 * Until 31 s have passed since the last mail to `email` (polling the clock): a test that logs the
 * same address in again (a new device, an email change) is then outside the 30 s email cooldown
 * whether the session, the browser or the server keeps it.
 */
export async function afterCooldown(world, email) {
  const last = world.sink.messagesTo(email).at(-1);
  if (last) await untilClockPasses(last.mtimeMs + 31_000);
}

/** Funds `address` on anvil from the unlocked dev account (a real transfer, mined). */
export async function fund(world, address, amount = 10n * ETHER) {
  const hash = await rpc(world.anvilUrl, "eth_sendTransaction", [{ from: FUNDER, to: address, value: `0x${amount.toString(16)}` }]);
  assert.equal((await waitForReceipt(world.anvilUrl, hash)).status, "0x1");
}

// The embedded-wallet specs' own machinery, proven on what exists without the feature: the secrets
// check's matching (a code as a token, not inside a hash or a timestamp), the node-side signature
// recovery the signing spec relies on (against anvil's own personal_sign), the logged gateway (its
// output kept, the tests' VESTIBULE_* variables kept from it) and the CLI's printout of the event
// log, and a page of a foreign origin posting into the host page (what the social spec forges).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startAnvil } from "../../peers/anvil.mjs";
import { codeOf, startSmtpSink } from "../../peers/smtp.mjs";
import { CHAIN, CLIENT_DIST, configToml, FOREIGN_HTML, FUNDER, fund, nativeBalance, recoverPersonalSign, rpc, standalone } from "./embedded.mjs";
import { launch, sessionsAsPrinted, startGatewayLogged, verifyAllSessions } from "./support.mjs";

let anvil;
before(async () => {
  anvil = await startAnvil(CHAIN);
});
after(async () => {
  await anvil?.stop();
});

test("the secrets check finds a code as a token of its own, and not inside a hash, a timestamp or a longer number", () => {
  const code = "482913";
  for (const leak of [`"otp":"${code}"`, `otp=${code}`, `code ${code}.`, `otp_${code}`, `[${code}]`]) assert.ok(standalone(code).test(leak), leak);
  for (const noise of [`0xab${code}cd`, `1795${code}789`, `${code}7`, `x${code}`]) assert.ok(!standalone(code).test(noise), noise);
});

test("recoverPersonalSign gives the signer of an EIP-191 signature (anvil's own personal_sign), and not another", async () => {
  const message = `0x${Buffer.from("Vestibule harness").toString("hex")}`;
  const signature = await rpc(anvil.url, "personal_sign", [message, FUNDER]);
  assert.equal((await recoverPersonalSign(anvil.url, message, signature)).toLowerCase(), FUNDER.toLowerCase());
  const other = `0x${Buffer.from("something else").toString("hex")}`;
  assert.notEqual((await recoverPersonalSign(anvil.url, other, signature)).toLowerCase(), FUNDER.toLowerCase());
});

test("fund moves ether from anvil's dev account with a mined transfer", async () => {
  const to = "0x1111111111111111111111111111111111111111";
  const before = await nativeBalance(anvil.url, to);
  await fund({ anvilUrl: anvil.url }, to, 3n);
  assert.equal(await nativeBalance(anvil.url, to), before + 3n);
});

test("the configuration carries the frame origin, the key files, the OTP lifetime, the SMTP sink and the providers", () => {
  const keys = { shareFile: "/tmp/k/share.key", recoveryFile: "/tmp/k/recovery.key" };
  const toml = configToml({ framePort: 4000, keys, otpTtl: "3s", smtpPort: 2525, oidcUrl: "http://localhost:5000", anvilUrl: "http://127.0.0.1:8545" });
  for (const line of [
    'frame_listen = "127.0.0.1:4000"',
    'frame_origin = "http://127.0.0.1:4000"',
    'share_key_file = "/tmp/k/share.key"',
    'recovery_key_file = "/tmp/k/recovery.key"',
    'otp_ttl = "3s"',
    "port = 2525",
    'tls = "none"',
    'jwks_uri = "http://localhost:5000/jwks"',
    'userinfo_endpoint = "http://localhost:5000/discord/users/@me"',
  ]) {
    assert.ok(toml.includes(line), line);
  }
});

test("a fresh SMTP sink holds no message, and a mail body in the service's shape gives its code", async () => {
  const sink = await startSmtpSink();
  try {
    assert.deepEqual(sink.messages(), []);
    assert.equal(codeOf("Subject: x\n\nUse this code to sign in:\n\n123456\n\nThe code expires in 10 minutes.\n"), "123456");
  } finally {
    await sink.stop();
  }
});

test("a logged gateway keeps its output, is not configured by the tests' VESTIBULE_* variables, and its sessions print and verify; a foreign origin's page posts into the host page", async () => {
  const staticDir = mkdtempSync(join(tmpdir(), "vestibule-e2e-harness-"));
  cpSync(CLIENT_DIST, staticDir, { recursive: true });
  writeFileSync(join(staticDir, "foreign.html"), FOREIGN_HTML);
  writeFileSync(
    join(staticDir, "harness-host.html"),
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Harness host</title></head><body><script>window.got = []; addEventListener("message", (e) => got.push([e.origin, e.data]));</script>
<script src="/vestibule.js"></script><script>window.v = Vestibule.create({ projectId: "demo", debug: true });</script></body></html>`,
  );
  const saved = process.env.VESTIBULE_E2E_PROBE;
  process.env.VESTIBULE_E2E_PROBE = "1"; // would be an unknown configuration key if it reached the gateway
  const gateway = await startGatewayLogged("", { staticDir }).finally(() => {
    if (saved === undefined) delete process.env.VESTIBULE_E2E_PROBE;
    else process.env.VESTIBULE_E2E_PROBE = saved;
  });
  const browser = await launch();
  try {
    const page = await (await browser.newContext()).newPage();
    await page.goto(`${gateway.url}/harness-host.html`);
    await page.waitForFunction(() => window.v?.state()?.started === true, null, { timeout: 15_000 });
    const foreignUrl = `${gateway.url.replace("127.0.0.1", "localhost")}/foreign.html`;
    const messages = [{ type: "VESTIBULE_SOCIAL_RESULT", resultUri: "http://127.0.0.1:9/oauth/callback?code=forged" }];
    await page.evaluate(({ url, messages }) => {
      const f = document.createElement("iframe");
      f.src = `${url}#${encodeURIComponent(JSON.stringify(messages))}`;
      document.body.append(f);
    }, { url: foreignUrl, messages });
    await page.waitForFunction(() => window.got.length > 0, null, { timeout: 15_000 });
    const got = await page.evaluate(() => window.got);
    assert.equal(got[0][0], new URL(foreignUrl).origin);
    assert.notEqual(got[0][0], new URL(gateway.url).origin, "a different origin from the host page's");
    assert.deepEqual(got[0][1], messages[0]);
  } finally {
    await browser.close();
    await gateway.stop();
  }
  assert.match(gateway.output().stdout, /vestibule listening on/);
  assert.ok(verifyAllSessions(gateway.data) >= 1);
  const printed = sessionsAsPrinted(gateway.data);
  assert.ok(printed.ids.length >= 1);
  for (const id of printed.ids) assert.ok(printed.text.includes(id), "each session's log is printed");
});

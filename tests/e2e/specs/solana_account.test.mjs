// A Solana account's balances and sends in Chromium, on the demo dapp with the devnet as
// `./scripts/run` gives it to the gateway (`--devnet devnet.json`, written by the same
// tests/peers/scripts/devnet-setup.mjs): an anvil chain with the demo ERC-20 and the local Solana
// peer (LiteSVM, answering as Solana Devnet) with the dev Solana wallet funded in SOL and a demo SPL
// mint. Nothing is injected: `/?solana=devnet` makes the demo register its dev Solana wallet on the
// peer (and its dev EVM wallet on the anvil). Connect, see SOL and the SPL token as the peer holds
// them, send SOL and the SPL token (confirmed on the peer, back to Account with refreshed balances),
// the Send validation messages for a receiver that is not a Solana address, and one session holding
// the EVM and the Solana account, switching between them with each one's balances. Every session
// replays with --verify. Every wait is on a condition, with generous bounds.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startAnvil } from "../../peers/anvil.mjs";
import { SOLANA_DEV_KEY, startSolanaPeer } from "../../peers/solana.mjs";
import { randomKeypair } from "../../peers/solana/tx.mjs";
import { DEV_WALLET, display, nativeBalance, tokenBalance } from "./evm.mjs";
import { launch, ROOT, startGateway, verifyAllSessions } from "./support.mjs";

const DEVNET = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
const CHAIN = 31337;
const SETUP = join(ROOT, "tests/peers/scripts/devnet-setup.mjs");
const LAMPORTS = 1_000_000_000n;

let anvil;
let peer;
let gateway;
let browser;
let devnet;

before(async () => {
  anvil = await startAnvil(CHAIN);
  peer = await startSolanaPeer({ sol: 10, decimals: 6, tokens: 1000 });
  // The devnet as scripts/lib/devnet.sh sets it up: the peer's file, then the setup script.
  const out = mkdtempSync(join(tmpdir(), "vestibule-e2e-solana-devnet-"));
  const { rpc: _rpc, stop: _stop, pid: _pid, ...info } = peer;
  writeFileSync(join(out, "solana.json"), JSON.stringify({ ...info, symbol: "VDS", name: "Vestibule Demo SPL" }));
  execFileSync(process.execPath, [SETUP, out, `${CHAIN}=${anvil.url}`, `solana=${join(out, "solana.json")}`], { stdio: ["ignore", "inherit", "inherit"] });
  devnet = JSON.parse(readFileSync(join(out, "devnet.json"), "utf8"));
  gateway = await startGateway("", { args: ["--devnet", join(out, "devnet.json")] });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await gateway?.stop();
  await peer?.stop();
  await anvil?.stop();
  if (!gateway) return;
  const n = verifyAllSessions(gateway.data);
  assert.ok(n >= 1, `sessions replayed with --verify: ${n}`);
});

const mint = () => devnet.networks[DEVNET].token.address;

/** What the peer holds for `owner`: lamports and raw units of the demo mint. */
async function held(owner) {
  const { value: lamports } = await peer.rpc("getBalance", [owner]);
  const { value: accounts } = await peer.rpc("getTokenAccountsByOwner", [owner, { mint: mint() }, { encoding: "jsonParsed" }]);
  const units = accounts[0]?.account.data.parsed.info.tokenAmount.amount ?? "0";
  return { sol: BigInt(lamports), vds: BigInt(units) };
}

/** The demo with the Solana network; the modal open on Account once the dev Solana wallet is connected. */
async function connectedSolana() {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  await page.goto(`${gateway.url}/?solana=devnet`);
  await page.getByTestId("connect").click();
  await page.getByRole("dialog").getByRole("button", { name: /Connect Dev Solana Wallet/ }).click({ timeout: 15_000 });
  await page.waitForFunction(() => window.__vestibule.state().connection.namespaces.solana?.status === "connected", null, { timeout: 15_000 });
  assert.equal(await page.evaluate(() => window.__devSolanaWallet.address), SOLANA_DEV_KEY.address, "the devnet's funded dev Solana wallet");
  if ((await page.getByRole("dialog").count()) === 0) await page.getByTestId("connect").click();
  const dialog = page.getByRole("dialog");
  await dialog.getByRole("region", { name: "Account" }).waitFor({ timeout: 15_000 });
  return { context, page, dialog, errors };
}

/** The Account shows what the peer holds for the dev Solana wallet (SOL in the header and both rows). */
async function showsPeerBalances(dialog) {
  const { sol, vds } = await held(SOLANA_DEV_KEY.address);
  await dialog.getByTestId("account-balance").filter({ hasText: `${display(sol, 9)} SOL` }).waitFor({ timeout: 30_000 });
  const rows = dialog.getByTestId("token-balance");
  await rows.getByTestId("token-amount").filter({ hasText: `${display(sol, 9)} SOL` }).waitFor({ timeout: 30_000 });
  await rows.getByTestId("token-amount").filter({ hasText: `${display(vds, 6)} VDS` }).waitFor({ timeout: 30_000 });
  return { sol, vds };
}

async function openSend(dialog) {
  await dialog.getByRole("group", { name: "Wallet features" }).getByRole("button", { name: "Send", exact: true }).click({ timeout: 15_000 });
  const form = dialog.getByRole("form", { name: "Send tokens" });
  await form.waitFor({ timeout: 15_000 });
  return form;
}

/** The form's token option whose label starts with `symbol`. */
async function chooseToken(form, symbol) {
  const select = form.getByLabel("Token", { exact: true });
  const options = await select.locator("option").evaluateAll((os) => os.map((o) => ({ value: o.value, label: o.textContent })));
  const option = options.find((o) => o.label.startsWith(`${symbol} (`));
  assert.ok(option, `no ${symbol} in ${JSON.stringify(options)}`);
  await select.selectOption(option.value);
}

/** Sends `amount` of `symbol` to `to`; waits until the session has the transaction confirmed and
 * the view is Account again; returns the signature. */
async function send(page, dialog, symbol, amount, to) {
  const form = await openSend(dialog);
  await chooseToken(form, symbol);
  await form.getByLabel("Amount", { exact: true }).fill(amount);
  await form.getByLabel("To", { exact: true }).fill(to);
  const before = await page.evaluate(() => window.__vestibule.state().send.sent.length);
  await form.getByRole("button", { name: "Send", exact: true }).click();
  const signature = await (
    await page.waitForFunction((n) => {
      const s = window.__vestibule.state();
      return s.send.sent.length > n && s.send.sent[0].status === "confirmed" ? s.send.sent[0].hash : null;
    }, before, { timeout: 30_000 })
  ).jsonValue();
  // Spec §4: after a Solana send the view returns to Account.
  await page.waitForFunction(() => window.__vestibule.state().router.current === "Account", null, { timeout: 15_000 });
  await dialog.getByRole("region", { name: "Account" }).waitFor({ timeout: 15_000 });
  const { value } = await peer.rpc("getSignatureStatuses", [[signature]]);
  assert.equal(value[0]?.err, null, `the peer ran ${signature}`);
  assert.equal(value[0]?.confirmationStatus, "finalized");
  return signature;
}

test("a Solana account on the demo: SOL and the SPL token as the peer holds them, with Send offered", async () => {
  const { context, page, dialog, errors } = await connectedSolana();
  assert.equal(await dialog.getByTestId("account-network").textContent(), "Solana Devnet");
  const { sol, vds } = await showsPeerBalances(dialog);
  assert.equal(vds, 1000n * 10n ** 6n);
  assert.ok(sol > 0n);
  const balances = await page.evaluate(() => window.__vestibule.state().balances);
  assert.equal(balances.network, DEVNET);
  assert.equal(balances.address, SOLANA_DEV_KEY.address);
  assert.deepEqual(balances.tokens.map((t) => [t.symbol, t.raw]), [["VDS", vds.toString()]]);
  assert.equal(await dialog.getByRole("group", { name: "Wallet features" }).getByRole("button", { name: "Send", exact: true }).count(), 1);
  assert.deepEqual(errors, []);
  await context.close();
});

test("a SOL send and an SPL send are confirmed on the peer and the Account shows the new balances", async () => {
  const { context, page, dialog, errors } = await connectedSolana();
  const before = await showsPeerBalances(dialog);

  const to = randomKeypair().address;
  const sol = await send(page, dialog, "SOL", "0.5", to);
  assert.equal((await held(to)).sol, LAMPORTS / 2n, "the receiver got 0.5 SOL");
  const afterSol = await showsPeerBalances(dialog);
  assert.ok(afterSol.sol <= before.sol - LAMPORTS / 2n, "the sender paid 0.5 SOL and the fee");

  const spl = await send(page, dialog, "VDS", "25", to);
  assert.notEqual(spl, sol);
  assert.equal((await held(to)).vds, 25n * 10n ** 6n, "the receiver got 25 VDS (TransferChecked, 6 decimals)");
  const afterSpl = await showsPeerBalances(dialog);
  assert.equal(afterSpl.vds, before.vds - 25n * 10n ** 6n);

  // The sent list names both, confirmed.
  const sent = await page.evaluate(() => window.__vestibule.state().send.sent.map((s) => [s.transfer.symbol, s.transfer.amount, s.status]));
  assert.deepEqual(sent.slice(0, 2), [["VDS", "25", "confirmed"], ["SOL", "0.5", "confirmed"]]);
  assert.deepEqual(errors, []);
  await context.close();
});

test("Send refuses a receiver that is not a Solana address with the catalogue's messages, and accepts a valid one", async () => {
  const { context, page, dialog } = await connectedSolana();
  await showsPeerBalances(dialog);
  const form = await openSend(dialog);
  assert.equal(await form.getByLabel("To", { exact: true }).getAttribute("placeholder"), "Solana address (base58)");
  await chooseToken(form, "SOL");
  const error = dialog.getByTestId("send-error");
  const submit = form.getByRole("button", { name: "Send", exact: true });

  await form.getByLabel("Amount", { exact: true }).fill("0.1");
  await submit.click();
  await error.filter({ hasText: "An amount and receiver address are required" }).waitFor({ timeout: 15_000 });

  // An EVM address, base58 with a letter outside its alphabet (0, O, I, l), and one too short.
  for (const bad of ["0x70997970C51812dc3A010C7d01b50e0d17dc79C8", "DfLZkegN9CjeTdnot8VD3Ga3xftbuB8VsHVY1iQAfQp0", "DfLZkegN9CjeTdnot8VD3Ga3x"]) {
    await form.getByLabel("To", { exact: true }).fill(bad);
    await submit.click();
    await error.filter({ hasText: "Invalid receiver address" }).waitFor({ timeout: 15_000 });
    assert.equal(await page.evaluate(() => window.__vestibule.state().send.status), "idle", `${bad} was not sent`);
    // Typing clears the message (the server's form changed), so the next check sees a fresh one.
    await form.getByLabel("To", { exact: true }).fill("");
    await error.waitFor({ state: "detached", timeout: 15_000 });
  }
  // Positive probe: a valid receiver goes to the wallet and is confirmed.
  const to = randomKeypair().address;
  const sentBefore = await page.evaluate(() => window.__vestibule.state().send.sent.length);
  await form.getByLabel("To", { exact: true }).fill(to);
  await submit.click();
  await page.waitForFunction((n) => window.__vestibule.state().send.sent.length > n && window.__vestibule.state().send.sent[0].status === "confirmed", sentBefore, { timeout: 30_000 });
  assert.equal((await held(to)).sol, LAMPORTS / 10n);
  await context.close();
});

test("one session holds the EVM and the Solana account, and the Account shows each one's balances as it switches", async () => {
  const { context, page, dialog, errors } = await connectedSolana();
  await dialog.getByTestId("account-network").filter({ hasText: "Solana Devnet" }).waitFor({ timeout: 15_000 });

  // Switch to Ethereum: no account there yet, so SwitchActiveChain, then Connect lists only EVM wallets.
  await dialog.getByTestId("namespace-eip155").click();
  await dialog.getByTestId("switch-active-chain").waitFor({ timeout: 15_000 });
  await dialog.getByRole("button", { name: "Connect an Ethereum wallet" }).click();
  await dialog.getByTestId("connect-namespace").filter({ hasText: "Ethereum wallets" }).waitFor({ timeout: 15_000 });
  assert.equal(await dialog.getByRole("button", { name: /Connect Dev Solana Wallet/ }).count(), 0, "only EVM wallets are listed");
  // Positive probe, and the way back to every wallet.
  await dialog.getByRole("button", { name: "Connect Dev Wallet", exact: true }).waitFor();
  await dialog.getByRole("button", { name: "Show all wallets" }).click();
  await dialog.getByRole("button", { name: /Connect Dev Solana Wallet/ }).waitFor({ timeout: 15_000 });
  await dialog.getByRole("button", { name: "Connect Dev Wallet", exact: true }).click();
  await page.waitForFunction(() => window.__vestibule.state().connection.namespaces.eip155?.status === "connected", null, { timeout: 15_000 });
  const connection = await page.evaluate(() => window.__vestibule.state().connection);
  assert.equal(connection.namespaces.solana.status, "connected", "the Solana account stays connected");
  assert.equal(connection.namespaces.eip155.address, DEV_WALLET.address);

  // The EVM account's balances on the anvil.
  if ((await page.getByRole("dialog").count()) === 0) await page.getByTestId("connect").click();
  await dialog.getByTestId("account-network").filter({ hasText: `Devnet ${CHAIN}` }).waitFor({ timeout: 15_000 });
  const eth = await nativeBalance(anvil.url, DEV_WALLET.address);
  const vdt = await tokenBalance(anvil.url, devnet.networks[`eip155:${CHAIN}`].token.address, DEV_WALLET.address);
  await dialog.getByTestId("account-balance").filter({ hasText: `${display(eth)} ETH` }).waitFor({ timeout: 30_000 });
  await dialog.getByTestId("token-balance").getByTestId("token-amount").filter({ hasText: `${display(vdt)} VDT` }).waitFor({ timeout: 30_000 });

  // Back to Solana: its balances again; and to Ethereum once more.
  await dialog.getByTestId("namespace-solana").click();
  await dialog.getByTestId("account-network").filter({ hasText: "Solana Devnet" }).waitFor({ timeout: 15_000 });
  await showsPeerBalances(dialog);
  await dialog.getByTestId("namespace-eip155").click();
  await dialog.getByTestId("account-balance").filter({ hasText: `${display(eth)} ETH` }).waitFor({ timeout: 30_000 });
  assert.deepEqual(errors, []);
  await context.close();
});

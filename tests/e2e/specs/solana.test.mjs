// Solana in Chromium against the real gateway and the local Solana peer (LiteSVM): the dev Solana
// wallet (Wallet Standard, a real ed25519 key) connects, stays connected across a reload without a
// prompt, signs and sends through the host's Solana provider, signs in with Sign-In With Solana
// (valid, declined, tampered), and shares a session with the dev EVM wallet, switching between them
// and showing SwitchActiveChain where no account is connected.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { SOLANA_DEV_KEY, startSolanaPeer } from "../../peers/solana.mjs";
import { base58, compileMessage, ed25519, instructions, randomKeypair } from "../../peers/solana/tx.mjs";
import { devWalletPage, injectDevSolanaWallet, launch, startGateway, storedCredentials, verifyAllSessions } from "./support.mjs";

const DEVNET = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
let gateway;
let browser;
let peer;

before(async () => {
  peer = await startSolanaPeer();
  gateway = await startGateway();
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await gateway?.stop();
  await peer?.stop();
  // Every session these tests created replays, and verifies against the hashes the page was sent.
  const n = verifyAllSessions(gateway.data);
  assert.ok(n >= 4, `sessions verified: ${n}`);
});

/** A page with the dev Solana wallet injected (and the demo's EVM dev wallet when `evm`). */
async function solanaPage({ evm = false, rejects = false } = {}) {
  const { context, page } = evm ? await devWalletPage(browser) : { context: await browser.newContext(), page: null };
  await injectDevSolanaWallet(context, { key: SOLANA_DEV_KEY.secretKey, rpcUrl: peer.url, rejects });
  return { context, page: page ?? (await context.newPage()) };
}

const solanaState = (page) => page.evaluate(() => window.__vestibule.state().connection.namespaces.solana);

async function connectSolana(page) {
  await page.getByTestId("connect").click();
  await page.getByRole("button", { name: /Connect Dev Solana Wallet/ }).click();
}

test("connect the dev Solana wallet, stay connected after a reload with no prompt, and sign and send through the host's Solana provider", async () => {
  const { context, page } = await solanaPage();
  await page.goto(`${gateway.url}/?solana=devnet`);
  await connectSolana(page);
  await page.getByTestId("status").filter({ hasText: /^connected$/ }).waitFor({ timeout: 15_000 });
  const address = SOLANA_DEV_KEY.address;
  assert.equal(await page.getByTestId("address").textContent(), `${address.slice(0, 4)}…${address.slice(-6)}`);
  assert.equal(await page.getByTestId("chain").textContent(), "Solana Devnet");
  const solana = await solanaState(page);
  assert.equal(solana.caipAddress, `${DEVNET}:${address}`);
  assert.equal(solana.connectorId, "solana:Dev Solana Wallet");
  assert.equal(await page.evaluate(() => window.__devSolanaWallet.prompts), 1);
  assert.equal(await page.evaluate(() => window.__solana.address), address);
  assert.deepEqual(await page.evaluate(() => window.__provider.request({ method: "eth_accounts" })), [], "no EVM account");

  // The host signs a message and sends a transaction through the session's Solana wallet.
  const signature = await page.evaluate(async () => Array.from((await window.__solana.signMessage(new TextEncoder().encode("hello from the host"))).signature));
  assert.ok(ed25519.verify(Uint8Array.from(signature), new TextEncoder().encode("hello from the host"), base58.decode(address)));
  const to = randomKeypair().address;
  const { value } = await peer.rpc("getLatestBlockhash");
  const message = compileMessage({ payer: address, instructions: [instructions.transfer(address, to, 2_000_000)], recentBlockhash: value.blockhash });
  const unsigned = [1, ...new Array(64).fill(0), ...message];
  const sent = await page.evaluate(async (bytes) => (await window.__solana.signAndSendTransaction(Uint8Array.from(bytes))).signature, unsigned);
  const statuses = await peer.rpc("getSignatureStatuses", [[sent]]);
  assert.equal(statuses.value[0].confirmationStatus, "finalized");
  assert.equal((await peer.rpc("getBalance", [to])).value, 2_000_000);

  // Reload: the stored connection is re-synced silently (standard:connect with silent).
  await page.reload();
  await page.waitForFunction(() => {
    const s = window.__vestibule?.state()?.connection.namespaces.solana;
    return s?.syncing === false && s.status === "connected";
  }, null, { timeout: 15_000 });
  assert.equal(await page.getByTestId("address").textContent(), `${address.slice(0, 4)}…${address.slice(-6)}`);
  assert.equal(await page.evaluate(() => window.__devSolanaWallet.prompts), 0, "no new wallet prompt after the reload");
  await context.close();
});

test("a rejecting Solana wallet gives Connection rejected", async () => {
  const { context, page } = await solanaPage({ rejects: true });
  await page.goto(`${gateway.url}/?solana=devnet`);
  await connectSolana(page);
  await page.getByRole("status").filter({ hasText: "Connection rejected" }).waitFor({ timeout: 15_000 });
  await page.getByRole("dialog").getByText("Connect wallet").waitFor();
  assert.equal((await solanaState(page)).lastError, "Connection rejected");
  await context.close();
});

test("Sign-In With Solana: the wallet signs the session's SIWS message, the server verifies it, and the host gets a token", async () => {
  const { context, page } = await solanaPage();
  await page.goto(`${gateway.url}/?solana=devnet&siwx=optional`);
  await connectSolana(page);
  const message = page.getByTestId("siwx-message");
  await message.waitFor({ timeout: 15_000 });
  const text = await message.textContent();
  assert.match(text, new RegExp(`wants you to sign in with your Solana account:\\n${SOLANA_DEV_KEY.address}\\n\\nURI: `));
  assert.match(text, /\nChain ID: devnet\n/, "Phantom's chain id for devnet");
  await page.getByRole("button", { name: "Sign", exact: true }).click();
  await page.getByTestId("signed-in").filter({ hasText: "yes" }).waitFor({ timeout: 15_000 });
  assert.equal(await page.getByRole("dialog").count(), 0, "signing closes the modal");
  const account = `${DEVNET}:${SOLANA_DEV_KEY.address}`;
  const session = await page.evaluate((a) => window.__vestibule.state().siwx.sessions[a], account);
  assert.equal(session.method, "ed25519");
  // The host app's backend gets a token for the Solana account.
  const credentials = await storedCredentials(page);
  const token = await page.evaluate(async (credentials) => {
    const body = JSON.stringify(credentials);
    const response = await fetch("/siwx/token", { method: "POST", headers: { "content-type": "application/json" }, body });
    return { status: response.status, body: await response.json() };
  }, credentials);
  assert.equal(token.status, 200);
  assert.equal(token.body.claims.sub, account);
  assert.equal(token.body.claims.method, "ed25519");
  // A reload keeps the sign-in, with no prompt.
  await page.reload();
  await page.getByTestId("signed-in").filter({ hasText: "yes" }).waitFor({ timeout: 15_000 });
  await page.waitForFunction(() => window.__vestibule?.state()?.connection.namespaces.solana?.status === "connected", null, { timeout: 15_000 });
  assert.equal(await page.evaluate(() => window.__devSolanaWallet.prompts), 0);
  await context.close();
});

test("Sign-In With Solana: declined shows Signature declined, a tampered signature is refused with a new nonce, then a valid one signs in", async () => {
  const { context, page } = await solanaPage();
  await page.goto(`${gateway.url}/?solana=devnet&siwx=required`);
  await connectSolana(page);
  const message = page.getByTestId("siwx-message");
  await message.waitFor({ timeout: 15_000 });
  const sign = page.getByRole("button", { name: "Sign", exact: true });

  await page.evaluate(() => (window.__devSolanaWallet.rejectAll = true));
  await sign.click();
  await page.getByTestId("siwx-error").filter({ hasText: "Signature declined" }).waitFor({ timeout: 15_000 });
  assert.equal(await page.getByTestId("signed-in").textContent(), "no");

  await page.evaluate(() => {
    window.__devSolanaWallet.rejectAll = false;
    window.__devSolanaWallet.tamperSignatures = true;
  });
  const first = await message.textContent();
  await sign.click();
  await page.getByTestId("siwx-error").filter({ hasText: "The signature could not be verified" }).waitFor({ timeout: 15_000 });
  assert.equal(await page.getByTestId("signed-in").textContent(), "no");
  const second = await message.textContent();
  assert.notEqual(second, first, "a new message with a new nonce");
  const nonce = (t) => /\nNonce: (\w+)\n/.exec(t)[1];
  assert.notEqual(nonce(second), nonce(first));
  // Required: the modal cannot be closed.
  assert.equal(await page.getByRole("button", { name: "Close" }).isDisabled(), true);

  await page.evaluate(() => (window.__devSolanaWallet.tamperSignatures = false));
  await sign.click();
  await page.getByTestId("signed-in").filter({ hasText: "yes" }).waitFor({ timeout: 15_000 });
  await context.close();
});

test("one session holds an EVM and a Solana account: SwitchActiveChain where none is connected, then switching between them", async () => {
  const { context, page } = await solanaPage({ evm: true });
  await page.goto(`${gateway.url}/?solana=devnet`);
  // The EVM dev wallet first.
  await page.getByTestId("connect").click();
  await page.getByRole("button", { name: "Connect Dev Wallet", exact: true }).click();
  await page.getByTestId("status").filter({ hasText: /^connected$/ }).waitFor({ timeout: 15_000 });
  const evm = await page.evaluate(() => window.__devWallet.address);
  assert.equal(await page.getByTestId("chain").textContent(), "Ethereum");

  // The Account view offers both namespaces; Solana has no account: SwitchActiveChain.
  await page.getByTestId("connect").click();
  const dialog = page.getByRole("dialog");
  await dialog.getByTestId("namespace-solana").click();
  const view = dialog.getByTestId("switch-active-chain");
  await view.waitFor({ timeout: 15_000 });
  assert.equal(await view.getAttribute("data-namespace"), "solana");
  await dialog.getByRole("heading", { name: "Switch to Solana" }).waitFor();
  assert.match(await dialog.getByTestId("switch-active-chain-network").textContent(), /Solana Devnet/);
  const params = await page.evaluate(() => window.__vestibule.state().router.stack.at(-1).params);
  assert.deepEqual(params, { switchToChain: "solana", navigateTo: "Connect", navigateWithReplace: true, network: DEVNET });
  assert.equal(await page.evaluate(() => window.__vestibule.state().connection.activeNamespace), "eip155", "nothing switched yet");

  // Connect a Solana wallet from there.
  await dialog.getByRole("button", { name: "Connect a Solana wallet" }).click();
  await dialog.getByRole("button", { name: /Connect Dev Solana Wallet/ }).click();
  await page.waitForFunction(() => window.__vestibule.state().connection.namespaces.solana?.status === "connected", null, { timeout: 15_000 });
  const connection = await page.evaluate(() => window.__vestibule.state().connection);
  assert.equal(connection.namespaces.eip155.status, "connected", "the EVM account stays connected");
  assert.equal(connection.activeNamespace, "solana");
  assert.deepEqual(await page.evaluate(() => window.__provider.request({ method: "eth_accounts" })), [evm], "the EIP-1193 provider keeps the EVM account");
  assert.equal(await page.evaluate(() => window.__solana.address), SOLANA_DEV_KEY.address);
  await page.getByTestId("chain").filter({ hasText: "Solana Devnet" }).waitFor();

  // Switch back and forth in the Account view.
  await page.getByTestId("connect").click();
  await dialog.getByTestId("account-network").filter({ hasText: "Solana Devnet" }).waitFor();
  await dialog.getByTestId("namespace-eip155").click();
  await dialog.getByTestId("account-network").filter({ hasText: "Ethereum" }).waitFor({ timeout: 15_000 });
  assert.equal(await dialog.getByTestId("account-address").textContent(), `${evm.slice(0, 4)}…${evm.slice(-6)}`);
  assert.equal(await dialog.getByTestId("namespace-eip155").getAttribute("aria-pressed"), "true");
  await dialog.getByTestId("namespace-solana").click();
  await dialog.getByTestId("account-network").filter({ hasText: "Solana Devnet" }).waitFor({ timeout: 15_000 });

  // Disconnect the Solana account only.
  await dialog.getByRole("button", { name: "Disconnect" }).click();
  await page.waitForFunction(() => window.__vestibule.state().connection.namespaces.solana?.status === "disconnected", null, { timeout: 15_000 });
  const after = await page.evaluate(() => window.__vestibule.state().connection);
  assert.equal(after.namespaces.eip155.status, "connected");
  assert.equal(after.activeNamespace, "eip155");
  assert.deepEqual(await page.evaluate(() => window.__devSolanaWallet.accounts.length), 0, "the wallet was told (standard:disconnect)");
  await context.close();
});

// The embedded wallet's email login in Chromium (issue 15, docs/embedded-wallet.md): the code read
// from a real SMTP sink, the address and the email in the Account, a reload keeping the session, a
// new device (a second browser context) recovering the same address, a wrong and an expired code,
// the 30 s cooldown, UpdateEmailWallet with both codes, and the host page's provider requests
// approved (mined on anvil) or rejected inside the secure frame, a disallowed one refused with 4200.
// After the file: every session replays with --verify and no OTP or share key is in the gateway's
// output, the event log or a replay (embedded.mjs).
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  afterCooldown,
  CHAIN,
  answerInFrame,
  eip155,
  emailLogin,
  embeddedWorldForFile,
  ETHER,
  fund,
  hostRequest,
  nativeBalance,
  openModal,
  RECEIVER,
  recoverPersonalSign,
  selectors,
  submitCode,
  submitEmail,
  texts,
  untilClockPasses,
  waitConnected,
  waitForFrame,
  waitForReceipt,
  within,
  WAIT,
} from "./embedded.mjs";

const world = embeddedWorldForFile({ sessions: 7 });
const T = { timeout: 180_000 };

const short = (address) => `${address.slice(0, 4)}…${address.slice(-6)}`;

// Alice's first device: logged in once, reused by the tests that need a connected embedded wallet.
let alice;
async function aliceSession() {
  if (alice) return alice;
  const { context, page, errors, gw } = await world.open();
  const email = "alice@example.test";
  const { address, code } = await emailLogin(world, page, email);
  alice = { context, page, errors, gw, email, address, code };
  return alice;
}

/** The Account view shows `email` and the short form of `address`. */
async function accountShows(page, { email, address }) {
  const dialog = await openModal(page);
  const account = selectors.account(dialog);
  await account.waitFor({ timeout: WAIT.ui });
  if (address) await selectors.accountAddress(dialog).filter({ hasText: short(address) }).waitFor({ timeout: WAIT.ui });
  if (email) await account.getByText(email).first().waitFor({ timeout: WAIT.ui });
  return dialog;
}

test("email login: the code mailed to the sink connects; the Account shows the address and the email; a reload keeps the session", T, async () => {
  const { page, errors, email, address, code } = await aliceSession();
  assert.match(code, /^\d{6}$/);
  assert.deepEqual(world.sink.messagesTo(email).length, 1, "one mail for one login");
  await accountShows(page, { email, address });

  await page.reload();
  await page.waitForFunction(() => window.v?.state()?.started === true, null, { timeout: WAIT.ui });
  await waitForFrame(page, alice.gw);
  assert.equal(await waitConnected(page, "the session did not come back connected after a reload"), address);
  await accountShows(page, { email, address });
  assert.equal(world.sink.messagesTo(email).length, 1, "a reload asks for no new code");
  assert.deepEqual(errors, []);
});

test("a wrong code gives Invalid code and does not connect; the right code then does", T, async () => {
  const { context, page } = await world.open();
  const email = "carol@example.test";
  const { dialog, t0 } = await submitEmail(page, world.gateway, email);
  const code = await world.sink.waitForCode(email, { after: t0 });
  const wrong = code === "000000" ? "111111" : "000000";
  await submitCode(dialog, wrong);
  await selectors.message(page, texts.wrongOtp).first().waitFor({ timeout: WAIT.ui });
  assert.notEqual((await eip155(page))?.status, "connected");
  // The probe: the right code on the same challenge connects (so the refusal was the code's).
  await submitCode(dialog, code);
  await waitConnected(page, "the right code after a wrong one did not connect");
  await context.close();
});

test("a second email login within 30 s gives Please try again after n seconds and sends no second mail", T, async () => {
  const { context, page } = await world.open();
  const email = "dave@example.test";
  const { dialog, t0 } = await submitEmail(page, world.gateway, email);
  await world.sink.waitForCode(email, { after: t0 });
  await selectors.back(dialog).click();
  await selectors.emailInput(dialog).fill(email);
  await selectors.emailSubmit(dialog).click();
  await selectors.message(page, texts.cooldown).first().waitFor({ timeout: WAIT.ui });
  assert.ok(Date.now() - t0 < 30_000, "still inside the cooldown when it was shown");
  assert.equal(world.sink.messagesTo(email).length, 1, "no second mail during the cooldown");
  await context.close();
});

let shortGateway;
test("an expired code (a gateway with otp_ttl = 3s) is refused and does not connect", T, async () => {
  shortGateway ??= await world.addGateway({ otpTtl: "3s" });
  const { context, page } = await world.open({ gw: shortGateway });
  const email = "erin@example.test";
  const { dialog, t0 } = await submitEmail(page, shortGateway, email);
  const code = await world.sink.waitForCode(email, { after: t0 });
  // The code was issued before the mail arrived: 3 s after now it has expired (plus a margin).
  await untilClockPasses(Date.now() + 3_000 + 750);
  await submitCode(dialog, code);
  await selectors.message(page, texts.expiredOtp).first().waitFor({ timeout: WAIT.ui });
  assert.notEqual((await eip155(page))?.status, "connected");
  await context.close();
});

test("a second browser context (a new device) recovers the same address after its own OTP", T, async () => {
  const first = await aliceSession();
  await afterCooldown(world, first.email);
  const { context, page, errors } = await world.open();
  const { address, code } = await emailLogin(world, page, first.email);
  assert.notEqual(code, first.code, "a new code for the new device");
  assert.equal(address.toLowerCase(), first.address.toLowerCase(), "the same address on the new device");
  await accountShows(page, { email: first.email, address });
  assert.deepEqual(errors, []);
  await context.close();
});

test("update email: a code to the old address, then one to the new; the Account then shows the new email", T, async () => {
  const { context, page } = await world.open();
  const oldEmail = "frank@example.test";
  const newEmail = "frank.new@example.test";
  const { address } = await emailLogin(world, page, oldEmail);
  await afterCooldown(world, oldEmail);
  let dialog = await accountShows(page, { email: oldEmail, address });
  await selectors.updateEmail(dialog).click();
  const t0 = Date.now();
  await selectors.newEmailInput(dialog).fill(newEmail);
  await selectors.newEmailSubmit(dialog).click();
  // VERIFY_PRIMARY_OTP: to the current address.
  const primary = await world.sink.waitForCode(oldEmail, { after: t0 });
  await submitCode(dialog, primary);
  // VERIFY_SECONDARY_OTP: to the new one.
  const secondary = await world.sink.waitForCode(newEmail, { after: t0 });
  assert.notEqual(secondary, primary);
  await submitCode(dialog, secondary);
  // The modal polls for the changed email and closes; the Account then shows the new one.
  const closed = await page.waitForFunction(() => window.v.state().modal.status !== "open", null, { timeout: WAIT.connect }).then(() => true, () => false);
  assert.ok(closed, `the modal did not close within ${WAIT.connect / 1000} s after the second code (it polls for the changed email, then closes)`);
  dialog = await accountShows(page, { email: newEmail, address });
  assert.equal(await selectors.account(dialog).getByText(oldEmail).count(), 0, "the old email is gone");
  assert.equal((await eip155(page)).address, address, "the same wallet");
  await context.close();
});

test("personal_sign and eth_sendTransaction from the host's provider, approved in the frame: the signature recovers to the address and the transaction is mined; one rejected gives 4001", T, async () => {
  const { page, gw, address } = await aliceSession();
  await fund(world, address);
  // The host page has no Approve button of its own: the frame draws the approval.
  assert.equal(await page.getByRole("button", { name: "Approve" }).count(), 0);

  const message = `0x${Buffer.from("Vestibule e2e: sign me").toString("hex")}`;
  const signing = hostRequest(page, "personal_sign", [message, address]);
  await answerInFrame(page, gw, selectors.approve);
  const signed = await within(signing, 60_000, "personal_sign approved in the frame");
  assert.match(String(signed.result), /^0x[0-9a-f]{130}$/i, JSON.stringify(signed));
  assert.equal((await recoverPersonalSign(world.anvilUrl, message, signed.result)).toLowerCase(), address.toLowerCase());

  const before = await nativeBalance(world.anvilUrl, RECEIVER);
  const sending = hostRequest(page, "eth_sendTransaction", [{ from: address, to: RECEIVER, value: `0x${ETHER.toString(16)}` }]);
  await answerInFrame(page, gw, selectors.approve);
  const sent = await within(sending, 60_000, "eth_sendTransaction approved in the frame");
  assert.match(String(sent.result), /^0x[0-9a-f]{64}$/, JSON.stringify(sent));
  const receipt = await waitForReceipt(world.anvilUrl, sent.result);
  assert.equal(receipt.status, "0x1");
  assert.equal(receipt.from.toLowerCase(), address.toLowerCase());
  assert.equal(await nativeBalance(world.anvilUrl, RECEIVER), before + ETHER);

  const rejecting = hostRequest(page, "personal_sign", [`0x${Buffer.from("reject me").toString("hex")}`, address]);
  await answerInFrame(page, gw, selectors.reject);
  const rejected = await within(rejecting, 60_000, "personal_sign rejected in the frame");
  assert.equal(rejected.code, 4001, JSON.stringify(rejected));
  assert.equal(rejected.result, undefined);
});

test("the embedded account switches network from the Networks view and by the host's wallet_switchEthereumChain; the frame is not asked", T, async () => {
  const { context, page } = await world.open({ twoChains: true });
  await emailLogin(world, page, "carol@example.test");
  const chainId = async () => (await within(hostRequest(page, "eth_chainId", []), 30_000, "eth_chainId")).result;
  assert.equal(await chainId(), `0x${CHAIN.toString(16)}`);
  const dialog = await openModal(page);
  await dialog.getByTestId("account-network").click();
  await dialog.locator('[data-network="eip155:1"]').click();
  await dialog.getByTestId("account-network").filter({ hasText: "Ethereum" }).waitFor({ timeout: WAIT.ui });
  assert.equal(await chainId(), "0x1");
  assert.equal(await page.evaluate(() => window.v.state().networkSwitch.status), "idle", "no switch waited for the frame");
  // The host's switch back: null (EIP-3326), at once.
  const back = await within(hostRequest(page, "wallet_switchEthereumChain", [{ chainId: `0x${CHAIN.toString(16)}` }]), 30_000, "the host's switch");
  assert.equal(back.result, null, JSON.stringify(back));
  assert.equal(await chainId(), `0x${CHAIN.toString(16)}`);
  await context.close();
});

test("a disallowed host method shows Requested RPC call is not allowed and is rejected with 4200", T, async () => {
  const { page, address } = await aliceSession();
  const balance = await nativeBalance(world.anvilUrl, address);
  const refused = await within(hostRequest(page, "anvil_setBalance", [address, "0x1"]), 30_000, "anvil_setBalance from the host");
  assert.equal(refused.code, 4200, JSON.stringify(refused));
  await page.getByRole("status").filter({ hasText: texts.notAllowed }).first().waitFor({ timeout: WAIT.ui });
  assert.equal(await nativeBalance(world.anvilUrl, address), balance, "the node was not asked");
  await alice.context.close();
});

test("sign-in required: the embedded account signs the SIWX message in the frame's approval (closing disabled meanwhile); the sign-in session is recorded and the modal closes", T, async () => {
  const { context, page, gw } = await world.open({ siwx: true });
  const { address } = await emailLogin(world, page, "signer@example.test");
  const message = page.getByTestId("siwx-message");
  await message.waitFor({ timeout: WAIT.ui });
  await page.getByRole("button", { name: "Sign", exact: true }).click();
  // The request goes to the frame: ApproveTransaction, which cannot be closed before signing in.
  await page.waitForFunction(() => window.v.state().router.current === "ApproveTransaction", null, { timeout: WAIT.ui });
  assert.equal(await page.evaluate(() => window.v.state().modal.closable), false, "closing is disabled while sign-in is required and no session exists");
  await answerInFrame(page, gw, selectors.approve);
  const signedIn = await page
    .waitForFunction((a) => Object.keys(window.v.state().siwx.sessions).some((k) => k.toLowerCase().endsWith(a.toLowerCase())), address, { timeout: WAIT.connect })
    .then(() => true, () => false);
  assert.ok(signedIn, `no sign-in session for ${address} within ${WAIT.connect / 1000} s (siwx: ${JSON.stringify(await page.evaluate(() => window.v.state().siwx.status))})`);
  const closed = await page.waitForFunction(() => window.v.state().modal.status !== "open", null, { timeout: WAIT.ui }).then(() => true, () => false);
  assert.ok(closed, "the modal closes once signed in");
  await context.close();
});

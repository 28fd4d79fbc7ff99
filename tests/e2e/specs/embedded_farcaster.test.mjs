// Sign In With Farcaster in Chromium (spec §2: a URL inside the modal instead of a popup; §4:
// "Failed to connect to farcaster"), offline: the fake relay and the stub IdRegistry on anvil
// --chain-id 10 (tests/peers/farcaster.mjs). The Farcaster button opens no popup; the modal shows
// the relay's URL as a link and a QR code (decoded back here); the relay completes with a message
// signed by the fid's custody key and the visitor is connected; a signature by another key fails.
// After the file: every session replays with --verify and no share key is in the gateway's output,
// the event log or a replay (embedded.mjs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { addressOf } from "../../peers/farcaster.mjs";
import { eip155, embeddedWorldForFile, openModal, selectors, waitConnected, waitForFrame, WAIT } from "./embedded.mjs";
import { readQrCode } from "./evm.mjs";

const world = embeddedWorldForFile({ sessions: 2, otps: false, farcaster: true });
const T = { timeout: 120_000 };

// anvil's public dev keys (accounts 1 and 2): the fid's custody, and a key that is not.
const CUSTODY_KEY = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const OTHER_KEY = "5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
const FID = 8_421;

/** Clicks Farcaster; answers the URL the modal shows (link and QR agreeing) and its channel token. */
async function startFarcaster(page) {
  const dialog = await openModal(page);
  await waitForFrame(page, world.gateway);
  // The frame must be ready before the session asks the service (it waits for it otherwise).
  await page.waitForFunction(() => window.v.state()?.embedded?.frame?.status === "ready", null, { timeout: WAIT.frame });
  const popups = [];
  page.context().on("page", (p) => popups.push(p));
  await selectors.social(dialog, "Farcaster").click();
  const link = page.getByTestId("farcaster-link");
  await link.waitFor({ timeout: WAIT.ui });
  const url = await link.getAttribute("href");
  assert.match(url, /^https:\/\/warpcast\.com\/~\/siwf\?channelToken=[0-9a-f]{32}$/);
  assert.equal((await link.textContent())?.trim(), url);
  assert.equal(await readQrCode(page, page.getByTestId("farcaster-qr")), url, "the QR code holds the URL");
  assert.deepEqual(popups, [], "no popup for Farcaster");
  assert.equal(await page.evaluate(() => window.v.state().router.stack.at(-1)?.view), "ConnectingFarcaster");
  const token = new URL(url).searchParams.get("channelToken");
  assert.ok(world.relay.channels.has(token), "the relay opened that channel");
  return { url, token };
}

test("farcaster: the modal shows the relay's URL and QR; the custody key's signature connects", T, async () => {
  await world.farcasterChain.setCustody(FID, addressOf(CUSTODY_KEY));
  const { context, page, errors } = await world.open();
  const { token } = await startFarcaster(page);
  const channel = world.relay.channels.get(token);
  assert.equal(channel.domain, new URL(world.gateway.frameOrigin).host, "the message's domain is the frame origin's");
  await world.relay.complete(token, { fid: FID, privateKey: CUSTODY_KEY, username: "farcaster-fan" });
  const address = await waitConnected(page, "the Farcaster login did not connect");
  assert.match(address, /^0x[0-9a-fA-F]{40}$/);
  assert.notEqual(address.toLowerCase(), addressOf(CUSTODY_KEY).toLowerCase(), "the embedded wallet, not the custody address");
  const state = await page.evaluate(() => window.v.state().embedded.user);
  assert.equal(state.provider, "farcaster");
  assert.equal(state.username, "farcaster-fan");
  assert.deepEqual(errors, []);
  await context.close();
});

test("farcaster: a signature by a key that is not the fid's custody gives Failed to connect to farcaster", T, async () => {
  await world.farcasterChain.setCustody(FID + 1, addressOf(CUSTODY_KEY));
  const { context, page } = await world.open();
  const { token } = await startFarcaster(page);
  await world.relay.complete(token, { fid: FID + 1, privateKey: OTHER_KEY });
  await selectors.message(page, "Failed to connect to farcaster").first().waitFor({ timeout: WAIT.connect });
  assert.notEqual((await eip155(page))?.status, "connected");
  assert.equal(await page.evaluate(() => window.v.state().embedded.user ?? null), null);
  await context.close();
});

// The embedded wallet's social login in Chromium (issue 15, docs/embedded-wallet.md): google in a
// real popup against a local OIDC provider (PKCE S256, the frame origin's /loading and
// /oauth/callback), discord's username shown without its trailing 0, a popup closed by the visitor
// giving "Popup closed", and messages posted to the host page (and the frame) from a foreign origin
// ignored. After the file: every session replays with --verify and no share key is in the
// gateway's output, the event log or a replay (embedded.mjs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { CLIENT_ID, eip155, embeddedWorldForFile, openModal, openSocialPopup, selectors, texts, waitConnected, WAIT, within } from "./embedded.mjs";

const world = embeddedWorldForFile({ sessions: 4, otps: false });
const T = { timeout: 120_000 };

/** Resolves when `popup` has closed (at once if it already has). */
const popupClosed = (popup) =>
  within(popup.isClosed() ? Promise.resolve() : popup.waitForEvent("close", { timeout: WAIT.connect }), WAIT.connect + 1000, "the popup closing itself after the callback");

test("google: a real popup to the frame origin's /loading, the local provider (PKCE S256, nonce), the callback; connected with the provider's email", T, async () => {
  const { context, page, errors } = await world.open();
  const email = "gina@example.test";
  world.oidc.setNextUser({ sub: "google-gina", email, name: "Gina" });
  const before = world.oidc.authorizations.length;
  const { popup, urls } = await openSocialPopup(page, world.gateway, "Google");
  await popupClosed(popup);
  const address = await waitConnected(page, "the google login did not connect");

  const gw = world.gateway;
  assert.ok(urls.some((u) => u === `${gw.frameOrigin}/loading` || u.startsWith(`${gw.frameOrigin}/loading?`)), `the popup's first page is the frame origin's /loading: ${urls.join(" → ")}`);
  assert.ok(urls.some((u) => u.startsWith(`${gw.frameOrigin}/oauth/callback?`)), `the provider redirected to the frame origin's callback: ${urls.join(" → ")}`);
  const asked = world.oidc.authorizations.slice(before);
  assert.equal(asked.length, 1, JSON.stringify(asked));
  assert.equal(asked[0].client_id, CLIENT_ID);
  assert.equal(asked[0].redirect_uri, `${gw.frameOrigin}/oauth/callback`);
  assert.equal(asked[0].code_challenge_method, "S256");
  assert.match(asked[0].code_challenge ?? "", /^[A-Za-z0-9_-]{43}$/);
  assert.ok(asked[0].state && asked[0].nonce, "state and nonce sent");
  assert.match(asked[0].scope ?? "", /\bopenid\b/);

  const dialog = await openModal(page);
  await selectors.account(dialog).getByText(email).first().waitFor({ timeout: WAIT.ui });
  assert.match(address, /^0x[0-9a-fA-F]{40}$/);
  assert.deepEqual(errors, []);
  await context.close();
});

test("discord (userinfo, no id_token): connected, the username shown without its trailing 0", T, async () => {
  const { context, page } = await world.open();
  world.oidc.setNextUser({ sub: "discord-alice", email: undefined, name: undefined, username: "alice0" });
  const { popup } = await openSocialPopup(page, world.gateway, "Discord");
  await popupClosed(popup);
  await waitConnected(page, "the discord login did not connect");
  const account = selectors.account(await openModal(page));
  // The name's own element: the identity block's text runs on into the balance ("alice" + "0 ETH").
  const name = account.getByTestId("embedded-account-name");
  await name.waitFor({ timeout: WAIT.ui });
  assert.equal((await name.textContent())?.trim(), "alice", "the trailing 0 is dropped");
  await context.close();
});

test("a popup closed by the visitor gives Popup closed and connects nothing", T, async () => {
  const { context, page } = await world.open();
  const held = world.oidc.holdAuthorize();
  try {
    const { popup } = await openSocialPopup(page, world.gateway, "Google");
    await within(held.reached, WAIT.popup, "the popup reaching the provider's /authorize");
    await popup.close();
    // The closed-check runs every second; the bound is the suite's, for a loaded machine.
    await selectors.message(page, texts.popupClosed).first().waitFor({ timeout: WAIT.ui });
    assert.notEqual((await eip155(page))?.status, "connected");
  } finally {
    held.release();
  }
  await context.close();
});

test("messages posted from a foreign origin to the host page and the frame are ignored; the real result then connects", T, async () => {
  const { context, page } = await world.open();
  const gw = world.gateway;
  const completes = [];
  page.on("request", (r) => {
    if (r.url().startsWith(`${gw.frameOrigin}/api/social/complete`)) completes.push(r.postData() ?? "");
  });
  const held = world.oidc.holdAuthorize();
  try {
    const before = world.oidc.authorizations.length;
    world.oidc.setNextUser({ sub: "google-hank", email: "hank@example.test" });
    const { popup } = await openSocialPopup(page, world.gateway, "Google");
    await within(held.reached, WAIT.popup, "the popup reaching the provider's /authorize");
    // The real pending state: only the origin check can stop the forged result.
    const state = world.oidc.authorizations[before]?.state;
    assert.ok(state, "the held /authorize request's state");
    const id = () => randomBytes(16).toString("hex");
    const forged = [
      { type: "VESTIBULE_SOCIAL_RESULT", resultUri: `${gw.frameOrigin}/oauth/callback?code=forged&state=${encodeURIComponent(state)}` },
      { vestibule: 1, id: id(), type: "FRAME_READY", payload: { frameId: "forged" } },
      { vestibule: 1, id: id(), type: "CONNECT_SOCIAL", payload: { resultUri: `${gw.frameOrigin}/oauth/callback?code=forged&state=${encodeURIComponent(state)}` } },
      { vestibule: 1, id: id(), type: "SIGN_OUT", payload: {} },
    ];
    // A page of another origin (the gateway as localhost) in the host page posts them to its parent,
    // and to every frame of its parent (the secure frame among them), with target "*".
    await page.evaluate(
      ({ url, messages }) => {
        const f = document.createElement("iframe");
        f.title = "foreign";
        f.src = `${url}#${encodeURIComponent(JSON.stringify(messages))}`;
        document.body.append(f);
      },
      { url: gw.foreignUrl, messages: forged },
    );
    const foreign = await within(
      (async () => {
        for (;;) {
          const f = page.frames().find((x) => x.url().startsWith(gw.foreignUrl));
          if (f) return f;
          await new Promise((ok) => setTimeout(ok, 50));
        }
      })(),
      WAIT.ui,
      "the foreign page loading",
    );
    await foreign.waitForFunction(() => document.title === "posted", null, { timeout: WAIT.ui });
    await foreign.evaluate((messages) => {
      for (let i = 0; i < parent.frames.length; i += 1) for (const m of messages) parent.frames[i].postMessage(m, "*");
    }, forged);
    // A bounded quiet period in which the forged messages could have acted.
    await page.waitForTimeout(1_500);
    assert.deepEqual(completes, [], "no social completion from a forged message");
    assert.notEqual((await eip155(page))?.status, "connected");
    assert.equal(popup.isClosed(), false, "the login still waits for the real result");

    held.release();
    await popupClosed(popup);
    await waitConnected(page, "the real result after the forged ones did not connect").catch((e) => {
      throw new Error(`${e.message}\nsocial completions posted: ${JSON.stringify(completes)}`);
    });
    assert.equal(completes.length, 1, JSON.stringify(completes));
    assert.doesNotMatch(completes[0], /forged/);
    await selectors.account(await openModal(page)).getByText("hank@example.test").first().waitFor({ timeout: WAIT.ui });
  } finally {
    held.release();
  }
  await context.close();
});

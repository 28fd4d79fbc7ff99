// The local OIDC provider (../oidc.mjs) as the gateway will use it: an authorization-code round
// trip with PKCE S256 whose id_token verifies against the provider's JWKS (issuer, audience,
// nonce, the user's claims), the refusals that prove the gateway's PKCE is checked, and the stub
// userinfo routes of discord and x answering only for an issued access token.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { startOidcProvider } from "../oidc.mjs";

const CLIENT = "vestibule-test";
const REDIRECT = "http://127.0.0.1:9/oauth/callback";
let oidc;

before(async () => {
  oidc = await startOidcProvider({ clientId: CLIENT });
});
after(async () => {
  await oidc?.stop();
});

const b64url = (buf) => Buffer.from(buf).toString("base64url");

function pkce() {
  const verifier = b64url(randomBytes(32));
  return { verifier, challenge: b64url(createHash("sha256").update(verifier).digest()) };
}

/** GET /authorize without following the redirect: the Location's query. */
async function authorize(params) {
  const url = new URL(`${oidc.url}/authorize`);
  for (const [k, v] of Object.entries({ response_type: "code", client_id: CLIENT, redirect_uri: REDIRECT, scope: "openid email profile", ...params })) {
    if (v !== undefined) url.searchParams.set(k, v);
  }
  const response = await fetch(url, { redirect: "manual" });
  assert.equal(response.status, 302);
  const location = new URL(response.headers.get("location"));
  assert.equal(`${location.origin}${location.pathname}`, REDIRECT);
  return location.searchParams;
}

async function token(form, { basic } = {}) {
  const headers = { "content-type": "application/x-www-form-urlencoded" };
  if (basic) headers.authorization = `Basic ${Buffer.from(`${CLIENT}:test-secret`).toString("base64")}`;
  const response = await fetch(`${oidc.url}/token`, { method: "POST", headers, body: new URLSearchParams(form) });
  return { status: response.status, body: await response.json() };
}

async function login(user, { basic = false } = {}) {
  if (user) oidc.setNextUser(user);
  const { verifier, challenge } = pkce();
  const state = b64url(randomBytes(16));
  const nonce = b64url(randomBytes(16));
  const q = await authorize({ state, nonce, code_challenge: challenge, code_challenge_method: "S256" });
  assert.equal(q.get("state"), state);
  assert.ok(q.get("code"), `a code: ${q}`);
  const form = { grant_type: "authorization_code", code: q.get("code"), redirect_uri: REDIRECT, code_verifier: verifier, ...(basic ? {} : { client_id: CLIENT, client_secret: "test-secret" }) };
  const answer = await token(form, { basic });
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return { ...answer.body, nonce, code: q.get("code"), verifier };
}

test("discovery names this provider's endpoints under its issuer", async () => {
  assert.match(oidc.url, /^http:\/\/localhost:\d+$/);
  const doc = await (await fetch(`${oidc.url}/.well-known/openid-configuration`)).json();
  assert.equal(doc.issuer, oidc.issuer);
  assert.equal(doc.authorization_endpoint, `${oidc.url}/authorize`);
  assert.equal(doc.token_endpoint, `${oidc.url}/token`);
  assert.equal(doc.jwks_uri, `${oidc.url}/jwks`);
  assert.ok(doc.code_challenge_methods_supported.includes("S256"));
});

test("authorize → token with PKCE S256 gives an RS256 id_token that verifies with the JWKS and carries sub, email and the nonce", async () => {
  const answer = await login({ sub: "google-42", email: "carol@example.test" });
  const jwks = createRemoteJWKSet(new URL(`${oidc.url}/jwks`));
  const { payload, protectedHeader } = await jwtVerify(answer.id_token, jwks, { issuer: oidc.issuer, audience: CLIENT, algorithms: ["RS256"] });
  assert.equal(protectedHeader.alg, "RS256");
  assert.equal(payload.sub, "google-42");
  assert.equal(payload.email, "carol@example.test");
  assert.equal(payload.email_verified, true);
  assert.equal(payload.nonce, answer.nonce);
  assert.equal(answer.token_type, "Bearer");
  // The OIDC userinfo answers for the issued access token, with the same user.
  const info = await (await fetch(`${oidc.url}/userinfo`, { headers: { authorization: `Bearer ${answer.access_token}` } })).json();
  assert.equal(info.sub, "google-42");
  assert.equal(info.email, "carol@example.test");
});

test("the client may authenticate with HTTP Basic (client_secret_basic)", async () => {
  const answer = await login({ sub: "basic-1" }, { basic: true });
  const jwks = createRemoteJWKSet(new URL(`${oidc.url}/jwks`));
  const { payload } = await jwtVerify(answer.id_token, jwks, { issuer: oidc.issuer, audience: CLIENT });
  assert.equal(payload.sub, "basic-1");
});

test("PKCE is required: no challenge, a plain challenge, no verifier or a wrong verifier get no token", async () => {
  assert.equal((await authorize({ state: "s1" })).get("error"), "invalid_request");
  assert.equal((await authorize({ state: "s1" })).get("code"), null);
  const plain = await authorize({ state: "s2", code_challenge: "x".repeat(43), code_challenge_method: "plain" });
  assert.equal(plain.get("error"), "invalid_request");

  const { verifier, challenge } = pkce();
  const code1 = (await authorize({ state: "s3", code_challenge: challenge, code_challenge_method: "S256" })).get("code");
  const noVerifier = await token({ grant_type: "authorization_code", code: code1, redirect_uri: REDIRECT, client_id: CLIENT });
  assert.equal(noVerifier.status, 400);
  const code2 = (await authorize({ state: "s4", code_challenge: challenge, code_challenge_method: "S256" })).get("code");
  const wrong = await token({ grant_type: "authorization_code", code: code2, redirect_uri: REDIRECT, client_id: CLIENT, code_verifier: pkce().verifier });
  assert.equal(wrong.status, 400);
  assert.equal(wrong.body.access_token, undefined);
  // The probe: the right verifier on a fresh code does give a token.
  const code3 = (await authorize({ state: "s5", code_challenge: challenge, code_challenge_method: "S256" })).get("code");
  assert.equal((await token({ grant_type: "authorization_code", code: code3, redirect_uri: REDIRECT, client_id: CLIENT, code_verifier: verifier })).status, 200);
});

test("a code is good once, for the redirect_uri and client it was issued to", async () => {
  const answer = await login();
  const again = await token({ grant_type: "authorization_code", code: answer.code, redirect_uri: REDIRECT, client_id: CLIENT, code_verifier: answer.verifier });
  assert.equal(again.status, 400);

  const { verifier, challenge } = pkce();
  const code = (await authorize({ state: "r", code_challenge: challenge, code_challenge_method: "S256" })).get("code");
  const elsewhere = await token({ grant_type: "authorization_code", code, redirect_uri: "http://127.0.0.1:9/other", client_id: CLIENT, code_verifier: verifier });
  assert.equal(elsewhere.status, 400);
  assert.equal((await authorize({ state: "c", client_id: "someone-else", code_challenge: challenge, code_challenge_method: "S256" })).get("error"), "unauthorized_client");
});

test("failNextAuthorize makes the next authorize redirect with the error and the state, once", async () => {
  oidc.failNextAuthorize("access_denied");
  const { challenge } = pkce();
  const q = await authorize({ state: "denied", code_challenge: challenge, code_challenge_method: "S256" });
  assert.equal(q.get("error"), "access_denied");
  assert.equal(q.get("state"), "denied");
  assert.equal(q.get("code"), null);
  assert.ok((await authorize({ state: "ok", code_challenge: challenge, code_challenge_method: "S256" })).get("code"));
});

test("the discord and x stub userinfo routes answer for an issued access token only", async () => {
  const answer = await login({ sub: "discord-7", username: "alice0", name: "Alice" });
  const auth = { authorization: `Bearer ${answer.access_token}` };
  const discord = await fetch(`${oidc.url}/discord/users/@me`, { headers: auth });
  assert.equal(discord.status, 200);
  const d = await discord.json();
  assert.equal(d.id, "discord-7");
  assert.equal(d.username, "alice0");
  const x = await (await fetch(`${oidc.url}/x/2/users/me`, { headers: auth })).json();
  assert.deepEqual(x, { data: { id: "discord-7", name: "Alice", username: "alice0" } });

  for (const path of ["/discord/users/@me", "/x/2/users/me", "/userinfo"]) {
    assert.equal((await fetch(`${oidc.url}${path}`)).status, 401, `${path} without a token`);
    assert.equal((await fetch(`${oidc.url}${path}`, { headers: { authorization: "Bearer forged" } })).status, 401, `${path} with a forged token`);
  }
});

test("the provider answers on localhost whether it resolves to 127.0.0.1 or ::1", async () => {
  const v4 = await fetch(`http://127.0.0.1:${oidc.port}/jwks`);
  assert.equal(v4.status, 200);
  const v6 = await fetch(`http://[::1]:${oidc.port}/jwks`).then((r) => r.status, () => "no IPv6 on this host");
  assert.ok(v6 === 200 || v6 === "no IPv6 on this host", String(v6));
});

test("holdAuthorize keeps /authorize waiting until released", async () => {
  const held = oidc.holdAuthorize();
  const { challenge } = pkce();
  let answered = false;
  const before = oidc.authorizations.length;
  const pending = authorize({ state: "held", code_challenge: challenge, code_challenge_method: "S256" }).then((q) => ((answered = true), q));
  await held.reached;
  assert.equal(oidc.authorizations[before]?.state, "held", "a held request's query is already recorded");
  // The probe, instead of a sleep: a request that arrived after the held one is answered, so an
  // /authorize that was not held would have been answered by now too.
  const discovery = await fetch(`${oidc.url}/.well-known/openid-configuration`);
  assert.equal(discovery.status, 200);
  await discovery.json();
  assert.equal(answered, false, "still held");
  held.release();
  assert.ok((await pending).get("code"));
});

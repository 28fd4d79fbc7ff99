// A local OpenID Connect / OAuth 2.0 provider for the embedded wallet's social-login tests, on npm
// `oauth2-mock-server` (its OAuth2Service: discovery, /authorize, /token, /jwks, /userinfo, RS256
// keys), made stricter where the tests need proof of what the gateway does:
//
// * /authorize auto-approves (no login page) and redirects to `redirect_uri` with `code` and `state`,
//   but only for PKCE S256: a missing `code_challenge` or another method redirects with
//   `error=invalid_request` instead of a code.
// * /token answers only with the matching `code_verifier` and the same `redirect_uri` as the
//   authorize request (400 `invalid_grant` otherwise); a code is good once. The id_token (RS256,
//   signed by a key in /jwks) carries `iss`, `aud` = the client id, `sub`, `email`,
//   `email_verified`, `name`, and the `nonce` given to /authorize.
// * Stub userinfo routes of providers that have no id_token, answering only for an access token
//   this provider issued: GET /discord/users/@me → `{ id, username }` and GET /x/2/users/me →
//   `{ data: { id, name, username } }` (401 otherwise), and the OIDC /userinfo with the claims.
//
//   const oidc = await startOidcProvider();   // oidc.url === oidc.issuer === "http://localhost:<port>"
//   oidc.setNextUser({ sub: "g-1", email: "alice@example.test", username: "alice0" });
//   oidc.failNextAuthorize("access_denied");  // the next /authorize redirects with this error
//   oidc.authorizations                        // what each /authorize asked, in order
//   const held = oidc.holdAuthorize(); await held.reached; ...; held.release();
//   await oidc.stop();
//
// It listens on 127.0.0.1 and, when the host has IPv6, on [::1] at the same port, so
// `localhost` reaches it whichever address a client resolves first.

import { createServer } from "node:http";
import { OAuth2Issuer, OAuth2Service } from "oauth2-mock-server";

export const DEFAULT_USER = Object.freeze({ sub: "oidc-user-1", email: "alice@example.test", name: "Alice", username: "alice0" });

function listen(server, port, host) {
  return new Promise((ok, fail) => {
    server.once("error", fail);
    server.listen(port, host, () => {
      server.removeListener("error", fail);
      ok(server.address().port);
    });
  });
}

const closeServer = (server) => new Promise((ok) => (server.listening ? server.close(() => ok()) : ok()));

/**
 * Starts the provider on a free port. `clientId` (optional): when given, /authorize and /token
 * refuse any other client id.
 */
export async function startOidcProvider({ clientId } = {}) {
  const issuer = new OAuth2Issuer();
  await issuer.keys.generate("RS256");
  const service = new OAuth2Service(issuer);

  let nextUser = { ...DEFAULT_USER };
  let nextError = null;
  /** code → { user, redirectUri, challenge } for codes not yet exchanged. */
  const codes = new Map();
  /** access token → user. */
  const tokens = new Map();
  const authorizations = [];

  service.on("beforeAuthorizeRedirect", ({ url }, req) => {
    const q = new URL(req.url, "http://localhost").searchParams;
    const code = url.searchParams.get("code");
    const refuse = (error, description) => {
      url.searchParams.delete("code");
      url.searchParams.set("error", error);
      if (description) url.searchParams.set("error_description", description);
    };
    if (!code) return;
    if (nextError) {
      refuse(nextError);
      nextError = null;
    } else if (!q.get("code_challenge") || q.get("code_challenge_method") !== "S256") {
      refuse("invalid_request", "PKCE with S256 is required");
    } else if (clientId && q.get("client_id") !== clientId) {
      refuse("unauthorized_client");
    } else {
      codes.set(code, { user: { ...nextUser }, redirectUri: q.get("redirect_uri") });
    }
  });

  // Both tokens (access and id) are signed through here: the user's claims go into both.
  service.on("beforeTokenSigning", (token, req) => {
    const pending = req.body?.code ? codes.get(req.body.code) : undefined;
    if (!pending) return;
    const { sub, email, name } = pending.user;
    Object.assign(token.payload, { sub, ...(email ? { email, email_verified: true } : {}), ...(name ? { name } : {}) });
  });

  service.on("beforeResponse", (response, req) => {
    const body = req.body ?? {};
    if (body.grant_type !== "authorization_code") return;
    const pending = codes.get(body.code);
    codes.delete(body.code);
    const invalid = (description) => {
      response.statusCode = 400;
      response.body = { error: "invalid_grant", error_description: description };
    };
    // The library checks the verifier only when one is sent: a code issued for a challenge must get one.
    if (!pending) return invalid("unknown or used code");
    if (typeof body.code_verifier !== "string") return invalid("code_verifier required");
    if (body.redirect_uri !== pending.redirectUri) return invalid("redirect_uri differs from the authorize request");
    const basic = req.headers.authorization?.startsWith("Basic ") ? Buffer.from(req.headers.authorization.slice(6), "base64").toString().split(":")[0] : undefined;
    if (clientId && (body.client_id ?? decodeURIComponent(basic ?? "")) !== clientId) return invalid("wrong client");
    tokens.set(response.body.access_token, pending.user);
  });

  const bearerUser = (req) => {
    const m = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "");
    return m ? tokens.get(m[1]) : undefined;
  };
  const json = (res, status, body) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const unauthorized = (res) => json(res, 401, { message: "401: Unauthorized", code: 0 });

  service.on("beforeUserinfo", (response, req) => {
    const user = bearerUser(req);
    if (!user) {
      response.statusCode = 401;
      response.body = { error: "invalid_token" };
      return;
    }
    response.body = { sub: user.sub, ...(user.email ? { email: user.email, email_verified: true } : {}), ...(user.name ? { name: user.name } : {}) };
  });
  service.addRoute("GET", "/discord/users/@me", (req, res) => {
    const user = bearerUser(req);
    if (!user) return unauthorized(res);
    json(res, 200, { id: user.sub, username: user.username, global_name: user.name ?? null, discriminator: "0" });
  });
  service.addRoute("GET", "/x/2/users/me", (req, res) => {
    const user = bearerUser(req);
    if (!user) return unauthorized(res);
    json(res, 200, { data: { id: user.sub, name: user.name ?? user.username, username: user.username } });
  });

  // /authorize can be held (a popup left waiting on the provider, as a visitor reading its page).
  let hold = null;
  const handler = (req, res) => {
    const asked = new URL(req.url, "http://localhost");
    // Recorded on arrival, so a test holding /authorize already knows the request's state.
    if (asked.pathname === "/authorize") authorizations.push(Object.fromEntries(asked.searchParams));
    if (hold && asked.pathname === "/authorize") {
      const h = hold;
      h.reached();
      h.released.then(() => service.requestHandler(req, res));
      return;
    }
    service.requestHandler(req, res);
  };
  const v4 = createServer(handler);
  const port = await listen(v4, 0, "127.0.0.1");
  const v6 = createServer(handler);
  const hasV6 = await listen(v6, port, "::1").then(
    () => true,
    () => false,
  );
  const url = `http://localhost:${port}`;
  issuer.url = url;

  return {
    url,
    issuer: url,
    port,
    /** What every /authorize request asked (its query), in order of arrival (held ones included). */
    authorizations,
    /** The user of the logins that follow (until set again); merged over DEFAULT_USER. */
    setNextUser(claims) {
      nextUser = { ...DEFAULT_USER, ...claims };
    },
    /** The next /authorize redirects with `error` (e.g. "access_denied") instead of a code. */
    failNextAuthorize(error = "access_denied") {
      nextError = error;
    },
    /**
     * Holds every /authorize request until `release()`: `reached` resolves when one arrives. For a
     * test that acts while the login popup is still on the provider.
     */
    holdAuthorize() {
      let release;
      let reached;
      const released = new Promise((ok) => (release = ok));
      const arrived = new Promise((ok) => (reached = ok));
      hold = { released, reached };
      return {
        reached: arrived,
        release() {
          hold = null;
          release();
        },
      };
    },
    async stop() {
      hold?.reached();
      for (const s of [v4, v6]) s.closeAllConnections?.();
      await closeServer(v4);
      if (hasV6) await closeServer(v6);
    },
  };
}

// The secure frame's page (frame.html on the frame origin): registers a per-page HPKE key with the
// frame API, tells the page that embedded it FRAME_READY, then answers that page's requests
// (protocol.ts) one message at a time. It talks only to the origin that embedded it
// (`location.ancestorOrigins[0]`, which the gateway's frame-ancestors policy limits to the
// project's origins) and only to `window.parent`; without an ancestor origin it does nothing.

import { ApiError, createPost, otpErrorMessage } from "./api";
import { createApprovalRequester } from "./approvalWindow";
import { openDeviceStore } from "./deviceStore";
import { frameKeyPair, publicKeyText } from "./hpke";
import { newMessageId, PROTOCOL_VERSION, readHostMessage, type FrameAnswers, type HostMessage, type HostRequestType } from "./protocol";
import { createLoginSlot, performRequest, type FrameContext } from "./wallet";

async function start() {
  const query = new URLSearchParams(location.search);
  const parentOrigin = location.ancestorOrigins?.[0];
  const status = document.getElementById("status");
  if (!parentOrigin || window.parent === window) {
    if (status) status.textContent = "This page works only inside the Vestibule modal.";
    return;
  }
  const debug = query.get("enableLogger") === "true";
  const log = (what: string) => {
    // Only message types and outcomes: never OTPs, shares, keys or tokens.
    if (debug) console.debug(`[vestibule frame] ${what}`);
  };
  const post = createPost(fetch.bind(window), location.origin);
  const store = openDeviceStore();
  const keyPair = await frameKeyPair();
  const sessionId = query.get("sessionId") ?? "";
  // The previous frame of this session in this tab (a page reload) handed its login on through
  // the frame origin's session storage: the host page cannot read it.
  const tokenKey = `vestibule-frame-token:${sessionId}`;
  const resumeToken = readStored(tokenKey);
  const registered = await post("/api/frames", {
    sessionId,
    hpkePublicKey: await publicKeyText(keyPair),
    deviceWallets: await store.walletIds().catch(() => []),
    ...(resumeToken ? { resumeToken } : {}),
  });
  const frameId = registered !== null && typeof registered === "object" && "frameId" in registered && typeof registered.frameId === "string" ? registered.frameId : null;
  const frameToken = registered !== null && typeof registered === "object" && "frameToken" in registered && typeof registered.frameToken === "string" ? registered.frameToken : null;
  if (!frameId || !frameToken) throw new ApiError("bad_answer", "The frame registration was not understood");
  const ctx: FrameContext = { frameId, frameToken, keyPair, post, store };
  writeStored(tokenKey, frameToken);
  const login = createLoginSlot(ctx);
  // A login (the page's code, social result, ...) verified by the frame API: kept, and handed on
  // to a reload (a SIGN_OUT stops that).
  const verified = async (verify: () => Promise<unknown>) => {
    const done = await login.verify(verify);
    writeStored(tokenKey, frameToken);
    return done;
  };
  // A resumed login with a wallet: rebuild it now, before FRAME_READY, so the session's re-sync
  // of the connection finds the account. (One without a wallet yet is left to a new login.)
  const carried = registered !== null && typeof registered === "object" && "login" in registered ? registered.login : null;
  if (carried !== null && typeof carried === "object" && "wallet" in carried && carried.wallet) {
    await login.verify(async () => carried).catch(() => null);
  }
  const root = document.getElementById("approval") ?? document.body;
  const approval = createApprovalRequester(document, root, { site: parentOrigin });

  const send = (message: object) => window.parent.postMessage(message, parentOrigin);
  const answer = <T extends HostRequestType>(id: string, type: T, payload: FrameAnswers[T]) => send({ vestibule: PROTOCOL_VERSION, id, type: `${type}_SUCCESS`, payload });
  const refuse = (id: string, type: HostRequestType, message: string) => send({ vestibule: PROTOCOL_VERSION, id, type: `${type}_ERROR`, payload: { message } });

  async function handle(message: HostMessage) {
    const { id } = message;
    switch (message.type) {
      case "CONNECT_OTP":
      case "CONNECT_SOCIAL": {
        try {
          // A SIGN_OUT while the code is checked wins: the login is refused ("Login cancelled").
          const done = await verified(() =>
            message.type === "CONNECT_OTP"
              ? post("/api/email/verify", { frameToken, challengeId: message.payload.challengeId, otp: message.payload.otp })
              : post("/api/social/complete", { frameToken, resultUri: message.payload.resultUri }),
          );
          return answer(id, message.type, { address: done.eip155Address });
        } catch (e) {
          return refuse(id, message.type, message.type === "CONNECT_OTP" ? otpErrorMessage(e) : e instanceof Error ? e.message : "Failed to connect");
        }
      }
      case "CONNECT_FARCASTER":
        try {
          // The server waits for the Farcaster app's signature (it polls the relay) and checks it.
          const done = await verified(() => post("/api/farcaster/complete", { frameToken }));
          return answer(id, "CONNECT_FARCASTER", { address: done.eip155Address });
        } catch {
          return refuse(id, "CONNECT_FARCASTER", "Failed to connect to farcaster");
        }
      case "UPDATE_EMAIL_OTP":
        try {
          await post("/api/email/update/verify", { frameToken, step: message.payload.step, otp: message.payload.otp });
          return answer(id, "UPDATE_EMAIL_OTP", {});
        } catch (e) {
          return refuse(id, "UPDATE_EMAIL_OTP", otpErrorMessage(e));
        }
      case "RPC_REQUEST": {
        // Taken now: a request still being read when the host hides the page is not shown after.
        const ticket = approval.ticket();
        const outcome = await performRequest(ctx, login.current(), message.payload, (text) => approval.ask(text, ticket));
        log(`RPC_REQUEST ${message.payload.kind.type}: ${outcome.status}`);
        return answer(id, "RPC_REQUEST", { outcome });
      }
      case "SHOW_APPROVAL":
        approval.setTheme(message.payload.theme);
        return answer(id, "SHOW_APPROVAL", {});
      case "HIDE_APPROVAL":
        approval.cancel();
        return answer(id, "HIDE_APPROVAL", {});
      case "SIGN_OUT":
        // A request still waiting (its window perhaps open) is rejected: signed out, nothing signs.
        // A login still being verified is cancelled: it completes with nothing kept.
        approval.cancel();
        login.signOut();
        removeStored(tokenKey);
        return answer(id, "SIGN_OUT", {});
      case "SYNC_THEME":
        approval.setTheme(message.payload.themeMode);
        return;
    }
  }

  window.addEventListener("message", (event) => {
    if (event.origin !== parentOrigin || event.source !== window.parent) return;
    const message = readHostMessage(event.data);
    if (!message) return log("dropped a message that does not match the schema");
    log(message.type);
    void handle(message);
  });
  send({ vestibule: PROTOCOL_VERSION, id: newMessageId(), type: "FRAME_READY", payload: { frameId } });
}

// Session storage can be refused (storage blocked for third-party frames): the frame then works,
// and a reload asks for a new login.
function readStored(key: string): string | null {
  try {
    return sessionStorage.getItem(key);
  } catch {
    return null;
  }
}
function writeStored(key: string, value: string) {
  try {
    sessionStorage.setItem(key, value);
  } catch {
    /* see readStored */
  }
}
function removeStored(key: string) {
  try {
    sessionStorage.removeItem(key);
  } catch {
    /* see readStored */
  }
}

void start().catch((e: unknown) => {
  const status = document.getElementById("status");
  if (status) status.textContent = e instanceof Error ? e.message : "The embedded wallet could not start";
});

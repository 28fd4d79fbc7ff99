// The secure frame's page (frame.html on the frame origin): registers a per-page HPKE key with the
// frame API, tells the page that embedded it FRAME_READY, then answers that page's requests
// (protocol.ts) one message at a time. It talks only to the origin that embedded it
// (`location.ancestorOrigins[0]`, which the gateway's frame-ancestors policy limits to the
// project's origins) and only to `window.parent`; without an ancestor origin it does nothing.

import { ApiError, createPost, otpErrorMessage } from "./api";
import { createApprovalPage } from "./approval";
import { openDeviceStore } from "./deviceStore";
import { frameKeyPair, publicKeyText } from "./hpke";
import { newMessageId, PROTOCOL_VERSION, readHostMessage, type FrameAnswers, type HostMessage, type HostRequestType } from "./protocol";
import { completeLogin, performRequest, type FrameContext, type FrameLogin } from "./wallet";

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
  const registered = await post("/api/frames", {
    sessionId: query.get("sessionId") ?? "",
    hpkePublicKey: await publicKeyText(keyPair),
    deviceWallets: await store.walletIds().catch(() => []),
  });
  const frameId = registered !== null && typeof registered === "object" && "frameId" in registered && typeof registered.frameId === "string" ? registered.frameId : null;
  const frameToken = registered !== null && typeof registered === "object" && "frameToken" in registered && typeof registered.frameToken === "string" ? registered.frameToken : null;
  if (!frameId || !frameToken) throw new ApiError("bad_answer", "The frame registration was not understood");
  const ctx: FrameContext = { frameId, frameToken, keyPair, post, store };
  let login: FrameLogin | null = null;
  const root = document.getElementById("approval") ?? document.body;
  const approval = createApprovalPage(document, root);

  const send = (message: object) => window.parent.postMessage(message, parentOrigin);
  const answer = <T extends HostRequestType>(id: string, type: T, payload: FrameAnswers[T]) => send({ vestibule: PROTOCOL_VERSION, id, type: `${type}_SUCCESS`, payload });
  const refuse = (id: string, type: HostRequestType, message: string) => send({ vestibule: PROTOCOL_VERSION, id, type: `${type}_ERROR`, payload: { message } });

  async function handle(message: HostMessage) {
    const { id } = message;
    switch (message.type) {
      case "CONNECT_OTP":
      case "CONNECT_SOCIAL": {
        try {
          const result =
            message.type === "CONNECT_OTP"
              ? await post("/api/email/verify", { frameToken, challengeId: message.payload.challengeId, otp: message.payload.otp })
              : await post("/api/social/complete", { frameToken, resultUri: message.payload.resultUri });
          login = await completeLogin(ctx, result);
          return answer(id, message.type, { address: login.eip155Address });
        } catch (e) {
          return refuse(id, message.type, message.type === "CONNECT_OTP" ? otpErrorMessage(e) : e instanceof Error ? e.message : "Failed to connect");
        }
      }
      case "UPDATE_EMAIL_OTP":
        try {
          await post("/api/email/update/verify", { frameToken, step: message.payload.step, otp: message.payload.otp });
          return answer(id, "UPDATE_EMAIL_OTP", {});
        } catch (e) {
          return refuse(id, "UPDATE_EMAIL_OTP", otpErrorMessage(e));
        }
      case "RPC_REQUEST": {
        const outcome = await performRequest(ctx, login, message.payload, (text) => approval.ask(text));
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
        login = null;
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

void start().catch((e: unknown) => {
  const status = document.getElementById("status");
  if (status) status.textContent = e instanceof Error ? e.message : "The embedded wallet could not start";
});

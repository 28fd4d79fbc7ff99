// @vitest-environment happy-dom
// The core's handle on the secure frame: when the session's embedded user goes (Disconnect of the
// auth connector), or a login under way ends with no user (cancelled, failed: the frame may have
// verified the code already), the frame is told SIGN_OUT, once, without waiting for its answer.

import { afterEach, beforeAll, expect, it, vi } from "vitest";
import type { SessionState } from "../../generated/SessionState";
import type { EmbeddedUser } from "../../generated/EmbeddedUser";
import type { LoginState } from "../../generated/LoginState";
import { withEmbedded } from "../../testing/embedded";
import { connectedState } from "../../testing/stateView";
import { createEmbeddedShell } from "./secureFrameHost";

/** How long a wait may take at most: patience on a busy machine, not an expected speed. */
const PATIENCE = { timeout: 30_000 };

const requests: { type: string; payload: unknown }[] = [];
vi.mock("./secureFrame", () => ({
  createSecureFrameBridge: () => ({
    request: (type: string, payload: unknown) => {
      requests.push({ type, payload });
      return new Promise(() => undefined); // never answered: fire and forget
    },
    place: () => undefined,
  }),
}));

const USER: EmbeddedUser = { userId: "u1", email: "me@example.com", provider: "email", preferredAccountType: "eoa" };
let base: SessionState;
beforeAll(async () => {
  const s = await connectedState();
  base = { ...s, options: { ...s.options, features: { ...s.options.features, email: true } } };
});
afterEach(() => void requests.splice(0));

// No sleeps: every SIGN_OUT goes through the same promise (the bridge's import), in the order the
// states were followed, so a later, expected SIGN_OUT arriving proves that none came before it.
const SIGN_OUT = { type: "SIGN_OUT", payload: {} };

it("sends SIGN_OUT to the frame when the embedded user disappears, once", async () => {
  const abort = new AbortController();
  const shell = createEmbeddedShell(window, () => undefined, abort.signal, "demo");
  shell.follow(withEmbedded(base), "s1");
  shell.follow(withEmbedded(base, { user: USER }), "s1");
  shell.follow(withEmbedded(base, { user: USER }), "s1");
  shell.follow(withEmbedded(base), "s1");
  shell.follow(withEmbedded(base), "s1");
  // The probe: signed in and out again, a second SIGN_OUT. Seeing exactly two means the user's
  // arrival sent nothing and the repeated signed-out state did not send again.
  shell.follow(withEmbedded(base, { user: USER }), "s1");
  shell.follow(withEmbedded(base), "s1");
  await vi.waitFor(() => expect(requests).toHaveLength(2), PATIENCE);
  expect(requests).toEqual([SIGN_OUT, SIGN_OUT]);
  abort.abort();
});

it("sends nothing when no user was signed in", async () => {
  const shell = createEmbeddedShell(window, () => undefined, new AbortController().signal, "demo");
  shell.follow(withEmbedded(base), "s1");
  shell.follow(withEmbedded(base), "s1");
  // The probe: a user who signs in and out afterwards is told SIGN_OUT, and that is all there is.
  shell.follow(withEmbedded(base, { user: USER }), "s1");
  shell.follow(withEmbedded(base), "s1");
  await vi.waitFor(() => expect(requests).toHaveLength(1), PATIENCE);
  expect(requests).toEqual([SIGN_OUT]);
});

// A login under way as the session records it (actors: embedded_wallet::evolve).
const sending: LoginState = { status: "sendingOtp", method: "email", email: "me@example.com", effectId: 1 };
const awaiting: LoginState = { status: "awaitingOtp", method: "email", email: "me@example.com", challengeId: "c1", step: "verifyOtp" };
const wrongCode: LoginState = { ...awaiting, message: "Invalid code", attemptsLeft: 2 };
const social: LoginState = { status: "socialPopup", method: "google", socialUrl: "https://accounts.example/auth" };
const login = (l: LoginState, user?: EmbeddedUser) => withEmbedded(base, { login: l, ...(user ? { user } : {}) });

it("sends SIGN_OUT, once, when a login under way is cancelled with no user (the frame may have verified the code)", async () => {
  // Given an email login waiting for the code the frame was given
  const shell = createEmbeddedShell(window, () => undefined, new AbortController().signal, "demo");
  shell.follow(withEmbedded(base), "s1");
  shell.follow(login(sending), "s1");
  shell.follow(login(awaiting), "s1");
  // When the visitor closes the modal: EmbeddedLoginCancelled, back to idle with no user (followed twice)
  shell.follow(withEmbedded(base), "s1");
  shell.follow(withEmbedded(base), "s1");
  // Then the frame is told SIGN_OUT. The probe: a social login failing afterwards (popup closed)
  // sends a second one; seeing exactly two means the cancel sent one, not two.
  shell.follow(login(social), "s1");
  shell.follow(login({ status: "failed", message: "Popup closed" }), "s1");
  await vi.waitFor(() => expect(requests).toHaveLength(2), PATIENCE);
  expect(requests).toEqual([SIGN_OUT, SIGN_OUT]);
});

it("sends nothing for a rejected code that keeps the login under way", async () => {
  // Given an email login waiting for the code
  const shell = createEmbeddedShell(window, () => undefined, new AbortController().signal, "demo");
  shell.follow(withEmbedded(base), "s1");
  shell.follow(login(sending), "s1");
  shell.follow(login(awaiting), "s1");
  // When a wrong code is rejected twice (the visitor may type it again: still awaitingOtp, no user)
  shell.follow(login(wrongCode), "s1");
  shell.follow(login({ ...wrongCode, attemptsLeft: 1 }), "s1");
  // Then nothing is sent. The probe: the same login cancelled afterwards sends SIGN_OUT, and that
  // is all there is.
  shell.follow(withEmbedded(base), "s1");
  await vi.waitFor(() => expect(requests).toHaveLength(1), PATIENCE);
  expect(requests).toEqual([SIGN_OUT]);
});

it("sends nothing for a login that succeeds", async () => {
  // Given an email login waiting for the code
  const shell = createEmbeddedShell(window, () => undefined, new AbortController().signal, "demo");
  shell.follow(withEmbedded(base), "s1");
  shell.follow(login(awaiting), "s1");
  // When the code verifies: a user without a wallet yet, then the wallet bound
  shell.follow(login({ status: "creatingWallet", method: "email", deadlineMs: 1 }, USER), "s1");
  shell.follow(login({ status: "connected", method: "email" }, USER), "s1");
  shell.follow(login({ status: "connected", method: "email" }, USER), "s1");
  // Then nothing is sent. The probe: a Disconnect afterwards (the user gone) sends one SIGN_OUT,
  // and a second login cancelled another: exactly two.
  shell.follow(withEmbedded(base), "s1");
  shell.follow(login(awaiting), "s1");
  shell.follow(withEmbedded(base), "s1");
  await vi.waitFor(() => expect(requests).toHaveLength(2), PATIENCE);
  expect(requests).toEqual([SIGN_OUT, SIGN_OUT]);
});

it("sends SIGN_OUT once when the user goes while a login is under way (signed out while creating the wallet)", async () => {
  // Given a verified user whose wallet the frame is creating
  const shell = createEmbeddedShell(window, () => undefined, new AbortController().signal, "demo");
  shell.follow(withEmbedded(base), "s1");
  shell.follow(login(awaiting), "s1");
  shell.follow(login({ status: "creatingWallet", method: "email", deadlineMs: 1 }, USER), "s1");
  // When the session signs out (EmbeddedSignedOut: no user, login idle: both at once)
  shell.follow(withEmbedded(base), "s1");
  // Then one SIGN_OUT. The probe: a later login cancelled sends the second, and that is all.
  shell.follow(login(awaiting), "s1");
  shell.follow(withEmbedded(base), "s1");
  await vi.waitFor(() => expect(requests).toHaveLength(2), PATIENCE);
  expect(requests).toEqual([SIGN_OUT, SIGN_OUT]);
});

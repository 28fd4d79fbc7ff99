// @vitest-environment happy-dom
// The core's handle on the secure frame: when the session's embedded user goes (Disconnect of the
// auth connector), the frame is told SIGN_OUT, once, without waiting for its answer.

import { afterEach, beforeAll, expect, it, vi } from "vitest";
import type { SessionState } from "../../generated/SessionState";
import type { EmbeddedUser } from "../../generated/EmbeddedUser";
import { withEmbedded } from "../../testing/embedded";
import { connectedState } from "../../testing/stateView";
import { createEmbeddedShell } from "./secureFrameHost";

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
  await vi.waitFor(() => expect(requests).toHaveLength(2));
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
  await vi.waitFor(() => expect(requests).toHaveLength(1));
  expect(requests).toEqual([SIGN_OUT]);
});

// @vitest-environment happy-dom
// The social popup with a fake page and popup: opened on the frame origin's /loading before the
// session is asked, sent to the provider's URL when the session names it, the result accepted only
// from the frame origin and the popup's own window, a closed popup reported once.

import { act } from "@testing-library/react";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { ClientCommand } from "../../generated/ClientCommand";
import type { LoginState } from "../../generated/LoginState";
import type { SessionState } from "../../generated/SessionState";
import { SOCIAL_RESULT } from "../../frame/protocol";
import { FRAME_ORIGIN, fakeFrame, withEmbedded } from "../../testing/embedded";
import { connectedState, onView, stateView, type StateView } from "../../testing/stateView";
import { CLOSED_CHECK_MS, CONNECT_FAILED, openSocialPopup, startSocialLogin, type SocialMessage, type SocialPage } from "./socialPopup";

const RESULT_URI = `${FRAME_ORIGIN}/oauth/callback?code=a&state=b`;
const GOOGLE_URL = "https://accounts.google.example/o/oauth2/auth?state=b";

function fakePage() {
  const log: string[] = [];
  const listeners = new Set<(event: SocialMessage) => void>();
  const popup = {
    closed: false,
    location: { href: "" },
    close: vi.fn(() => {
      popup.closed = true;
    }),
  };
  const page: SocialPage = {
    open: vi.fn((url: string, target: string, features: string) => {
      log.push(`open ${url} ${target} ${features}`);
      return popup;
    }),
    addEventListener: (_type, listener) => void listeners.add(listener),
    removeEventListener: (_type, listener) => void listeners.delete(listener),
  };
  const post = (origin: string, source: unknown, data: unknown) => listeners.forEach((l) => l({ origin, source, data }));
  return { page, popup, log, listeners, post };
}

const waiting = (over: Partial<LoginState> = {}): LoginState => ({ status: "socialPopup", method: "google", ...over });

let commands: ClientCommand[];
beforeEach(() => {
  vi.useFakeTimers();
  commands = [];
});
afterEach(() => vi.useRealTimers());

function open(f: ReturnType<typeof fakePage>, connect: (uri: string) => Promise<unknown> = async () => ({ address: "0xabc" })) {
  return openSocialPopup("google", {
    page: f.page,
    frameOrigin: FRAME_ORIGIN,
    send: (c) => {
      f.log.push(`send ${c.type}`);
      commands.push(c);
    },
    connect,
  });
}

it("opens a 600x800 popup on the frame origin's /loading before asking the session", () => {
  const f = fakePage();
  open(f);
  expect(f.log[0]).toMatch(new RegExp(`^open ${FRAME_ORIGIN}/loading vestibule-social popup=yes,width=600,height=800,`));
  expect(f.log[1]).toBe("send ConnectSocial");
  expect(commands).toEqual([{ type: "ConnectSocial", provider: "google" }]);
});

it("sends the popup to the provider's URL once the session names it", () => {
  const f = fakePage();
  const s = open(f);
  s.follow({ status: "socialStarting", method: "google" });
  expect(f.popup.location.href).toBe("");
  s.follow(waiting({ socialUrl: GOOGLE_URL }));
  expect(f.popup.location.href).toBe(GOOGLE_URL);
});

it("hands the result to the frame (CONNECT_SOCIAL) and closes the popup after", async () => {
  const f = fakePage();
  const connect = vi.fn(async () => ({ address: "0xabc" }));
  const s = open(f, connect);
  s.follow(waiting({ socialUrl: GOOGLE_URL }));
  f.post(FRAME_ORIGIN, f.popup, { type: SOCIAL_RESULT, resultUri: RESULT_URI });
  expect(connect).toHaveBeenCalledWith(RESULT_URI);
  await vi.runAllTimersAsync();
  expect(f.popup.close).toHaveBeenCalled();
  expect(commands).toEqual([{ type: "ConnectSocial", provider: "google" }]);
  expect(f.listeners.size).toBe(0);
});

it("tells the session Failed to connect when the frame refuses the result", async () => {
  const f = fakePage();
  const s = open(f, async () => {
    throw new Error("state unknown");
  });
  s.follow(waiting());
  f.post(FRAME_ORIGIN, f.popup, { type: SOCIAL_RESULT, resultUri: RESULT_URI });
  await vi.runAllTimersAsync();
  expect(commands.slice(1)).toEqual([{ type: "EmbeddedRequestFailed", message: CONNECT_FAILED }]);
  expect(f.popup.closed).toBe(true);
});

it("ignores a result from a foreign origin", () => {
  const f = fakePage();
  const connect = vi.fn(async () => ({}));
  open(f, connect).follow(waiting());
  f.post("https://evil.example", f.popup, { type: SOCIAL_RESULT, resultUri: RESULT_URI });
  expect(connect).not.toHaveBeenCalled();
  expect(f.listeners.size).toBe(1);
});

it("ignores a result from the frame origin but another window", () => {
  const f = fakePage();
  const connect = vi.fn(async () => ({}));
  open(f, connect).follow(waiting());
  f.post(FRAME_ORIGIN, {}, { type: SOCIAL_RESULT, resultUri: RESULT_URI });
  f.post(FRAME_ORIGIN, null, { type: SOCIAL_RESULT, resultUri: RESULT_URI });
  expect(connect).not.toHaveBeenCalled();
});

it("ignores a message off the schema from the popup", () => {
  const f = fakePage();
  const connect = vi.fn(async () => ({}));
  open(f, connect).follow(waiting());
  f.post(FRAME_ORIGIN, f.popup, { type: SOCIAL_RESULT, resultUri: RESULT_URI, extra: 1 });
  f.post(FRAME_ORIGIN, f.popup, { type: "OTHER", resultUri: RESULT_URI });
  expect(connect).not.toHaveBeenCalled();
});

it("reports a closed popup once (SocialPopupClosed), checking every second", () => {
  const f = fakePage();
  const s = open(f);
  s.follow(waiting());
  vi.advanceTimersByTime(CLOSED_CHECK_MS);
  expect(commands).toHaveLength(1);
  f.popup.closed = true;
  vi.advanceTimersByTime(CLOSED_CHECK_MS);
  vi.advanceTimersByTime(5 * CLOSED_CHECK_MS);
  expect(commands).toEqual([{ type: "ConnectSocial", provider: "google" }, { type: "SocialPopupClosed" }]);
});

it("reports a closed popup only while the login waits for it", () => {
  const f = fakePage();
  const s = open(f);
  f.popup.closed = true;
  s.follow({ status: "idle" });
  vi.advanceTimersByTime(3 * CLOSED_CHECK_MS);
  expect(commands).toHaveLength(1);
  s.follow({ status: "socialStarting", method: "google" });
  vi.advanceTimersByTime(CLOSED_CHECK_MS);
  expect(commands.slice(1)).toEqual([{ type: "SocialPopupClosed" }]);
});

it("closes the popup when the session ends the login (Back, failure)", () => {
  const f = fakePage();
  const s = open(f);
  s.follow(waiting());
  s.follow({ status: "idle" });
  expect(f.popup.close).toHaveBeenCalled();
  vi.advanceTimersByTime(3 * CLOSED_CHECK_MS);
  expect(commands).toHaveLength(1);
});

it("after the result, the popup closing is not reported", async () => {
  const f = fakePage();
  const s = open(f);
  s.follow(waiting());
  f.post(FRAME_ORIGIN, f.popup, { type: SOCIAL_RESULT, resultUri: RESULT_URI });
  f.popup.closed = true;
  await vi.advanceTimersByTimeAsync(3 * CLOSED_CHECK_MS);
  expect(commands).toEqual([{ type: "ConnectSocial", provider: "google" }]);
});

describe("in the widget", () => {
  let base: SessionState;
  let view: StateView | null = null;
  beforeAll(async () => {
    vi.useRealTimers();
    base = withEmbedded(onView(await connectedState(), "Connect", []));
  });
  afterEach(() => {
    view?.stop();
    view = null;
  });

  it("follows the widget's mirrored login and sends the result to the frame through the bridge", async () => {
    const f = fakePage();
    view = stateView(base);
    const frame = fakeFrame({ CONNECT_SOCIAL: async () => ({ address: "0xabc" }) });
    startSocialLogin({ ...view.model, embedded: frame.host }, "github", f.page);
    expect(f.page.open).toHaveBeenCalledTimes(1);
    expect(view.commands).toEqual([{ type: "ConnectSocial", provider: "github" }]);
    const v = view;
    act(() => v.show(withEmbedded(base, { login: { status: "socialPopup", method: "github", socialUrl: GOOGLE_URL } })));
    expect(f.popup.location.href).toBe(GOOGLE_URL);
    f.post(FRAME_ORIGIN, f.popup, { type: SOCIAL_RESULT, resultUri: RESULT_URI });
    expect(frame.requests).toEqual([{ type: "CONNECT_SOCIAL", payload: { resultUri: RESULT_URI } }]);
  });
});

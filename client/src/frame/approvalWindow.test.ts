// @vitest-environment happy-dom
// What the frame does while a request waits (decision 1505): nothing in the frame approves. Its
// buttons reject, or open the approval window of the frame origin; only that window's decision,
// from that window, on that origin, for that request's nonce, settles the request.

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { APPROVAL_MAX_ROWS } from "./protocol";
import { APPROVAL_WINDOW_FEATURES, APPROVAL_WINDOW_PATH, createApprovalRequester, OPEN_WINDOW_LABEL, SITE_ROW, WINDOW_BLOCKED_HINT, WINDOW_OPEN_HINT, WINDOW_POLL_MS } from "./approvalWindow";

const ORIGIN = "https://frame.example";
const NONCE = "0123456789abcdef0123456789abcdef";
const TEXT = { title: "Sign a message", rows: [["Message", "hello"]] as Array<[string, string]> };

/** A window the frame opened (what it uses of one). */
function fakeWindow() {
  const posted: Array<{ message: unknown; targetOrigin: string }> = [];
  const win = {
    closed: false,
    focused: 0,
    posted,
    postMessage: (message: unknown, targetOrigin: string) => void posted.push({ message, targetOrigin }),
    close: () => void (win.closed = true),
    focus: () => void (win.focused += 1),
  };
  return win;
}
type FakeWindow = ReturnType<typeof fakeWindow>;

function frame({ blocked = false, site = null as string | null } = {}) {
  const root = document.createElement("div");
  document.body.replaceChildren(root);
  const opened: Array<{ url: string; name: string; win: FakeWindow }> = [];
  const requester = createApprovalRequester(document, root, {
    origin: ORIGIN,
    newNonce: () => NONCE,
    site,
    openWindow: (url, name) => {
      if (blocked) return null;
      const win = fakeWindow();
      opened.push({ url, name, win });
      // A stand-in for the WindowProxy the browser would give.
      return win as unknown as Window;
    },
  });
  const button = (name: string) => [...root.querySelectorAll("button")].find((b) => b.textContent === name);
  const click = (name: string) => button(name)?.dispatchEvent(new MouseEvent("click", { bubbles: true, detail: 1 }));
  /** A message to the frame, as the browser delivers it. */
  const receive = (data: unknown, source: unknown, origin = ORIGIN) => window.dispatchEvent(new MessageEvent("message", { data, origin, source: source as Window }));
  const hint = () => root.querySelector(".hint")?.textContent;
  return { root, requester, opened, button, click, receive, hint };
}

const READY = { vestibuleApproval: 1, type: "APPROVAL_WINDOW_READY" };
const decided = (approved: boolean, nonce = NONCE) => ({ vestibuleApproval: 1, type: "APPROVAL_DECIDED", nonce, approved });

async function state<T>(promise: Promise<T>): Promise<{ settled: false } | { settled: true; value: T } | { settled: true; error: unknown }> {
  let out: { settled: false } | { settled: true; value: T } | { settled: true; error: unknown } = { settled: false };
  promise.then((value) => (out = { settled: true, value }), (error: unknown) => (out = { settled: true, error }));
  await vi.advanceTimersByTimeAsync(0);
  return out;
}

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe("a request waiting in the frame", () => {
  it("given a request, when it is shown, then the frame shows what is asked with Reject and the window's button, and no Approve", async () => {
    const { requester, root, button } = frame();
    void requester.ask(TEXT);
    expect(root.hidden).toBe(false);
    expect(root.querySelector('dd[data-field="Message"]')?.textContent).toBe("hello");
    expect([...root.querySelectorAll("button")].map((b) => b.textContent)).toEqual(["Reject", OPEN_WINDOW_LABEL]);
    expect(button("Approve")).toBeUndefined();
  });

  it("given the window's button clicked, when the window says it is ready, then it gets the request with its nonce and theme; its decision settles the request and the window closes", async () => {
    const { requester, opened, click, receive, hint, root } = frame();
    requester.setTheme("dark");
    const answer = requester.ask(TEXT);
    click(OPEN_WINDOW_LABEL);
    expect(opened.map(({ url, name }) => ({ url, name }))).toEqual([{ url: `${ORIGIN}${APPROVAL_WINDOW_PATH}`, name: `vestibule-approval-${NONCE}` }]);
    expect(APPROVAL_WINDOW_FEATURES).toContain("popup");
    expect(hint()).toBe(WINDOW_OPEN_HINT);
    const win = opened[0]!.win;
    receive(READY, win);
    expect(win.posted).toEqual([{ message: { vestibuleApproval: 1, type: "APPROVAL_SHOW", nonce: NONCE, theme: "dark", text: TEXT }, targetOrigin: ORIGIN }]);
    expect(await state(answer)).toEqual({ settled: false });
    receive(decided(true), win);
    expect(await state(answer)).toEqual({ settled: true, value: true });
    expect(win.closed).toBe(true);
    expect(root.hidden).toBe(true);
  });

  it("given the site that embeds the frame, when the window is ready, then the request it gets names that site first", () => {
    const { requester, opened, click, receive } = frame({ site: "https://dapp.example" });
    void requester.ask(TEXT);
    click(OPEN_WINDOW_LABEL);
    receive(READY, opened[0]!.win);
    expect(opened[0]!.win.posted[0]?.message).toMatchObject({ text: { title: TEXT.title, rows: [[SITE_ROW, "https://dapp.example"], ...TEXT.rows] } });
  });

  it("given an open window, when a decision comes from another window, another origin, with another nonce or out of schema, then nothing is settled; the window's own rejection is", async () => {
    const { requester, opened, click, receive } = frame();
    const answer = requester.ask(TEXT);
    click(OPEN_WINDOW_LABEL);
    const win = opened[0]!.win;
    const host = fakeWindow();
    receive(decided(true), host);
    receive(decided(true), window.parent);
    receive(decided(true), win, "https://host.example");
    receive(decided(true, "f".repeat(32)), win);
    receive({ ...decided(true), extra: 1 }, win);
    receive({ ...decided(true), approved: "true" }, win);
    receive(READY, host);
    expect(host.posted).toEqual([]);
    expect(await state(answer)).toEqual({ settled: false });
    receive(decided(false), win);
    expect(await state(answer)).toEqual({ settled: true, value: false });
  });

  it("given no window opened, when a well-formed decision arrives, then nothing is settled (only a window the frame opened decides)", async () => {
    const { requester, receive } = frame();
    const answer = requester.ask(TEXT);
    receive(decided(true), null);
    receive(decided(true), fakeWindow());
    expect(await state(answer)).toEqual({ settled: false });
  });

  it("given a blocked pop-up, when the button is clicked, then the frame says so and the request still waits", async () => {
    const { requester, click, hint } = frame({ blocked: true });
    const answer = requester.ask(TEXT);
    click(OPEN_WINDOW_LABEL);
    expect(hint()).toBe(WINDOW_BLOCKED_HINT);
    expect(await state(answer)).toEqual({ settled: false });
  });

  it("given an open window, when the button is clicked again, then that window is brought to the front; once the visitor closes it undecided, the button opens a new one", async () => {
    const { requester, opened, click, receive, hint } = frame();
    const answer = requester.ask(TEXT);
    click(OPEN_WINDOW_LABEL);
    click(OPEN_WINDOW_LABEL);
    expect(opened).toHaveLength(1);
    expect(opened[0]!.win.focused).toBe(1);
    opened[0]!.win.closed = true;
    await vi.advanceTimersByTimeAsync(WINDOW_POLL_MS);
    expect(hint()).toBe("");
    expect(await state(answer)).toEqual({ settled: false });
    click(OPEN_WINDOW_LABEL);
    expect(opened).toHaveLength(2);
    // The closed window's late message no longer counts; the new one's does.
    receive(decided(true), opened[0]!.win);
    expect(await state(answer)).toEqual({ settled: false });
    receive(decided(true), opened[1]!.win);
    expect(await state(answer)).toEqual({ settled: true, value: true });
  });

  it("given an open window, when Reject is clicked in the frame, then the request is rejected and the window closed", async () => {
    const { requester, opened, click } = frame();
    const answer = requester.ask(TEXT);
    click(OPEN_WINDOW_LABEL);
    click("Reject");
    expect(await state(answer)).toEqual({ settled: true, value: false });
    expect(opened[0]!.win.closed).toBe(true);
  });

  it("given an open window, when the host hides the approval, then the request is rejected and the window closed", async () => {
    const { requester, opened, click, root } = frame();
    const answer = requester.ask(TEXT);
    click(OPEN_WINDOW_LABEL);
    requester.cancel();
    expect(await state(answer)).toEqual({ settled: true, value: false });
    expect(opened[0]!.win.closed).toBe(true);
    expect(root.hidden).toBe(true);
  });

  it("given a request with more rows than the window shows, when it is asked, then it is refused (-32602) before anything is shown", async () => {
    const { requester, root } = frame({ site: "https://dapp.example" });
    const rows = Array.from({ length: APPROVAL_MAX_ROWS }, (_, i): [string, string] => [`Instruction ${i + 1}`, "Program 11111111111111111111111111111111"]);
    expect(await state(requester.ask({ title: "Sign a transaction", rows }))).toMatchObject({ settled: true, error: { code: -32602 } });
    expect(root.textContent).toBe("");
    // One row fewer (with the site's, the most the window takes) is shown.
    void requester.ask({ title: "Sign a transaction", rows: rows.slice(1) });
    expect(root.hidden).toBe(false);
  });

  it("given a pending request, when another arrives, then the newcomer is refused (-32002) and the frame keeps the first", async () => {
    const { requester, root } = frame();
    void requester.ask(TEXT);
    const second = requester.ask({ title: "Sign a message", rows: [["Message", "other"]] });
    expect(await state(second)).toMatchObject({ settled: true, error: { code: -32002 } });
    expect(root.textContent).toContain("hello");
    expect(root.textContent).not.toContain("other");
  });

  it("given a request that was still being prepared when the host hid the page, when it asks, then it is rejected without being shown", async () => {
    const { requester, root } = frame();
    const ticket = requester.ticket();
    requester.cancel();
    expect(await state(requester.ask(TEXT, ticket))).toEqual({ settled: true, value: false });
    expect(root.textContent).toBe("");
  });
});

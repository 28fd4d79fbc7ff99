// @vitest-environment happy-dom
// The approval window's page (decision 1505): the host page cannot cover it, but it can open windows
// of its own or have a double click land on it as it appears. Approve is armed only ARM_DELAY_MS
// after the window came to the front (shown and focused), is disarmed at once when it goes to the
// background, and a click whose press began before Approve was armed does not approve.

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ARM_DELAY_MS, createApprovalPage, NOT_IN_FRONT_HINT, NOT_OPENED_BY_FRAME, serveApprovalWindow, UNREADABLE_REQUEST } from "./approvalPage";

const TEXT = { title: "Send a transaction", rows: [["Value", "1 ETH"]] as Array<[string, string]> };

function page({ focused = true }: { focused?: boolean } = {}) {
  const root = document.createElement("div");
  document.body.replaceChildren(root);
  // What document.hasFocus() would say: the window is in front or not.
  let inFront = focused;
  const approval = createApprovalPage(document, root, { hasFocus: () => inFront });
  const button = (name: string) => [...root.querySelectorAll("button")].find((b) => b.textContent === name);
  // A mouse click is a press (pointerdown) and a release (click, detail 1) on the button.
  const press = (name: string) => button(name)?.dispatchEvent(new Event("pointerdown", { bubbles: true }));
  const release = (name: string) => button(name)?.dispatchEvent(new MouseEvent("click", { bubbles: true, detail: 1 }));
  const click = (name: string) => (press(name), release(name));
  // A keyboard activation (Enter or Space on the focused button): a click with detail 0, no press.
  const key = (name: string) => button(name)?.dispatchEvent(new MouseEvent("click", { bubbles: true, detail: 0 }));
  const hint = () => root.querySelector(".hint");
  // The window comes to the front or goes to the background (another window in front).
  const focus = () => ((inFront = true), window.dispatchEvent(new Event("focus")));
  const blur = () => ((inFront = false), window.dispatchEvent(new Event("blur")));
  return { root, approval, button, click, press, release, key, hint, focus, blur };
}

/** Whether `promise` settled (and how) once the microtasks ran. */
async function state<T>(promise: Promise<T>): Promise<{ settled: false } | { settled: true; value: T } | { settled: true; error: unknown }> {
  let out: { settled: false } | { settled: true; value: T } | { settled: true; error: unknown } = { settled: false };
  promise.then((value) => (out = { settled: true, value }), (error: unknown) => (out = { settled: true, error }));
  await vi.advanceTimersByTimeAsync(0);
  return out;
}

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe("approval page", () => {
  it("given a request just shown, when Approve is clicked at once, then nothing happens; the arming delay after that click, a click approves", async () => {
    const { approval, root, button, click } = page();
    const answer = approval.ask(TEXT);
    expect(root.querySelector('dd[data-field="Value"]')?.textContent).toBe("1 ETH");
    expect(ARM_DELAY_MS).toBeGreaterThanOrEqual(1000);
    expect(button("Approve")?.disabled).toBe(true);
    click("Approve");
    expect(await state(answer)).toEqual({ settled: false });
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS - 1);
    expect(button("Approve")?.disabled).toBe(true);
    await vi.advanceTimersByTimeAsync(1);
    expect(button("Approve")?.disabled).toBe(false);
    click("Approve");
    expect(await state(answer)).toEqual({ settled: true, value: true });
    expect(root.hidden).toBe(true);
  });

  it("given a visitor lured into clicking every 0.9 s, when the window shows a request, then no click ever finds Approve armed; after a pause of the arming delay, one does", async () => {
    const { approval, button, click } = page();
    const answer = approval.ask(TEXT);
    for (let i = 0; i < 20; i++) {
      click("Approve");
      expect(await state(answer)).toEqual({ settled: false });
      await vi.advanceTimersByTimeAsync(900);
    }
    expect(button("Approve")?.disabled).toBe(true);
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS - 900);
    click("Approve");
    expect(await state(answer)).toEqual({ settled: true, value: true });
  });

  it("given a request just shown, when Reject is clicked at once, then it is rejected (rejecting is always safe)", async () => {
    const { approval, click } = page();
    const answer = approval.ask(TEXT);
    click("Reject");
    expect(await state(answer)).toEqual({ settled: true, value: false });
  });

  it("given a press that began before Approve was armed, when it is released after, then the click does not approve", async () => {
    const { approval, click, press, release } = page();
    const answer = approval.ask(TEXT);
    press("Approve");
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS);
    release("Approve");
    expect(await state(answer)).toEqual({ settled: false });
    click("Approve");
    expect(await state(answer)).toEqual({ settled: true, value: true });
  });

  it("given an armed page, when the theme changes, then Approve waits the delay again", async () => {
    const { approval, click } = page();
    const answer = approval.ask(TEXT);
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS);
    approval.setTheme("dark");
    click("Approve");
    expect(await state(answer)).toEqual({ settled: false });
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS);
    click("Approve");
    expect(await state(answer)).toEqual({ settled: true, value: true });
  });

  it("given an armed page, when the window goes to the background, then Approve is disabled at once and says why; no click or key approves until it is in front again and the delay has passed", async () => {
    const { approval, button, click, key, hint, focus, blur } = page();
    const answer = approval.ask(TEXT);
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS);
    expect(button("Approve")?.disabled).toBe(false);
    expect(hint()?.textContent).toBe("");

    blur();
    expect(button("Approve")?.disabled).toBe(true);
    expect(hint()?.textContent).toBe(NOT_IN_FRONT_HINT);
    expect(button("Approve")?.getAttribute("aria-describedby")).toBe(hint()?.id);
    await vi.advanceTimersByTimeAsync(10 * ARM_DELAY_MS);
    click("Approve");
    key("Approve");
    expect(await state(answer)).toEqual({ settled: false });

    focus();
    expect(hint()?.textContent).toBe("");
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS - 1);
    key("Approve");
    expect(await state(answer)).toEqual({ settled: false });
    await vi.advanceTimersByTimeAsync(1);
    key("Approve");
    expect(await state(answer)).toEqual({ settled: true, value: true });
  });

  it("given a window that opened in the background, when the request is shown, then Approve waits for the window to come to the front, then the delay", async () => {
    const { approval, button, click, hint, focus } = page({ focused: false });
    const answer = approval.ask(TEXT);
    await vi.advanceTimersByTimeAsync(3 * ARM_DELAY_MS);
    expect(button("Approve")?.disabled).toBe(true);
    expect(hint()?.textContent).toBe(NOT_IN_FRONT_HINT);
    click("Approve");
    expect(await state(answer)).toEqual({ settled: false });
    focus();
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS);
    click("Approve");
    expect(await state(answer)).toEqual({ settled: true, value: true });
  });

  it("given a request shown, when another is asked, then the page refuses it and keeps the first", async () => {
    const { approval, root } = page();
    const first = approval.ask(TEXT);
    expect(await state(approval.ask({ title: "Other", rows: [["Value", "100 ETH"]] }))).toMatchObject({ settled: true });
    expect(root.textContent).toContain("1 ETH");
    expect(root.textContent).not.toContain("100 ETH");
    approval.cancel();
    expect(await state(first)).toEqual({ settled: true, value: false });
  });
});

describe("approval window", () => {
  const ORIGIN = window.location.origin;
  const NONCE = "0123456789abcdef0123456789abcdef";
  const show = (nonce = NONCE) => ({ vestibuleApproval: 1, type: "APPROVAL_SHOW", nonce, theme: "dark", text: TEXT });

  /** The window's document and its opener (the frame), as the browser would give them. */
  function approvalWindow(opener: { postMessage: (message: unknown, origin: string) => void } | null) {
    document.body.innerHTML = '<p id="status">Loading the request…</p><main id="approval" hidden></main>';
    window.name = "vestibule-approval-x";
    Object.defineProperty(window, "opener", { value: opener, configurable: true });
    const close = vi.spyOn(window, "close").mockImplementation(() => undefined);
    serveApprovalWindow(window, document, { hasFocus: () => true });
    const receive = (data: unknown, source: unknown, origin = ORIGIN) => window.dispatchEvent(new MessageEvent("message", { data, origin, source: source as Window }));
    const button = (name: string) => [...document.querySelectorAll("button")].find((b) => b.textContent === name);
    const click = (name: string) => (button(name)?.dispatchEvent(new Event("pointerdown", { bubbles: true })), button(name)?.dispatchEvent(new MouseEvent("click", { bubbles: true, detail: 1 })));
    return { receive, button, click, close };
  }
  afterEach(() => vi.restoreAllMocks());

  it("given a window the frame opened, when it starts, then it clears its name and tells its opener it is ready; the opener's request is shown, and the decision goes back with its nonce and the window closes", async () => {
    const posted: Array<[unknown, string]> = [];
    const opener = { postMessage: (message: unknown, origin: string) => void posted.push([message, origin]) };
    const { receive, button, click, close } = approvalWindow(opener);
    expect(window.name).toBe("");
    expect(posted).toEqual([[{ vestibuleApproval: 1, type: "APPROVAL_WINDOW_READY" }, ORIGIN]]);
    receive(show(), opener);
    expect(document.documentElement.dataset.theme).toBe("dark");
    expect(document.getElementById("status")?.textContent).toBe("");
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS);
    click("Approve");
    await vi.advanceTimersByTimeAsync(0);
    expect(posted[1]).toEqual([{ vestibuleApproval: 1, type: "APPROVAL_DECIDED", nonce: NONCE, approved: true }, ORIGIN]);
    expect(close).toHaveBeenCalled();
    expect(button("Approve")).toBeUndefined();
  });

  it("given a window the frame opened, when a request comes from another window, another origin or out of schema, then nothing is shown; a second request from the opener does not replace the first", async () => {
    const posted: unknown[] = [];
    const opener = { postMessage: (message: unknown) => void posted.push(message) };
    const { receive, button } = approvalWindow(opener);
    receive(show(), { postMessage: () => undefined });
    receive(show(), opener, "https://host.example");
    expect(button("Approve")).toBeUndefined();
    receive(show(), opener);
    expect(button("Approve")).toBeDefined();
    receive({ ...show("f".repeat(32)), text: { title: "Other", rows: [["Value", "100 ETH"]] } }, opener);
    expect(document.body.textContent).toContain("1 ETH");
    expect(document.body.textContent).not.toContain("100 ETH");
  });

  it("given a request from the opener that the window cannot read, then it says so and shows no Approve, whatever comes after", () => {
    const opener = { postMessage: () => undefined };
    const { receive, button } = approvalWindow(opener);
    receive({ ...show(), text: { title: "x", rows: [["Value", 5]] } }, opener);
    expect(document.getElementById("status")?.textContent).toBe(UNREADABLE_REQUEST);
    receive(show(), opener);
    expect(button("Approve")).toBeUndefined();
  });

  it("given a window nobody opened, when it starts, then it only says what it is for", () => {
    const { button } = approvalWindow(null);
    expect(document.getElementById("status")?.textContent).toBe(NOT_OPENED_BY_FRAME);
    expect(button("Approve")).toBeUndefined();
  });
});

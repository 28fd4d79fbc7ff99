// @vitest-environment happy-dom
// The approval page against clickjacking (a host page can place the frame under the visitor's
// cursor, and post requests whenever it likes): Approve is armed only ARM_DELAY_MS after the page
// (or its look) was shown, a request that comes while another waits is refused rather than swapped
// in under the cursor, and a request started before the host hid the page is not shown.

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ARM_DELAY_MS, createApprovalPage } from "./approval";

const TEXT = { title: "Send a transaction", rows: [["Value", "1 ETH"]] as Array<[string, string]> };
const OTHER = { title: "Send a transaction", rows: [["Value", "100 ETH"]] as Array<[string, string]> };

function page() {
  const root = document.createElement("div");
  document.body.replaceChildren(root);
  const approval = createApprovalPage(document, root);
  const button = (name: string) => [...root.querySelectorAll("button")].find((b) => b.textContent === name);
  // A mouse click is a press (pointerdown) and a release (click, detail 1) on the button.
  const press = (name: string) => button(name)?.dispatchEvent(new Event("pointerdown", { bubbles: true }));
  const release = (name: string) => button(name)?.dispatchEvent(new MouseEvent("click", { bubbles: true, detail: 1 }));
  const click = (name: string) => (press(name), release(name));
  return { root, approval, button, click, press, release };
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
  it("given a request just shown, when Approve is clicked at once, then nothing happens; after the arming delay the same click approves", async () => {
    const { approval, button, click } = page();
    const answer = approval.ask(TEXT);
    expect(ARM_DELAY_MS).toBeGreaterThanOrEqual(1000);
    expect(button("Approve")?.disabled).toBe(true);
    click("Approve");
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS - 1);
    click("Approve");
    expect(await state(answer)).toEqual({ settled: false });
    await vi.advanceTimersByTimeAsync(1);
    expect(button("Approve")?.disabled).toBe(false);
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

  it("given a pending approval, when another request arrives, then the newcomer is refused (-32002) and the page keeps the first, still armed", async () => {
    const { approval, root, click } = page();
    const first = approval.ask(TEXT);
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS);
    const second = approval.ask(OTHER);
    expect(await state(second)).toMatchObject({ settled: true, error: { code: -32002 } });
    expect(root.textContent).toContain("1 ETH");
    expect(root.textContent).not.toContain("100 ETH");
    click("Approve");
    expect(await state(first)).toEqual({ settled: true, value: true });
  });

  it("given an armed page, when the host shows the page again or changes its theme, then Approve waits the delay again", async () => {
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

  it("given a request that was still being prepared when the host hid the page, when it asks, then it is rejected without being shown", async () => {
    const { approval, root } = page();
    const ticket = approval.ticket();
    approval.cancel();
    expect(await state(approval.ask(TEXT, ticket))).toEqual({ settled: true, value: false });
    expect(root.textContent).toBe("");
  });
});

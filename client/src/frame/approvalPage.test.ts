// @vitest-environment happy-dom
// The approval page against clickjacking (a host page can place the frame under the visitor's
// cursor, and post requests whenever it likes): Approve is armed only ARM_DELAY_MS after the page
// (or its look) was shown, a request that comes while another waits is refused rather than swapped
// in under the cursor, and a request started before the host hid the page is not shown. Where the
// browser reports visibility (IntersectionObserver v2; a fake observer here), Approve is armed only
// while the page is reported visible, ARM_DELAY_MS after it last became so.

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ARM_DELAY_MS, createApprovalPage, NOT_VISIBLE_HINT, visibilityObserverFactory, type VisibilityObserverFactory } from "./approval";

const TEXT = { title: "Send a transaction", rows: [["Value", "1 ETH"]] as Array<[string, string]> };
const OTHER = { title: "Send a transaction", rows: [["Value", "100 ETH"]] as Array<[string, string]> };

/** An IntersectionObserver v2 stand-in: `report(visible)` delivers what the browser would. */
function fakeVisibility() {
  const made: Array<{ options: Parameters<VisibilityObserverFactory>[1]; targets: Element[]; disconnected: boolean; report(visible: boolean): void }> = [];
  const factory: VisibilityObserverFactory = (callback, options) => {
    const observer = {
      options,
      targets: [] as Element[],
      disconnected: false,
      observe: (target: Element) => void observer.targets.push(target),
      disconnect: () => void (observer.disconnected = true),
      report: (visible: boolean) => callback([{ isIntersecting: true, isVisible: visible }]),
    };
    made.push(observer);
    return observer;
  };
  return { factory, made, latest: () => made[made.length - 1] };
}

function page(observeVisibility?: VisibilityObserverFactory | null) {
  const root = document.createElement("div");
  document.body.replaceChildren(root);
  const approval = createApprovalPage(document, root, observeVisibility === undefined ? {} : { observeVisibility });
  const button = (name: string) => [...root.querySelectorAll("button")].find((b) => b.textContent === name);
  // A mouse click is a press (pointerdown) and a release (click, detail 1) on the button.
  const press = (name: string) => button(name)?.dispatchEvent(new Event("pointerdown", { bubbles: true }));
  const release = (name: string) => button(name)?.dispatchEvent(new MouseEvent("click", { bubbles: true, detail: 1 }));
  const click = (name: string) => (press(name), release(name));
  // A keyboard activation (Enter or Space on the focused button): a click with detail 0, no press.
  const key = (name: string) => button(name)?.dispatchEvent(new MouseEvent("click", { bubbles: true, detail: 0 }));
  const hint = () => root.querySelector(".hint");
  return { root, approval, button, click, press, release, key, hint };
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

describe("approval page where the browser reports visibility (IntersectionObserver v2)", () => {
  it("given a request just shown, when the browser has not reported yet, then Approve waits; once reported visible it arms ARM_DELAY_MS later", async () => {
    const seen = fakeVisibility();
    const { approval, root, button, click, hint } = page(seen.factory);
    const answer = approval.ask(TEXT);
    const observer = seen.latest();
    expect(observer.options).toMatchObject({ trackVisibility: true });
    expect(observer.options.delay).toBeGreaterThanOrEqual(100);
    expect(observer.targets).toEqual([root.querySelector("section")]);
    expect(observer.targets[0]?.contains(button("Approve") ?? null)).toBe(true);

    await vi.advanceTimersByTimeAsync(3 * ARM_DELAY_MS);
    expect(button("Approve")?.disabled).toBe(true);
    expect(hint()?.textContent).toBe("");
    click("Approve");
    expect(await state(answer)).toEqual({ settled: false });

    observer.report(true);
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS - 1);
    expect(button("Approve")?.disabled).toBe(true);
    await vi.advanceTimersByTimeAsync(1);
    expect(button("Approve")?.disabled).toBe(false);
    click("Approve");
    expect(await state(answer)).toEqual({ settled: true, value: true });
    expect(observer.disconnected).toBe(true);
  });

  it("given an armed page, when the host fades or covers the frame, then Approve is disabled at once and says why; no click or key approves until it is visible again and the delay has passed", async () => {
    const seen = fakeVisibility();
    const { approval, button, click, key, hint } = page(seen.factory);
    const answer = approval.ask(TEXT);
    seen.latest().report(true);
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS);
    expect(button("Approve")?.disabled).toBe(false);

    seen.latest().report(false);
    expect(button("Approve")?.disabled).toBe(true);
    expect(hint()?.textContent).toBe(NOT_VISIBLE_HINT);
    expect(hint()?.getAttribute("aria-live")).toBe("polite");
    expect(button("Approve")?.getAttribute("aria-describedby")).toBe(hint()?.id);
    await vi.advanceTimersByTimeAsync(10 * ARM_DELAY_MS);
    click("Approve");
    key("Approve");
    expect(await state(answer)).toEqual({ settled: false });

    seen.latest().report(true);
    expect(hint()?.textContent).toBe("");
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS - 1);
    click("Approve");
    key("Approve");
    expect(await state(answer)).toEqual({ settled: false });
    await vi.advanceTimersByTimeAsync(1);
    click("Approve");
    expect(await state(answer)).toEqual({ settled: true, value: true });
  });

  it("given a page reported visible, when it is faded before Approve arms and shown again, then the delay counts from the last time it became visible", async () => {
    const seen = fakeVisibility();
    const { approval, button, click } = page(seen.factory);
    const answer = approval.ask(TEXT);
    seen.latest().report(true);
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS / 2);
    seen.latest().report(false);
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS / 10);
    seen.latest().report(true);
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS - 1);
    expect(button("Approve")?.disabled).toBe(true);
    click("Approve");
    expect(await state(answer)).toEqual({ settled: false });
    await vi.advanceTimersByTimeAsync(1);
    click("Approve");
    expect(await state(answer)).toEqual({ settled: true, value: true });
  });

  it("given a visible, armed page, when the browser reports it visible again, then Approve stays armed; when the host changes its theme, then it waits the delay again", async () => {
    const seen = fakeVisibility();
    const { approval, button, click } = page(seen.factory);
    const answer = approval.ask(TEXT);
    seen.latest().report(true);
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS);
    seen.latest().report(true);
    expect(button("Approve")?.disabled).toBe(false);
    approval.setTheme("dark");
    expect(button("Approve")?.disabled).toBe(true);
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS);
    click("Approve");
    expect(await state(answer)).toEqual({ settled: true, value: true });
  });

  it("given a request answered while visible, when the next one is shown, then it is watched afresh: Approve waits for the browser's report again", async () => {
    const seen = fakeVisibility();
    const { approval, button, click } = page(seen.factory);
    const first = approval.ask(TEXT);
    seen.latest().report(true);
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS);
    click("Reject");
    expect(await state(first)).toEqual({ settled: true, value: false });
    expect(seen.made[0]?.disconnected).toBe(true);

    const second = approval.ask(OTHER);
    expect(seen.made).toHaveLength(2);
    // A late report of the first page's observer changes nothing.
    seen.made[0]?.report(true);
    await vi.advanceTimersByTimeAsync(3 * ARM_DELAY_MS);
    expect(button("Approve")?.disabled).toBe(true);
    seen.latest().report(true);
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS);
    click("Approve");
    expect(await state(second)).toEqual({ settled: true, value: true });
  });

  it("given a page not reported visible, when Reject is clicked, then it is rejected (rejecting is always safe)", async () => {
    const seen = fakeVisibility();
    const { approval, click } = page(seen.factory);
    const answer = approval.ask(TEXT);
    seen.latest().report(false);
    click("Reject");
    expect(await state(answer)).toEqual({ settled: true, value: false });
  });
});

describe("visibility tracking is used only where the browser has it", () => {
  const windowWith = (entryFields: object | null) => {
    const made: unknown[][] = [];
    class IntersectionObserver {
      constructor(...args: unknown[]) {
        made.push(args);
      }
      observe() {}
      disconnect() {}
    }
    const IntersectionObserverEntry = entryFields === null ? undefined : Object.assign(function IntersectionObserverEntry() {}, { prototype: entryFields });
    return { win: { IntersectionObserver, IntersectionObserverEntry } as unknown as Window, made };
  };

  it("given a browser whose IntersectionObserverEntry has isVisible (v2), when the page watches, then it creates that browser's observer with the options", () => {
    const { win, made } = windowWith({ isVisible: false });
    const factory = visibilityObserverFactory(win);
    expect(factory).not.toBeNull();
    const callback = () => {};
    factory?.(callback, { trackVisibility: true, delay: 100 });
    expect(made).toEqual([[callback, { trackVisibility: true, delay: 100 }]]);
  });

  it("given a browser without isVisible (Firefox, Safari) or without IntersectionObserver, then there is no tracking: Approve arms by the delay alone, with no hint", async () => {
    expect(visibilityObserverFactory(windowWith({ isIntersecting: false }).win)).toBeNull();
    expect(visibilityObserverFactory(windowWith(null).win)).toBeNull();
    expect(visibilityObserverFactory({} as Window)).toBeNull();
    expect(visibilityObserverFactory(null)).toBeNull();
    // happy-dom, as those browsers: IntersectionObserver v1 only.
    expect(visibilityObserverFactory(window)).toBeNull();

    const { approval, button, click, hint } = page();
    const answer = approval.ask(TEXT);
    await vi.advanceTimersByTimeAsync(ARM_DELAY_MS);
    expect(button("Approve")?.disabled).toBe(false);
    expect(hint()?.textContent).toBe("");
    click("Approve");
    expect(await state(answer)).toEqual({ settled: true, value: true });
  });
});

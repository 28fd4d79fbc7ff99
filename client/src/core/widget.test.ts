// @vitest-environment happy-dom
// The widget's controller: a chart that disagrees with the state resyncs, is counted and reported
// to the server (at most 5 reports per 60 s); the debug handle's inspection keeps events until an
// inspector attaches.

import { afterEach, describe, expect, it, vi } from "vitest";
import { ERROR_REPORTS } from "../generated/constants";
import { fixtureFrames } from "../generated/fixtureFrames";
import { isDiff, isWelcome, scriptedWidget, settle } from "../testing/harness";
import { createInspection, debugHandle } from "./debug";
import { backoffDelay } from "./transport/machine";

afterEach(() => vi.useRealTimers());

describe("chart disagreement", () => {
  it("given mirrored charts that miss a transition, when a diff disagrees, then the widget resyncs the whole state, counts it and reports it", async () => {
    const s = scriptedWidget(fixtureFrames);
    await settle();
    s.welcome();
    // Break the mirrored modal chart: it stops hearing ModalOpened (as a stale chart would).
    const modal = s.widget.charts.actor("modal");
    const send = modal.send.bind(modal);
    modal.send = (event) => (event.type === "ModalOpened" ? undefined : send(event));
    s.serveUntil((w) => w.state()?.modal.status === "open");
    expect(s.widget.stats().chartDisagreements).toBe(1);
    expect(s.widget.stats().clientErrors).toBe(1);
    // The report went out on the first socket; a second socket asks for the whole state.
    await settle();
    expect(s.sockets[0].commands()).toContainEqual({ type: "ReportClientError", kind: "chartDisagreement", detail: expect.stringMatching(/^modal: the chart is in closed, the state says "open"/) });
    expect(s.sockets).toHaveLength(2);
    s.socket().open();
    const hello = s.socket().sent[0];
    expect(hello).toMatchObject({ type: "hello", sessionId: expect.any(String) });
    expect(hello).not.toHaveProperty("lastSeq");
    // The whole state re-seeds the charts: they agree again.
    s.socket().serve({ ...fixtureFrames.filter(isWelcome)[0], resumeToken: undefined });
    expect(s.widget.charts.values().modal).toBe(s.widget.state()?.modal.status);
  });

  it("reports at most 5 problems per 60 s, counting all of them", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const s = scriptedWidget(fixtureFrames);
    await settle();
    s.welcome();
    for (let i = 0; i < 8; i++) s.widget.reportError("render", `problem ${i}`);
    vi.setSystemTime(Date.now() + ERROR_REPORTS.windowMs);
    s.widget.reportError("render", "a minute later");
    await settle();
    const reports = s.socket().commands().filter((c) => c.type === "ReportClientError");
    expect(reports.map((r) => r.detail)).toEqual(["problem 0", "problem 1", "problem 2", "problem 3", "problem 4", "a minute later"]);
    expect(s.widget.stats().clientErrors).toBe(9);
  });
});

describe("debug inspection", () => {
  it("keeps the transport's and the charts' inspection events until an inspector attaches, then streams them", async () => {
    const inspection = createInspection();
    const s = scriptedWidget(fixtureFrames, { inspect: inspection.inspect });
    await settle();
    s.welcome();
    s.next();
    expect(inspection.kept.some((e) => e.type === "@xstate.event")).toBe(true);
    const seen: string[] = [];
    const handle = debugHandle(s.widget, inspection);
    await handle.inspect(async () => ({ inspect: { next: (e) => seen.push(e.type) } }));
    const replayed = seen.length;
    expect(replayed).toBeGreaterThan(0);
    expect(inspection.kept).toHaveLength(0);
    s.next();
    expect(seen.length).toBeGreaterThan(replayed);
    expect(handle.seq()).toBe(fixtureFrames.filter(isDiff)[1].seq);
  });
});

describe("settled()", () => {
  it("resolves once this page's PageLoaded is applied and no stored connection is syncing; rejects when destroyed", async () => {
    const s = scriptedWidget(fixtureFrames);
    await settle();
    s.welcome();
    let resolved = false;
    const settled = s.widget.settled().then(() => (resolved = true));
    await settle();
    expect(resolved).toBe(false); // PageLoaded has no result yet
    const pageLoaded = s.socket().sent.find((m) => m.type === "command");
    expect(pageLoaded).toMatchObject({ command: { type: "PageLoaded" } });
    s.socket().serve({ type: "result", commandId: String(pageLoaded?.id), status: "accepted", seq: s.widget.seq() });
    await settled;
    expect(resolved).toBe(true);

    const t = scriptedWidget(fixtureFrames);
    await settle();
    t.welcome();
    const pending = t.widget.settled();
    t.widget.destroy();
    await expect(pending).rejects.toThrow(/destroyed/);
  });
});

describe("wallet requests", () => {
  it("performs each of the session's requests once per page, and those of a new session too (their ids start again)", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const s = scriptedWidget(fixtureFrames);
    await settle();
    s.welcome();
    s.serveUntil((w) => (w.state()?.requests.order.length ?? 0) > 0);
    const id = s.widget.state()?.requests.order[0];
    await settle();
    // No wallet in this page: the request is answered with 4900, once.
    const answers = () => s.socket().commands().filter((c) => c.type === "ResolveWalletRequest" && c.requestId === id);
    expect(answers()).toHaveLength(1);
    // The session ends (4006); the new session issues a request with the same id: it is performed.
    s.socket().onclose?.({ code: 4006 });
    vi.advanceTimersByTime(backoffDelay(0));
    expect(s.sockets).toHaveLength(2);
    s.socket().open();
    s.socket().serve({ ...fixtureFrames.filter(isWelcome)[0], sessionId: "another-session", resumeToken: "another-token" });
    for (const d of fixtureFrames.filter(isDiff)) {
      s.socket().serve(d);
      if (s.widget.state()?.requests.order.includes(String(id))) break;
    }
    await settle();
    expect(answers()).toHaveLength(1);
  });
});

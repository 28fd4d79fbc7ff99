// @vitest-environment happy-dom
// React lifecycle: the provider creates its widget in an effect and destroys it in the cleanup;
// under StrictMode exactly one socket opens; destroy() leaves no socket, timer or listener behind;
// two widgets on one page work independently (no module state, no fixed ids).

import { act, cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { getWallets } from "@wallet-standard/app";
import { StrictMode } from "react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { fixtureFrames } from "./generated/fixtureFrames";
import { VestibuleProvider, useVestibule } from "./react";
import { FakeSocket, isDiff, isWelcome, MemoryStore, settle } from "./testing/harness";
import type { WidgetOptions } from "./core/widget";
import { createWidget } from "./core/widget";

afterEach(cleanup);

/** Counts the listeners added to `targets` that are still attached (removed, or aborted by signal). */
function listenerLedger(targets: EventTarget[]) {
  let active = 0;
  const restore: Array<() => void> = [];
  for (const target of targets) {
    const add = target.addEventListener;
    const remove = target.removeEventListener;
    target.addEventListener = function (type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions) {
      if (listener) {
        active++;
        const signal = typeof options === "object" ? options.signal : undefined;
        signal?.addEventListener("abort", () => active--, { once: true });
      }
      return add.call(this, type, listener, options);
    };
    target.removeEventListener = function (type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | EventListenerOptions) {
      if (listener) active--;
      return remove.call(this, type, listener, options);
    };
    restore.push(() => {
      target.addEventListener = add;
      target.removeEventListener = remove;
    });
  }
  return {
    get active() {
      return active;
    },
    restore: () => restore.forEach((r) => r()),
  };
}

function options(projectId: string, sockets: FakeSocket[]): WidgetOptions {
  return {
    gatewayUrl: "ws://gateway.test/ws",
    projectId,
    storage: new MemoryStore(),
    createSocket: (url) => {
      const s = new FakeSocket(url);
      sockets.push(s);
      return s;
    },
    fetch: async () => new Response("{}"),
  };
}

const welcome = fixtureFrames.find(isWelcome)!;
const diffs = fixtureFrames.filter(isDiff);
/** Serves the fixture's diffs up to and including the one that opens the modal. */
function openModal(socket: FakeSocket) {
  for (const d of diffs) {
    socket.serve(d);
    if (d.events.some((e) => e.type === "ModalOpened")) return;
  }
}

describe("VestibuleProvider", () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] }));
  afterEach(() => vi.useRealTimers());

  it("under StrictMode opens exactly one socket, and unmounting closes it and removes every listener and timer", async () => {
    // The Wallet Standard registry (`@wallet-standard/app`) listens for wallets once per page, for
    // the page's life, whatever widgets come and go: that one listener is the library's, not a leak.
    getWallets();
    const ledger = listenerLedger([window, document]);
    const before = ledger.active;
    try {
      const sockets: FakeSocket[] = [];
      const { unmount } = render(
        <StrictMode>
          <VestibuleProvider options={options("demo", sockets)} preloadModal="open">
            <p>host app</p>
          </VestibuleProvider>
        </StrictMode>,
      );
      await act(settle);
      expect(sockets).toHaveLength(1);
      sockets[0].open();
      act(() => sockets[0].serve(welcome));
      expect(sockets[0].sent.filter((m) => m.type === "hello")).toHaveLength(1);
      // Listening while mounted: online, offline, visibility, EIP-6963 announcements.
      expect(ledger.active - before).toBeGreaterThanOrEqual(4);
      expect(vi.getTimerCount()).toBeGreaterThan(0);
      unmount();
      expect(sockets[0].closed).toBe(1000);
      expect(ledger.active).toBe(before);
      expect(vi.getTimerCount()).toBe(0);
      vi.advanceTimersByTime(60_000);
      expect(sockets).toHaveLength(1);
    } finally {
      ledger.restore();
    }
  });

  it("gives the host its state, open() and the provider through useVestibule()", async () => {
    const sockets: FakeSocket[] = [];
    function Host() {
      const { state, open, provider } = useVestibule();
      return (
        <button onClick={open} data-provider={provider ? "yes" : "no"}>
          {state ? `modal ${state.modal.status}` : "no session yet"}
        </button>
      );
    }
    render(
      <VestibuleProvider options={options("demo", sockets)}>
        <Host />
      </VestibuleProvider>,
    );
    await act(settle);
    expect(screen.getByRole("button").textContent).toBe("no session yet");
    sockets[0].open();
    act(() => sockets[0].serve(welcome));
    expect(screen.getByRole("button").textContent).toBe("modal closed");
    expect(screen.getByRole("button").getAttribute("data-provider")).toBe("yes");
    fireEvent.click(screen.getByRole("button"));
    await act(settle);
    // PageLoaded first, the wallets this page has (none), then the click.
    expect(sockets[0].commands().map((c) => c.type)).toEqual(["PageLoaded", "ReportWallets", "OpenModal"]);
  });
});

describe("two widgets on one page", () => {
  it("each has its own socket, state, dialog, ids and keyboard handling", async () => {
    const a: FakeSocket[] = [];
    const b: FakeSocket[] = [];
    render(
      <>
        <div data-testid="a">
          <VestibuleProvider options={options("a", a)} preloadModal="open" />
        </div>
        <div data-testid="b">
          <VestibuleProvider options={options("b", b)} preloadModal="open" />
        </div>
      </>,
    );
    await act(settle);
    expect([a.length, b.length]).toEqual([1, 1]);
    expect(a[0].url).toContain("projectId=a");
    expect(b[0].url).toContain("projectId=b");
    for (const s of [a[0], b[0]]) {
      s.open();
      act(() => s.serve(welcome));
    }
    act(() => openModal(a[0]));
    const dialogA = await within(screen.getByTestId("a")).findByRole("dialog");
    // Only A's modal is open; B is drawn (its session is there) but closed.
    expect(within(screen.getByTestId("b")).queryByRole("dialog")).toBeNull();
    act(() => openModal(b[0]));
    const dialogB = await within(screen.getByTestId("b")).findByRole("dialog");
    expect(dialogA.getAttribute("aria-labelledby")).not.toBe(dialogB.getAttribute("aria-labelledby"));
    expect(document.querySelectorAll(`[id="${dialogA.getAttribute("aria-labelledby")}"]`)).toHaveLength(1);
    // Escape in A closes A only.
    fireEvent.keyDown(within(dialogA).getByRole("button", { name: "Connect Dev Wallet" }), { key: "Escape" });
    await act(settle);
    expect(a[0].commands().filter((c) => c.type === "CloseModal")).toHaveLength(1);
    expect(b[0].commands().filter((c) => c.type === "CloseModal")).toHaveLength(0);
    // A click in B goes to B's session only.
    fireEvent.click(within(dialogB).getByRole("button", { name: "Connect Dev Wallet" }));
    await act(settle);
    expect(b[0].commands().filter((c) => c.type === "SelectConnector")).toHaveLength(1);
    expect(a[0].commands().filter((c) => c.type === "SelectConnector")).toHaveLength(0);
  });
});

describe("destroy()", () => {
  it("removes the listeners the widget put on a connected wallet's provider", async () => {
    const attached = new Map<string, unknown>();
    const provider = {
      request: async () => null,
      on: (event: string, listener: unknown) => void attached.set(event, listener),
      removeListener: (event: string, listener: unknown) => {
        if (attached.get(event) === listener) attached.delete(event);
      },
    };
    const sockets: FakeSocket[] = [];
    const widget = createWidget(options("demo", sockets));
    await settle();
    window.dispatchEvent(new CustomEvent("eip6963:announceProvider", { detail: { info: { uuid: "u", name: "Dev Wallet", icon: "", rdns: "dev.vestibule.wallet" }, provider } }));
    sockets[0].open();
    sockets[0].serve(welcome);
    for (const d of diffs) {
      sockets[0].serve(d);
      if (widget.state()?.connection.namespaces.eip155?.status === "connected") break;
    }
    expect([...attached.keys()].sort()).toEqual(["accountsChanged", "chainChanged", "disconnect"]);
    widget.destroy();
    expect(attached.size).toBe(0);
    expect(sockets[0].closed).toBe(1000);
    await expect(widget.command({ type: "OpenModal" })).rejects.toThrow(/destroyed/);
  });

  it("before the socket opened (created and destroyed in one task), opens none", async () => {
    const sockets: FakeSocket[] = [];
    createWidget(options("demo", sockets)).destroy();
    await settle();
    expect(sockets).toHaveLength(0);
  });
});

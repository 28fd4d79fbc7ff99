// @vitest-environment happy-dom
// The widget against wallets that misbehave, fed with the frames the Rust side produced:
// - an EIP-6963 announcement cannot take a connector id the session reserves (the embedded wallet's
//   `auth`, `injected`, `solana:<name>`), and the embedded connector's events never come from a page
//   wallet;
// - a wallet answer that is not JSON (a bigint, a cycle) or too large for a frame is answered as JSON or as a failure, and a
//   Solana `change` event with odd accounts is filtered: the transport lives on either way;
// - one malformed announcement (or one whose name hides or reorders text) is dropped on its own:
//   the others are still reported.

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { getWallets } from "@wallet-standard/app";
import type { Wallet } from "@wallet-standard/base";
import { fixtureFrames, multichainFrames } from "../generated/fixtureFrames";
import type { SessionState } from "../generated/SessionState";
import { isWelcome, scriptedWidget as scripted, settle, type Scripted } from "../testing/harness";
import { memberHashes, stateHashOf } from "./canonical";
import { MAX_REPORTED_WALLETS } from "./effects/walletChecks";
import type { Eip1193Provider, Eip6963ProviderInfo } from "./effects/walletEffects";

const ADDRESS = "0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025";
const ICON = "data:image/svg+xml;base64,PHN2Zy8+";

const cleanups: Array<() => void> = [];
let warn: ReturnType<typeof vi.spyOn>;
beforeEach(() => {
  localStorage.clear();
  warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
});
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
  vi.restoreAllMocks();
});

/** An EIP-1193 provider that answers with `answer` and keeps its listeners so a test can emit. */
function fakeProvider(answer: (method: string) => unknown = () => null) {
  const listeners = new Map<string, Set<(arg: unknown) => void>>();
  const provider = {
    request: async ({ method }: { method: string }) => answer(method),
    on(event: string, listener: (...args: never[]) => void) {
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event)?.add(listener as (arg: unknown) => void);
    },
    removeListener(event: string, listener: (...args: never[]) => void) {
      listeners.get(event)?.delete(listener as (arg: unknown) => void);
    },
    emit(event: string, arg?: unknown) {
      for (const l of listeners.get(event) ?? []) l(arg);
    },
    listeners: () => [...listeners.values()].reduce((n, s) => n + s.size, 0),
  };
  return provider satisfies Eip1193Provider;
}

/** Announces a wallet on the page now and whenever the page asks (EIP-6963). */
function announce(info: Partial<Eip6963ProviderInfo>, provider: Eip1193Provider) {
  const detail = { info: { uuid: crypto.randomUUID(), icon: ICON, ...info }, provider };
  const answer = () => window.dispatchEvent(new CustomEvent("eip6963:announceProvider", { detail }));
  window.addEventListener("eip6963:requestProvider", answer);
  cleanups.push(() => window.removeEventListener("eip6963:requestProvider", answer));
  answer();
}

/** The fixture's welcome, with the eip155 namespace connected through `connectorId`. */
function welcomeConnectedBy(connectorId: string) {
  const welcome = fixtureFrames.find(isWelcome);
  if (!welcome?.state) throw new Error("no welcome state in the fixture");
  const state: SessionState = structuredClone(welcome.state);
  const eip155 = state.connection.namespaces.eip155;
  if (!eip155) throw new Error("no eip155 namespace in the fixture");
  state.connection.namespaces.eip155 = { ...eip155, status: "connected", connectorId, accounts: [{ address: ADDRESS, type: "eoa" }], address: ADDRESS, caipAddress: `eip155:1:${ADDRESS}` };
  return { ...welcome, state, stateHash: stateHashOf(memberHashes(state)) };
}

/** A scripted widget destroyed after the test (its discovery listens to the page-wide registry). */
function scriptedWidget(frames: Parameters<typeof scripted>[0]): Scripted {
  const s = scripted(frames);
  cleanups.push(() => s.widget.destroy());
  return s;
}

const commandsOf = (s: Scripted, type: string) => s.socket().commands().filter((c) => c.type === type);
const DEV_WALLET_REPORTED = [{ name: "Dev Wallet", rdns: "dev.vestibule.wallet", icon: ICON, kind: "ANNOUNCED" }];

/** A widget with one page wallet answering `answer`, once the session's connect request reached it. */
async function askedToConnect(answer: (method: string) => unknown) {
  announce({ name: "Dev Wallet", rdns: "dev.vestibule.wallet" }, fakeProvider(answer));
  const s = scriptedWidget(fixtureFrames);
  await settle();
  s.welcome();
  s.serveUntil((w) => (w.state()?.requests.order.length ?? 0) > 0);
  await settle();
  return s;
}

/** A widget that got its welcome: the wallets it reported last, and the widget. */
async function reportedAfterWelcome() {
  const s = scriptedWidget(fixtureFrames);
  await settle();
  s.welcome();
  await settle();
  return { s, wallets: commandsOf(s, "ReportWallets").at(-1)?.wallets };
}

/** The widget still sends: a later command reaches the socket. */
async function stillSends(s: Scripted) {
  expect(s.widget.transport.getSnapshot().status).toBe("active");
  s.widget.send({ type: "OpenModal" });
  await settle();
  expect(commandsOf(s, "OpenModal")).toHaveLength(1);
}

describe("reserved connector ids", () => {
  it("given the embedded wallet connected (connector auth), when a page wallet announces rdns auth and emits accountsChanged, then it is not reported, not listened to and nothing is forwarded", async () => {
    const evil = fakeProvider(() => [ADDRESS]);
    announce({ name: "Totally The Embedded Wallet", rdns: "auth" }, evil);
    const s = scriptedWidget(fixtureFrames);
    await settle();
    s.socket().open();
    s.socket().serve(welcomeConnectedBy("auth"));
    await settle();
    expect(s.widget.state()?.connection.namespaces.eip155?.connectorId).toBe("auth");
    expect(s.widget.discovery.provider("auth")).toBeUndefined();
    expect(evil.listeners()).toBe(0);
    evil.emit("accountsChanged", ["0x70997970C51812dc3A010C7d01b50e0d17dc79C8"]);
    evil.emit("chainChanged", "0x89");
    evil.emit("disconnect");
    await settle();
    expect(commandsOf(s, "WalletAccountsChanged")).toEqual([]);
    expect(commandsOf(s, "WalletChainChanged")).toEqual([]);
    expect(commandsOf(s, "WalletDisconnected")).toEqual([]);
    expect(JSON.stringify(commandsOf(s, "ReportWallets"))).not.toContain('"auth"');
    expect(warn).toHaveBeenCalledWith(expect.stringContaining("ignored"), "auth");
  });

  it("given a discovery that would hand out a page provider for auth (a bug elsewhere), when the embedded wallet is connected, then the widget still never listens to it", async () => {
    const evil = fakeProvider();
    const s = scriptedWidget(fixtureFrames);
    s.widget.discovery.provider = () => evil;
    await settle();
    s.socket().open();
    s.socket().serve(welcomeConnectedBy("auth"));
    await settle();
    expect(evil.listeners()).toBe(0);
  });

  it("given page wallets announcing rdns injected and solana:<name>, when the widget reports its wallets, then only the real ones are reported", async () => {
    announce({ name: "Dev Wallet", rdns: "dev.vestibule.wallet" }, fakeProvider());
    announce({ name: "Fake Injected", rdns: "injected" }, fakeProvider());
    announce({ name: "Dev Solana Wallet", rdns: "solana:Dev Solana Wallet" }, fakeProvider());
    const { s, wallets } = await reportedAfterWelcome();
    expect(wallets).toEqual(DEV_WALLET_REPORTED);
    expect(s.widget.discovery.provider("injected")).toBeUndefined();
    expect(s.widget.discovery.provider("solana:Dev Solana Wallet")).toBeUndefined();
  });
});

describe("wallet answers that are not JSON", () => {
  it("given a wallet whose eth_chainId answers 1n, when the session asks it to connect, then the answer goes out with chainId 0x1 and the widget keeps working", async () => {
    const s = await askedToConnect((method) => (method === "eth_chainId" ? 1n : [ADDRESS]));
    expect(commandsOf(s, "ResolveWalletRequest")).toEqual([
      { type: "ResolveWalletRequest", requestId: "r1", outcome: { status: "ok", result: { accounts: [ADDRESS], chainId: "0x1" } } },
    ]);
    await stillSends(s);
  });

  it("given a wallet that answers with a cyclic object, when the session asks it to connect, then the request fails with a clear message and the widget keeps working", async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const s = await askedToConnect((method) => (method === "eth_chainId" ? "0x1" : cyclic));
    expect(commandsOf(s, "ResolveWalletRequest")).toEqual([
      { type: "ResolveWalletRequest", requestId: "r1", outcome: { status: "error", code: -32603, message: expect.stringMatching(/^The wallet's answer cannot be sent: .*circular/) } },
    ]);
    await stillSends(s);
  });

  // Over the gateway's frame limit (64 KiB by default) the socket is closed 1009 and the command
  // dropped: the Connecting view waited until the visitor closed the modal (outside review).
  it.each([
    ["5,000 accounts", (method: string) => (method === "eth_chainId" ? "0x1" : Array.from({ length: 5000 }, (_, i) => `0x${(i + 1).toString(16).padStart(40, "0")}`))],
    ["a 70 kB error message", (method: string) => {
      if (method === "eth_chainId") return "0x1";
      throw { code: -32000, message: "A".repeat(70_000) };
    }],
  ])("given a wallet answering a connect with %s, when the answer is sent, then it is a failure that fits the frame and the widget keeps working", async (_name, answer) => {
    const s = await askedToConnect(answer);
    const [resolve] = commandsOf(s, "ResolveWalletRequest");
    expect(resolve).toMatchObject({ type: "ResolveWalletRequest", requestId: "r1", outcome: { status: "error" } });
    const frame = s.socket().sent.find((m) => m.type === "command" && (m.command as { type?: string }).type === "ResolveWalletRequest");
    expect(new Blob([JSON.stringify(frame)]).size).toBeLessThan(64 * 1024);
    await stillSends(s);
  });

  it("given a connected Solana wallet, when its change event carries accounts that are not strings, then only the string addresses are forwarded and the widget keeps working", async () => {
    let emit: (properties: unknown) => void = () => undefined;
    const wallet = solanaWallet("Dev Solana Wallet", {
      "standard:events": { version: "1.0.0", on: (_event: string, listener: (p: unknown) => void) => ((emit = listener), () => undefined) },
    });
    cleanups.push(getWallets().register(wallet));
    const s = scriptedWidget(multichainFrames);
    await settle();
    s.welcome();
    s.serveUntil();
    await settle();
    expect(s.widget.state()?.connection.namespaces.solana?.connectorId).toBe("solana:Dev Solana Wallet");
    const good = "7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV";
    emit({ accounts: [{ address: 5n }, { address: good }, null] });
    emit(null);
    emit({ accounts: "everything" });
    await settle();
    expect(commandsOf(s, "WalletAccountsChanged")).toEqual([{ type: "WalletAccountsChanged", connectorId: "solana:Dev Solana Wallet", accounts: [good] }]);
    await stillSends(s);
  });
});

/** A Wallet Standard wallet that names a Solana chain, connects (with no account) and has `extra` features. */
function solanaWallet(name: unknown, extra: Record<string, unknown> = {}, icon: unknown = ICON): Wallet {
  return {
    version: "1.0.0",
    name,
    icon,
    chains: ["solana:devnet"],
    accounts: [],
    features: {
      "standard:connect": { version: "1.0.0", connect: async () => ({ accounts: [] }) },
      "standard:events": { version: "1.0.0", on: () => () => undefined },
      ...extra,
    },
  } as unknown as Wallet;
}

describe("malformed announcements", () => {
  it("given one valid page wallet among malformed ones, when the widget reports its wallets, then the valid one is reported and each bad one is dropped with a warning", async () => {
    announce({ name: "Dev Wallet", rdns: "dev.vestibule.wallet" }, fakeProvider());
    announce({ name: " ", rdns: "blank.name" }, fakeProvider());
    announce({ name: "\u0085", rdns: "next.line.name" }, fakeProvider()); // white space to Rust, not to String.trim
    announce({ name: "x".repeat(65), rdns: "long.name" }, fakeProvider());
    announce({ name: "é".repeat(33), rdns: "long.utf8.name" }, fakeProvider()); // 33 characters, 66 bytes
    announce({ name: "Long Rdns", rdns: `${"a".repeat(125)}.com` }, fakeProvider());
    announce({ name: "Broken \ud800 Name", rdns: "lone.surrogate" }, fakeProvider());
    const { wallets } = await reportedAfterWelcome();
    expect(wallets).toEqual(DEV_WALLET_REPORTED);
    expect(warn.mock.calls.length).toBeGreaterThanOrEqual(6);
  });

  // The server leaves such a wallet out (outside review: "\u202EksaMateM" read as "MetaMask");
  // the widget does not even report it.
  it("given page wallets whose names hide or reorder text, when the widget reports its wallets, then only the honest ones are reported", async () => {
    announce({ name: "Dev Wallet", rdns: "dev.vestibule.wallet" }, fakeProvider());
    announce({ name: "\u202EksaMateM", rdns: "com.evil.two" }, fakeProvider());
    announce({ name: "Dev\u200BWallet\u200B", rdns: "com.evil.three" }, fakeProvider());
    announce({ name: "\u0000\u0007Ctl\u001b[31m", rdns: "com.evil.five" }, fakeProvider());
    announce({ name: "Rabby \u2003\u2003 by this site", rdns: "com.evil.four" }, fakeProvider());
    announce({ name: "Zoë's Wallet 2", rdns: "com.zoe" }, fakeProvider());
    const { wallets } = await reportedAfterWelcome();
    expect(Array.isArray(wallets) && wallets.map((w: { name?: string }) => w.name)).toEqual(["Dev Wallet", "Zoë's Wallet 2"]);
    expect(warn).toHaveBeenCalledWith(expect.stringContaining("ignored"), "com.evil.two");
  });

  it("given more page wallets than the server takes in one report, when the widget reports them, then it sends the first 32 (not a report refused whole)", async () => {
    for (let i = 0; i < MAX_REPORTED_WALLETS + 3; i++) announce({ name: `Wallet ${i}`, rdns: `wallet${i}.test` }, fakeProvider());
    const s = scriptedWidget(fixtureFrames);
    await settle();
    s.welcome();
    await settle();
    const wallets = commandsOf(s, "ReportWallets").at(-1)?.wallets;
    expect(Array.isArray(wallets) && wallets.map((w: { rdns?: string }) => w.rdns)).toEqual(Array.from({ length: MAX_REPORTED_WALLETS }, (_, i) => `wallet${i}.test`));
  });

  it("given Wallet Standard wallets with a non-string name or icon, or a name too long, when the widget starts, then it does not throw and reports the valid one", async () => {
    cleanups.push(getWallets().register(solanaWallet(42)));
    cleanups.push(getWallets().register(solanaWallet("Odd Icon", {}, { url: "x" })));
    cleanups.push(getWallets().register(solanaWallet("n".repeat(65))));
    cleanups.push(getWallets().register(solanaWallet("Good Solana Wallet")));
    const s = scriptedWidget(multichainFrames);
    await settle();
    s.welcome();
    await settle();
    const reported = commandsOf(s, "ReportWallets").at(-1)?.wallets;
    expect(reported).toEqual([
      { name: "Odd Icon", kind: "ANNOUNCED", namespace: "solana" },
      { name: "Good Solana Wallet", icon: ICON, kind: "ANNOUNCED", namespace: "solana" },
    ]);
    await stillSends(s);
  });
});

// The wallet requests the session issues for the account flows, performed on a provider: the send's
// `eth_sendTransaction`, the network switch's `wallet_switchEthereumChain` and
// `wallet_addEthereumChain` reach the wallet with the server's method and parameters as they are,
// and the wallet's answer or error code comes back as the outcome the session decides on. Discovery
// keeps the announcements the server can take (and none that claims a reserved connector id), and a
// failure is always an outcome the server can read.

import { describe, expect, it, vi } from "vitest";
import type { WalletRequest } from "../../generated/WalletRequest";
import { WALLET_ICON_MAX_BYTES, WALLET_NAME_MAX_BYTES, WALLET_RDNS_MAX_BYTES } from "./walletChecks";
import { perform, WalletDiscovery, type Eip1193Provider } from "./walletEffects";

const rpc = (id: string, method: string, params: unknown): WalletRequest => ({
  id,
  connectorId: "dev.vestibule.wallet",
  namespace: "eip155",
  kind: { type: "rpc", method, params },
  issuedMs: 1,
});

function wallet(answer: (method: string, params: unknown) => unknown): Eip1193Provider & { calls: Array<{ method: string; params?: unknown }> } {
  const calls: Array<{ method: string; params?: unknown }> = [];
  return {
    calls,
    request: async (args) => {
      calls.push(args);
      return answer(args.method, args.params);
    },
  };
}

const error = (code: number, message: string, data?: unknown) => Object.assign(new Error(message), { code, data });

it("sends the transfer the server built and answers with the hash", async () => {
  const tx = { from: "0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025", to: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", value: "0x16345785d8a0000" };
  const hash = `0x${"12".repeat(32)}`;
  const w = wallet(() => hash);
  expect(await perform(rpc("r1", "eth_sendTransaction", [tx]), w)).toEqual({ status: "ok", result: hash });
  expect(w.calls).toEqual([{ method: "eth_sendTransaction", params: [tx] }]);
});

it("asks the switch and the add with the server's parameters, and returns 4902 as the wallet's code", async () => {
  const switching = [{ chainId: "0x7a6a" }];
  const adding = [{ chainId: "0x7a6a", chainName: "Anvil 31338", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: ["http://127.0.0.1:8546"], blockExplorerUrls: null }];
  const known = new Set<string>();
  const w = wallet((method, params) => {
    const [p] = params as Array<{ chainId: string }>;
    if (method === "wallet_addEthereumChain") {
      known.add(p.chainId);
      return null;
    }
    if (!known.has(p.chainId)) throw error(4902, "Unrecognized chain ID");
    return null;
  });
  expect(await perform(rpc("r1", "wallet_switchEthereumChain", switching), w)).toEqual({ status: "error", code: 4902, message: "Unrecognized chain ID" });
  expect(await perform(rpc("r2", "wallet_addEthereumChain", adding), w)).toEqual({ status: "ok", result: null });
  expect(await perform(rpc("r3", "wallet_switchEthereumChain", switching), w)).toEqual({ status: "ok", result: null });
  expect(w.calls.map((c) => [c.method, c.params])).toEqual([
    ["wallet_switchEthereumChain", switching],
    ["wallet_addEthereumChain", adding],
    ["wallet_switchEthereumChain", switching],
  ]);
});

it("reads a 4902 nested in data.originalError, and keeps the outer code otherwise", async () => {
  const nested = wallet(() => {
    throw error(-32603, "Internal error", { originalError: { code: 4902, message: "Unrecognized chain ID" } });
  });
  expect(await perform(rpc("r1", "wallet_switchEthereumChain", [{ chainId: "0x1" }]), nested)).toMatchObject({ status: "error", code: 4902 });
  const declined = wallet(() => {
    throw error(4001, "User rejected the request.");
  });
  expect(await perform(rpc("r2", "wallet_switchEthereumChain", [{ chainId: "0x1" }]), declined)).toEqual({ status: "error", code: 4001, message: "User rejected the request." });
  const plain = wallet(() => {
    throw new Error("boom");
  });
  expect(await perform(rpc("r3", "eth_sendTransaction", [{}]), plain)).toEqual({ status: "error", code: -32603, message: "boom" });
});

describe("WalletDiscovery: what an announcement may claim", () => {
  const ICON = "data:image/svg+xml;base64,PHN2Zy8+";
  function given() {
    const target = new EventTarget();
    const discovery = new WalletDiscovery(target);
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    let changes = 0;
    const abort = new AbortController();
    discovery.start(() => changes++, abort.signal);
    const announce = (info: Record<string, unknown>) =>
      target.dispatchEvent(new CustomEvent("eip6963:announceProvider", { detail: { info: { uuid: "u", icon: ICON, ...info }, provider: wallet(() => null) } }));
    return { discovery, warn, announce, changes: () => changes, stop: () => (abort.abort(), warn.mockRestore()) };
  }

  it.each(["auth", "injected", "solana:Phantom", "solana:", "AUTH", "Solana:Phantom"])(
    "given an announcement of rdns %j (a connector id the session reserves), when it comes, then it is dropped with a warning and its provider is never handed out",
    (rdns) => {
      const t = given();
      t.announce({ name: "Impostor", rdns });
      expect(t.discovery.report()).toEqual([]);
      expect(t.discovery.provider(rdns)).toBeUndefined();
      expect(t.changes()).toBe(0);
      expect(t.warn).toHaveBeenCalledOnce();
      t.stop();
    },
  );

  it("given announcements with names or rdns the server refuses, when they come, then each is dropped on its own and the valid ones are kept", () => {
    const t = given();
    t.announce({ name: "Good", rdns: "good.wallet" });
    for (const [name, rdns] of [
      [" ", "blank"],
      ["\u0085\u00a0", "rust.whitespace"],
      ["x".repeat(WALLET_NAME_MAX_BYTES + 1), "long.name"],
      ["é".repeat(WALLET_NAME_MAX_BYTES / 2 + 1), "long.utf8.name"],
      ["Long Rdns", "r".repeat(WALLET_RDNS_MAX_BYTES + 1)],
      ["Lone \udc00", "lone.surrogate"],
      ["Rdns Lone", "lone.\ud800"],
      [42, "not.a.string"],
    ] as const) t.announce({ name, rdns });
    t.announce({ name: "x".repeat(WALLET_NAME_MAX_BYTES), rdns: "r".repeat(WALLET_RDNS_MAX_BYTES) });
    expect(t.discovery.report().map((w) => w.rdns)).toEqual(["good.wallet", "r".repeat(WALLET_RDNS_MAX_BYTES)]);
    expect(t.warn).toHaveBeenCalledTimes(7); // the one with a non-string name is not an announcement at all
    t.stop();
  });

  it("given an icon the server would drop (too big, not an image, not well-formed), when reported, then the wallet goes without it", () => {
    const t = given();
    t.announce({ name: "Big", rdns: "big.icon", icon: `data:image/png;base64,${"A".repeat(WALLET_ICON_MAX_BYTES)}` });
    t.announce({ name: "Odd", rdns: "odd.icon", icon: "data:image/svg+xml,\ud800" });
    t.announce({ name: "Fine", rdns: "fine.icon" });
    expect(t.discovery.report()).toEqual([
      { name: "Big", rdns: "big.icon", kind: "ANNOUNCED" },
      { name: "Odd", rdns: "odd.icon", kind: "ANNOUNCED" },
      { name: "Fine", rdns: "fine.icon", icon: ICON, kind: "ANNOUNCED" },
    ]);
    t.stop();
  });
});

describe("wallet failures", () => {
  it("reads the message of a plain { code, message } rejection (EIP-1193 wallets), and says Unknown error for what has none", async () => {
    const rejecting = (thrown: unknown) =>
      wallet(() => {
        throw thrown;
      });
    const request = rpc("r1", "eth_sendTransaction", [{}]);
    expect(await perform(request, rejecting({ code: 4001, message: "User rejected the request." }))).toEqual({ status: "error", code: 4001, message: "User rejected the request." });
    expect(await perform(request, rejecting({ code: -32603, message: "Internal error", data: { originalError: { code: 4902 } } }))).toEqual({ status: "error", code: 4902, message: "Internal error" });
    expect(await perform(request, rejecting("the wallet is locked"))).toEqual({ status: "error", code: -32603, message: "the wallet is locked" });
    const wordless = [[undefined, -32603], [null, -32603], [{ code: 4001 }, 4001], [{ code: 4001, message: " " }, 4001], [new Error(""), -32603]] as const;
    for (const [thrown, code] of wordless) expect(await perform(request, rejecting(thrown))).toEqual({ status: "error", code, message: "Unknown error" });
  });

  it("answers an error that cannot be printed, or has a code that is not an integer, as -32603 with a message", async () => {
    const unprintable = wallet(() => {
      throw Object.create(null);
    });
    expect(await perform(rpc("r1", "eth_call", []), unprintable)).toEqual({ status: "error", code: -32603, message: expect.any(String) });
    const oddCode = wallet(() => {
      throw error(4001.5, "odd");
    });
    expect(await perform(rpc("r2", "eth_call", []), oddCode)).toEqual({ status: "error", code: -32603, message: "odd" });
  });
});

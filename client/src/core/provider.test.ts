// The host's EIP-1193 provider against a fake widget (a mirrored state the test moves, and a
// command channel the test answers as a gateway would): every request other than accounts and chain
// id is a `HostRequest` command whose promise settles from the answer in the mirrored state, by
// its id, with EIP-1193 errors; refusals, a destroyed widget and a dropped answer reject with
// their codes; accountsChanged / chainChanged follow the session's eip155 connection.
import { describe, expect, it } from "vitest";
import type { ClientCommand } from "../generated/ClientCommand";
import type { SessionState } from "../generated/SessionState";
import type { WalletOutcome } from "../generated/WalletOutcome";
import { createProvider, ProviderRpcError } from "./provider";
import type { CommandResult } from "./transport/machine";
import type { Widget } from "./widget";

const ALICE = "0x52908400098527886E0F7030069857D2E4169EE7";

type Answer = (result: Partial<CommandResult>) => void;

/** A widget whose mirrored state and command results the test controls. */
function fakeWidget() {
  const abort = new AbortController();
  const listeners = new Set<() => void>();
  let seq = 10;
  const state = {
    connection: { activeNamespace: "eip155", namespaces: { eip155: { status: "disconnected", address: null, network: null, connectorId: null } } },
    hostRequests: { status: "idle", items: {}, order: [], stack: [], openedModal: false },
    modal: { status: "closed" },
  } as unknown as SessionState;
  let current: SessionState = state;
  const sent: Array<{ command: ClientCommand; answer: Answer }> = [];
  const widget = {
    signal: abort.signal,
    state: () => current,
    seq: () => seq,
    subscribe(l: () => void) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    command: (command: ClientCommand) =>
      new Promise<CommandResult>((resolve) => {
        sent.push({ command, answer: (r) => resolve({ type: "result", commandId: `c${sent.length}`, status: "accepted", ...r } as CommandResult) });
      }),
    send: () => undefined,
  } as unknown as Widget;
  /** A new state (a diff applied): `change` edits a copy; listeners hear it. */
  const apply = (change: (s: SessionState) => void) => {
    const next = structuredClone(current);
    change(next);
    current = next;
    seq += 1;
    for (const l of [...listeners]) l();
  };
  const settleRequest = (id: string, outcome: WalletOutcome | null) =>
    apply((s) => {
      s.hostRequests.items[id] = { id, method: "m", params: null, route: "chain", network: null, walletRequest: null, deadlineMs: null, receivedMs: 0, outcome };
    });
  /** As a gateway accepts the `i`th command: its HostRequestReceived is in the state at the seq
   * the result names. */
  const accept = (i: number) => {
    const { requestId } = sent[i].command as Extract<ClientCommand, { type: "HostRequest" }>;
    settleRequest(requestId, null);
    sent[i].answer({ seq });
    return requestId;
  };
  return { widget, sent, apply, settleRequest, accept, destroy: () => abort.abort(), seq: () => seq };
}

const flush = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe("requests through the session", () => {
  it("given a read, when the session records its answer, then the promise resolves with the result", async () => {
    const w = fakeWidget();
    const provider = createProvider(w.widget);
    const call = provider.request({ method: "eth_call", params: [{ to: ALICE, data: "0x70a08231" }, "latest"] });
    await flush();
    expect(w.sent).toHaveLength(1);
    const command = w.sent[0].command as Extract<ClientCommand, { type: "HostRequest" }>;
    expect(command).toMatchObject({ type: "HostRequest", method: "eth_call", params: [{ to: ALICE, data: "0x70a08231" }, "latest"] });
    expect(command.requestId).toMatch(/^[A-Za-z0-9_.:-]{1,64}$/);
    w.accept(0);
    let settled = false;
    void call.then(() => (settled = true));
    await flush();
    // Received, not answered yet: still pending, also after an unrelated change.
    w.apply(() => undefined);
    await flush();
    expect(settled).toBe(false);
    w.settleRequest(command.requestId, { status: "ok", result: "0x2a" });
    await expect(call).resolves.toBe("0x2a");
  });

  it("given a disallowed method, when the session rejects it, then the promise rejects with its EIP-1193 code and message", async () => {
    const w = fakeWidget();
    const provider = createProvider(w.widget);
    const call = provider.request({ method: "anvil_setBalance", params: [ALICE, "0x1"] });
    await flush();
    const requestId = w.accept(0);
    await flush();
    w.settleRequest(requestId, { status: "error", code: 4200, message: "Requested RPC call is not allowed" });
    const error = await call.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderRpcError);
    expect(error).toMatchObject({ code: 4200, message: "Requested RPC call is not allowed" });
  });

  it("gives each request its own id, and answers each from its own entry", async () => {
    const w = fakeWidget();
    const provider = createProvider(w.widget);
    const a = provider.request({ method: "eth_blockNumber" });
    const b = provider.request({ method: "eth_gasPrice" });
    await flush();
    const [ida, idb] = [w.accept(0), w.accept(1)];
    expect(ida).not.toBe(idb);
    await flush();
    w.settleRequest(idb, { status: "ok", result: "0xb" });
    w.settleRequest(ida, { status: "ok", result: "0xa" });
    await expect(a).resolves.toBe("0xa");
    await expect(b).resolves.toBe("0xb");
  });

  it("rejects a refused request with a JSON-RPC code: too many is -32005, invalid input -32602, a full log -32603", async () => {
    const w = fakeWidget();
    const provider = createProvider(w.widget);
    const many = provider.request({ method: "eth_blockNumber" });
    const bad = provider.request({ method: "eth_blockNumber" });
    const full = provider.request({ method: "eth_blockNumber" });
    await flush();
    w.sent[0].answer({ status: "refused", error: { code: "too_many", message: "at most 16 pending host requests" } });
    w.sent[1].answer({ status: "refused", error: { code: "invalid_input", message: "requestId: already used" } });
    w.sent[2].answer({ status: "refused", error: { code: "log_full", message: "start a new session" } });
    await expect(many).rejects.toMatchObject({ code: -32005, message: "at most 16 pending host requests" });
    await expect(bad).rejects.toMatchObject({ code: -32602 });
    await expect(full).rejects.toMatchObject({ code: -32603, message: "start a new session" });
  });

  it("rejects with 4900 when the widget is destroyed while waiting, and at once afterwards", async () => {
    const w = fakeWidget();
    const provider = createProvider(w.widget);
    const call = provider.request({ method: "personal_sign", params: ["0x00", ALICE] });
    await flush();
    w.accept(0);
    await flush();
    w.destroy();
    await expect(call).rejects.toMatchObject({ code: 4900 });
    await expect(provider.request({ method: "eth_call" })).rejects.toMatchObject({ code: 4900 });
    expect(w.sent).toHaveLength(1);
  });

  it("rejects when the state it was accepted into no longer holds its answer", async () => {
    const w = fakeWidget();
    const provider = createProvider(w.widget);
    const call = provider.request({ method: "eth_blockNumber" });
    await flush();
    const accepted = w.seq() + 1;
    w.sent[0].answer({ seq: accepted });
    await flush();
    let settled = false;
    void call.catch(() => (settled = true));
    await flush();
    expect(settled).toBe(false); // the mirror is behind the command's seq: it waits
    w.apply(() => undefined);
    await expect(call).rejects.toMatchObject({ code: -32603 });
  });

  it("answers eth_accounts and eth_chainId from the mirrored connection without a command", async () => {
    const w = fakeWidget();
    const provider = createProvider(w.widget);
    await expect(provider.request({ method: "eth_accounts" })).resolves.toEqual([]);
    w.apply((s) => {
      Object.assign(s.connection.namespaces.eip155 ?? {}, { status: "connected", address: ALICE, connectorId: "dev", network: { caipNetworkId: "eip155:31337", name: "Anvil", supported: true } });
    });
    await expect(provider.request({ method: "eth_accounts" })).resolves.toEqual([ALICE]);
    await expect(provider.request({ method: "eth_chainId" })).resolves.toBe("0x7a69");
    expect(w.sent).toHaveLength(0);
    // Fence: anything else is a command.
    void provider.request({ method: "eth_blockNumber" }).catch(() => undefined);
    await flush();
    expect(w.sent).toHaveLength(1);
  });
});

describe("events", () => {
  it("emits accountsChanged and chainChanged as the session's eip155 connection changes", () => {
    const w = fakeWidget();
    const provider = createProvider(w.widget);
    const seen: Array<[string, unknown]> = [];
    provider.on("accountsChanged", (a) => seen.push(["accountsChanged", a]));
    provider.on("chainChanged", (c) => seen.push(["chainChanged", c]));
    const connectOn = (chain: string) =>
      w.apply((s) => {
        Object.assign(s.connection.namespaces.eip155 ?? {}, { status: "connected", address: ALICE, connectorId: "dev", network: { caipNetworkId: chain, name: "n", supported: true } });
      });
    connectOn("eip155:1");
    connectOn("eip155:31338");
    w.apply((s) => {
      Object.assign(s.connection.namespaces.eip155 ?? {}, { status: "disconnected", address: null, network: null });
    });
    expect(seen).toEqual([
      ["accountsChanged", [ALICE]],
      ["chainChanged", "0x1"],
      ["chainChanged", "0x7a6a"],
      ["accountsChanged", []],
    ]);
  });
});

// The EIP-1193 provider a host app uses. `eth_accounts` and `eth_chainId` are answered from the
// mirrored session's eip155 connection (whichever namespace is active, so a multichain session keeps
// its EVM account here); `eth_requestAccounts` opens the modal and resolves when the visitor
// connects, or rejects with 4001 and the session's reason when the modal closes first. Every other
// request goes through the session as a `HostRequest` command (decision 0909): the session routes it
// (safe reads to the chain service, signing and sending to the connected wallet on the transaction
// stack, anything else refused with 4200 after the modal shows "Requested RPC call is not allowed")
// and its answer arrives in the mirrored state, `hostRequests.items[id].outcome`, which settles the
// promise. It lives as long as its widget: after `destroy()` every request fails with 4900.

import type { CommandError } from "../generated/CommandError";
import type { Namespace } from "../generated/Namespace";
import { hex } from "./canonical";
import type { Widget } from "./widget";
import { callEach } from "./callEach";

type Listener = (...args: unknown[]) => void;

export interface HostProvider {
  request(args: { method: string; params?: unknown }): Promise<unknown>;
  on(event: string, listener: Listener): void;
  removeListener(event: string, listener: Listener): void;
}

export class ProviderRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** Asks the visitor to connect an account of `namespace` and resolves with its address, or rejects
 * with 4001 and the session's reason (e.g. "Modal closed") when the modal closes without one. The
 * modal opens on Connect, or, when another namespace's account is active, on SwitchActiveChain
 * (which leads to Connect). Only a close after the modal opened counts. */
export async function requestConnection(widget: Widget, namespace: Namespace): Promise<string> {
  const connected = () => {
    const conn = widget.state()?.connection.namespaces[namespace];
    return conn?.status === "connected" ? conn.address : null;
  };
  const now = connected();
  if (now) return now;
  const state = widget.state();
  const active = state?.connection.activeNamespace;
  const elsewhere = active && active !== namespace && state?.connection.namespaces[active]?.status === "connected";
  const opened = await widget.command(elsewhere ? { type: "SwitchActiveNamespace", namespace } : { type: "OpenModal" }).catch(() => null);
  if (!opened) throw new ProviderRpcError(4900, "The widget was destroyed");
  if (opened.status === "refused") throw new ProviderRpcError(4001, opened.error?.message ?? "The modal could not open");
  const openedAt = opened.seq ?? 0;
  return whenState<string>(widget, () => {
    const address = connected();
    if (address) return { value: address };
    if (widget.seq() >= openedAt && widget.state()?.modal.status === "closed") {
      // The session says why ("Modal closed", "Connection rejected", ...).
      const why = widget.state()?.connection.namespaces[namespace]?.lastError ?? Object.values(widget.state()?.connection.namespaces ?? {}).find((n) => n?.lastError)?.lastError;
      return { error: new ProviderRpcError(4001, why ?? "User rejected the request.") };
    }
    return undefined;
  });
}

/** Waits on the mirrored state: `decide` runs now and after every change until it gives an
 * outcome; a widget destroyed meanwhile rejects with 4900. */
function whenState<T>(widget: Widget, decide: () => { value: T } | { error: ProviderRpcError } | undefined): Promise<T> {
  return new Promise((resolve, reject) => {
    const settle = () => {
      unsubscribe();
      widget.signal.removeEventListener("abort", onAbort);
    };
    const onAbort = () => {
      settle();
      reject(new ProviderRpcError(4900, "The widget was destroyed"));
    };
    const check = () => {
      const outcome = decide();
      if (!outcome) return;
      settle();
      if ("error" in outcome) reject(outcome.error);
      else resolve(outcome.value);
    };
    const unsubscribe = widget.subscribe(check);
    widget.signal.addEventListener("abort", onAbort);
    check();
  });
}

const toHexChainId = (caipNetworkId: string) => `0x${Number(caipNetworkId.split(":")[1]).toString(16)}`;

/** EIP-1193 / JSON-RPC codes for a request the session refused outright. `log_full` (the session
 * has written its budget of bytes to the event log; decision 0107) is -32603 with the server's
 * message: unlike `too_many`, `rate_limited` and `busy`, waiting does not help, only a new session. */
export function refusalError(error: CommandError | undefined): ProviderRpcError {
  const message = error?.message ?? "The request was refused";
  switch (error?.code) {
    case "too_many":
    case "rate_limited":
    case "busy":
      return new ProviderRpcError(-32005, message);
    case "invalid_input":
      return new ProviderRpcError(-32602, message);
    case "not_started":
      return new ProviderRpcError(4900, message);
    default:
      return new ProviderRpcError(-32603, message);
  }
}

const randomId = (): string => hex(crypto.getRandomValues(new Uint8Array(6)));

/** Sends `method` through the session and resolves with its answer from the mirrored state. Ids
 * are unique across page loads (a random prefix per provider). */
export async function requestThroughSession(widget: Widget, requestId: string, method: string, params: unknown): Promise<unknown> {
  const result = await widget.command({ type: "HostRequest", requestId, method, params: params ?? null }).catch(() => null);
  if (!result) throw new ProviderRpcError(4900, "The widget was destroyed");
  if (result.status === "refused") throw refusalError(result.error);
  const acceptedAt = result.seq ?? 0;
  return whenState<unknown>(widget, () => {
    if (widget.seq() < acceptedAt) return undefined;
    const item = widget.state()?.hostRequests.items[requestId];
    const outcome = item?.outcome;
    if (outcome?.status === "ok") return { value: outcome.result };
    if (outcome?.status === "error") return { error: new ProviderRpcError(outcome.code, outcome.message) };
    // Answered and dropped before this page saw it (only the newest answers are kept).
    if (!item) return { error: new ProviderRpcError(-32603, "The answer is no longer available") };
    return undefined;
  });
}

export function createProvider(widget: Widget): HostProvider {
  const listeners = new Map<string, Set<Listener>>();
  const emit = (event: string, ...args: unknown[]) => callEach(listeners.get(event), ...args);
  const active = () => {
    const conn = widget.state()?.connection.namespaces.eip155;
    return conn?.status === "connected" ? conn : undefined;
  };
  const prefix = randomId();
  let counter = 0;
  let last = { accounts: "[]", chain: "" };
  const stop = widget.subscribe(() => {
    const conn = active();
    const accounts = conn?.address ? [conn.address] : [];
    const chain = conn?.network?.caipNetworkId ?? "";
    const now = { accounts: JSON.stringify(accounts), chain };
    if (now.accounts !== last.accounts) emit("accountsChanged", accounts);
    if (chain && chain !== last.chain) emit("chainChanged", toHexChainId(chain));
    last = now;
  });
  widget.signal.addEventListener("abort", () => {
    stop();
    listeners.clear();
  });
  return {
    async request({ method, params }) {
      if (widget.signal.aborted) throw new ProviderRpcError(4900, "The widget was destroyed");
      if (typeof method !== "string" || method.length === 0) throw new ProviderRpcError(-32602, "Invalid params: a method name is required");
      const conn = active();
      switch (method) {
        case "eth_accounts":
          return conn?.address ? [conn.address] : [];
        case "eth_chainId":
          if (conn?.network) return toHexChainId(conn.network.caipNetworkId);
          break;
        case "eth_requestAccounts": {
          if (conn?.address) return [conn.address];
          return [await requestConnection(widget, "eip155")];
        }
      }
      return requestThroughSession(widget, `host-${prefix}-${(counter++).toString(36)}`, method, params);
    },
    on(event, listener) {
      if (!listeners.has(event)) listeners.set(event, new Set());
      listeners.get(event)?.add(listener);
    },
    removeListener(event, listener) {
      listeners.get(event)?.delete(listener);
    },
  };
}

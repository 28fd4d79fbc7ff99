// The embeddable script's public API, shared by the loader (vestibule.js) and its core chunk.

import type { SessionState } from "../generated/SessionState";
import type { SessionOptionsInput } from "../core/options";
import type { HostProvider } from "../core/provider";
import type { SolanaHostProvider } from "../core/solanaProvider";
import type { Preload } from "../core/uiDemand";

export interface CreateOptions extends SessionOptionsInput {
  projectId: string;
  /** `ws(s)://host/ws`; default: this page's host. */
  gatewayUrl?: string;
  /** Embedded mode: draw the modal inside this element. */
  element?: HTMLElement;
  /** When false (and no `element`), nothing is appended: call `mount` yourself. */
  enableAppend?: boolean;
  /** When the modal's code loads: when the page is idle (default), or only when first needed. */
  preloadModal?: Preload;
}

/** The script's own options, beside the session's. */
export const SCRIPT_OPTIONS: ReadonlySet<string> = new Set(["projectId", "gatewayUrl", "element", "enableAppend", "preloadModal"]);

export interface VestibuleInstance {
  open(): void;
  close(): void;
  /** Calls `listener` with the mirrored state after every change; returns an unsubscribe. */
  subscribe(listener: (state: SessionState | null) => void): () => void;
  /** The mirrored state (null until the session arrived). */
  state(): SessionState | null;
  /** EIP-1193 provider for the host app, every request through the session: safe reads answered by
   * the chain service, signing and sending by the connected EVM wallet (transaction stack), other
   * methods rejected with 4200 after "Requested RPC call is not allowed" shows. */
  provider: HostProvider;
  /** Solana provider for the host app: the connected Solana wallet, through the session. */
  solana: SolanaHostProvider;
  /** Draws the widget into `element` (for `enableAppend: false`). */
  mount(element: HTMLElement): void;
  /** Ends the widget: its socket, timers, listeners and drawing. */
  destroy(): void;
  /** Resolves when the widget's core has loaded (the state, `subscribe` and the provider work before too). */
  ready: Promise<void>;
}

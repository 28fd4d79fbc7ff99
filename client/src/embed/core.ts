// The embeddable script: a host page includes `/vestibule.js` and calls
// `Vestibule.create({ projectId, gatewayUrl, ...options })`. The modal is appended at the end of
// `body` unless `enableAppend` is false or `element` is given (embedded mode draws it there).

import { createRoot } from "react-dom/client";
import type { SessionOptions } from "./generated/SessionOptions";
import type { SessionState } from "./generated/SessionState";
import { WidgetRoot } from "./views/WidgetRoot";
import { createWidget, type Widget } from "./widget";
import { createProvider, type HostProvider } from "./provider";

export interface CreateOptions extends Partial<SessionOptions> {
  projectId: string;
  /** `ws(s)://host/ws`; default: this page's host. */
  gatewayUrl?: string;
  /** Embedded mode: draw the modal inside this element. */
  element?: HTMLElement;
  /** When false (and no `element`), nothing is appended: call `mount` yourself. */
  enableAppend?: boolean;
}

export interface VestibuleInstance {
  open(): void;
  close(): void;
  /** Calls `listener` with the mirrored state after every change; returns an unsubscribe. */
  subscribe(listener: (state: SessionState | null) => void): () => void;
  /** EIP-1193 provider for the host app: the connected wallet, through the session. */
  provider: HostProvider;
  /** Draws the widget into `element` (for `enableAppend: false`). */
  mount(element: HTMLElement): void;
  widget: Widget;
}

// Every option the session accepts: the compiler checks this against the generated `SessionOptions`
// (a field added in Rust and missing here, or a name here the Rust type lacks, fails the type check).
const SESSION_OPTIONS = {
  networks: true, defaultNetwork: true, metadata: true, features: true, includeWalletIds: true, excludeWalletIds: true,
  featuredWalletIds: true, customWallets: true, termsConditionsUrl: true, privacyPolicyUrl: true, enableWalletConnect: true,
  enableEip6963: true, enableInjected: true, enableWallets: true, enableNetworkSwitch: true, allowUnsupportedChain: true,
  defaultAccountTypes: true, themeMode: true, themeVariables: true, siwx: true, siweConfig: true, debug: true,
} satisfies Record<keyof SessionOptions, true>;
/** The script's own options, beside the session's. */
const SCRIPT_OPTIONS = ["projectId", "gatewayUrl", "element", "enableAppend"];
const KNOWN = new Set([...SCRIPT_OPTIONS, ...Object.keys(SESSION_OPTIONS)]);

export function create(o: CreateOptions): VestibuleInstance {
  const unknown = Object.keys(o).filter((k) => !KNOWN.has(k));
  if (unknown.length) console.warn(`Vestibule: unknown option(s) ${unknown.join(", ")} (ignored)`);
  const { projectId, gatewayUrl, element, enableAppend = true, ...rest } = o;
  const options = Object.fromEntries(Object.entries(rest).filter(([k]) => KNOWN.has(k)));
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const widget = createWidget({ projectId, gatewayUrl: gatewayUrl ?? `${scheme}://${location.host}/ws`, options });
  const mount = (target: HTMLElement) => createRoot(target).render(<WidgetRoot widget={widget} embedded={!!element} />);
  if (element) mount(element);
  else if (enableAppend) {
    const host = document.createElement("div");
    host.setAttribute("data-vestibule", "");
    document.body.appendChild(host);
    mount(host);
  }
  // The debug handle tests and developers read the mirrored state from (`debug: true`).
  if (o.debug) (window as unknown as { __vestibule: Widget }).__vestibule = widget;
  return {
    open: widget.open,
    close: widget.close,
    subscribe: (listener) => widget.subscribe(() => listener(widget.state())),
    provider: createProvider(widget),
    mount,
    widget,
  };
}

(window as unknown as { Vestibule: { create: typeof create } }).Vestibule = { create };

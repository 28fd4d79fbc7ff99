// The embeddable script's core chunk (loaded by vestibule.js at once): the widget (transport,
// mirrored charts, wallet effects), the host's provider, and the drawing, whose modal chunk
// (React and the views) loads on first need or when the page is idle.

import { createInspection, debugHandle } from "../core/debug";
import { isSessionOption } from "../core/options";
import { createProvider } from "../core/provider";
import { createSolanaProvider } from "../core/solanaProvider";
import { openBrowserSocket } from "../core/transport/browserSocket";
import type { SocketLike } from "../core/transport/transport";
import { whenUiNeeded } from "../core/uiDemand";
import { createWidget } from "../core/widget";
import type { CreateOptions, VestibuleInstance } from "./api";

type Mounted = { unmount(): void };

export function start(o: CreateOptions & { gatewayUrl: string }, early: SocketLike | null): Omit<VestibuleInstance, "ready"> {
  const { projectId, gatewayUrl, element, enableAppend = true, preloadModal = "idle" } = o;
  const options = Object.fromEntries(Object.entries(o).filter(([k]) => isSessionOption(k)));
  let adopt = early;
  const inspection = o.debug ? createInspection() : null;
  const widget = createWidget({
    inspect: inspection?.inspect,
    projectId,
    gatewayUrl,
    options,
    // The loader's socket, opened before this chunk arrived, is the first one the transport uses.
    createSocket: (url) => {
      const socket = adopt ?? openBrowserSocket(WebSocket, url);
      adopt = null;
      return socket;
    },
  });
  const provider = createProvider(widget);
  const solana = createSolanaProvider(widget);
  let modal: Promise<typeof import("./modal")> | null = null;
  const loadModal = () => (modal ??= import("./modal"));
  const drawings = new Set<Mounted>();
  const mount = (target: HTMLElement) => {
    void loadModal().then((m) => {
      if (!widget.signal.aborted) drawings.add(m.mount(widget, target, { embedded: target === element }));
    });
  };

  let appended: HTMLElement | null = null;
  const host = element ?? (enableAppend ? (appended = document.body.appendChild(document.createElement("div"))) : null);
  appended?.setAttribute("data-vestibule", "");
  if (host) whenUiNeeded(widget, () => mount(host), preloadModal);

  // The debug handle tests and developers read the mirrored state from (`debug: true`).
  if (o.debug) Object.assign(window, { __vestibule: debugHandle(widget, inspection) });

  return {
    open() {
      // The chunk downloads while the server opens the modal.
      if (host) void loadModal();
      widget.open();
    },
    close: widget.close,
    subscribe: (listener) => widget.subscribe(() => listener(widget.state())),
    state: widget.state,
    provider,
    solana,
    mount,
    destroy() {
      widget.destroy();
      for (const d of drawings) d.unmount();
      drawings.clear();
      appended?.remove();
    },
  };
}

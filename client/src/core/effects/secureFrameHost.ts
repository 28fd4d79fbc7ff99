// The core's handle on the secure frame: small, because the core chunk is on every page. It loads
// the bridge (secureFrame.ts, a chunk of its own) the first time the session has a frame origin and
// email or socials on, and hands it what the views and the wallet effects ask of the frame.

import type { ClientCommand } from "../../generated/ClientCommand";
import type { SessionState } from "../../generated/SessionState";
import type { WalletOutcome } from "../../generated/WalletOutcome";
import type { WalletRequest } from "../../generated/WalletRequest";
import type { FrameAnswers, HostRequests, HostRequestType } from "../../frame/protocol";
import { errorMessage } from "./errorMessage";
import type { SecureFrameBridge } from "./secureFrame";

/** What the views (email OTP, social, update email, approval) ask of the frame. */
export interface EmbeddedHost {
  /** The frame origin once the session names one (the social popup's origin too). */
  frameOrigin(): string | null;
  request<T extends HostRequestType>(type: T, payload: HostRequests[T]): Promise<FrameAnswers[T]>;
  /** The ApproveTransaction view's box, where the frame shows its approval page. */
  placeApproval(slot: Element | null): void;
}

export interface EmbeddedShell extends EmbeddedHost {
  follow(state: SessionState, sessionId: string): void;
  perform(request: WalletRequest): Promise<WalletOutcome>;
}

export const EMBEDDED_CONNECTOR = "auth";

export function createEmbeddedShell(page: Window, send: (c: ClientCommand) => void, signal: AbortSignal, projectId: string): EmbeddedShell {
  let bridge: Promise<SecureFrameBridge> | null = null;
  let origin: string | null = null;
  let slot: Element | null = null;
  let state: SessionState | null = null;
  let live = false;
  const loaded = () => bridge ?? Promise.reject(new Error("The embedded wallet is not loaded"));
  return {
    frameOrigin: () => origin,
    follow(next, sessionId) {
      state = next;
      // The frame may hold a login while the session has an embedded user or a login under way
      // (the frame may have verified the code already). When neither is left (Disconnect of the
      // auth connector, a login cancelled or failed), the frame forgets its login. Once, fire and
      // forget: the session has already moved on.
      // Optional chaining: a gateway without the embedded wallet sends no `embedded` part.
      const embedded = next.embedded;
      const login = embedded?.login.status;
      const underWay = !!login && login !== "idle" && login !== "failed";
      const had = live;
      live = !!embedded?.user || underWay;
      if (had && !live) bridge?.then((b) => b.request("SIGN_OUT", {})).catch(() => undefined);
      const features = next.options.features;
      const frameOrigin = embedded?.frameOrigin;
      if (bridge || !frameOrigin || (!features.email && features.socials.length === 0)) return;
      origin = frameOrigin;
      const query = {
        projectId,
        chainId: next.options.defaultNetwork ?? next.networks[0]?.caipNetworkId ?? "",
        version: "1",
        enableLogger: String(next.options.debug),
        sessionId,
      };
      bridge = import("./secureFrame").then((m) => {
        const b = m.createSecureFrameBridge({ page, frameOrigin, query, send, signal, theme: () => (state?.options.themeMode === "dark" ? "dark" : "light") });
        b.place(slot);
        return b;
      });
    },
    request: (type, payload) => loaded().then((b) => b.request(type, payload)),
    placeApproval(element) {
      slot = element;
      void bridge?.then((b) => b.place(element));
    },
    async perform(request) {
      const network = state?.connection.namespaces[request.namespace]?.network?.caipNetworkId ?? state?.networks.find((n) => n.caipNetworkId.startsWith(`${request.namespace}:`))?.caipNetworkId ?? "";
      try {
        return await (await loaded()).perform({ requestId: request.id, connectorId: EMBEDDED_CONNECTOR, namespace: request.namespace, chainId: network, kind: request.kind });
      } catch (e) {
        return { status: "error", code: 4900, message: errorMessage(e, "The embedded wallet is not available") };
      }
    },
  };
}

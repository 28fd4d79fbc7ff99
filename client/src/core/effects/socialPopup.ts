// The social login's popup (spec §2: 600×800; §4 Social login; §9: the closed check every 1 s).
// Opened synchronously inside the visitor's click (a popup opened after an await is blocked), on the
// frame origin's /loading page; then the session is asked (ConnectSocial). When the session's login
// names the provider's URL the popup goes there; the provider sends it back to the frame origin's
// callback page, which posts `{ type: VESTIBULE_SOCIAL_RESULT, resultUri }` to this page. That
// message is accepted only from the frame origin AND from this popup's window; its URI goes to the
// secure frame (CONNECT_SOCIAL), never to the session. A popup the visitor closes while the login
// waits for it is reported once (SocialPopupClosed); a login the session ends closes the popup.

import type { ClientCommand } from "../../generated/ClientCommand";
import type { LoginState } from "../../generated/LoginState";
import type { LoginStatus } from "../../generated/LoginStatus";
import type { SocialProvider } from "../../generated/SocialProvider";
import type { ViewModel } from "../../context/widgetContext";
import { readSocialResult } from "../../frame/protocol";

export const POPUP_WIDTH = 600;
export const POPUP_HEIGHT = 800;
export const CLOSED_CHECK_MS = 1_000;
export const POPUP_NAME = "vestibule-social";
/** Spec §8: what the session is told when the frame cannot complete the login. */
export const CONNECT_FAILED = "Failed to connect";

/** What this module needs of the popup's window. */
export interface PopupWindow {
  readonly closed: boolean;
  location: { href: string };
  close(): void;
}

/** What this module reads of a message event. */
export interface SocialMessage {
  readonly origin: string;
  readonly source: unknown;
  readonly data: unknown;
}

/** What this module needs of the host page's window. */
export interface SocialPage {
  open(url: string, target: string, features: string): PopupWindow | null;
  addEventListener(type: "message", listener: (event: SocialMessage) => void): void;
  removeEventListener(type: "message", listener: (event: SocialMessage) => void): void;
  readonly screenX?: number;
  readonly screenY?: number;
  readonly outerWidth?: number;
  readonly outerHeight?: number;
}

export interface SocialPopupOptions {
  page: SocialPage;
  /** The secure frame's origin (the popup's first page and the callback's origin); null: none. */
  frameOrigin: string | null;
  send(command: ClientCommand): void;
  /** Hands the result to the secure frame (CONNECT_SOCIAL). */
  connect(resultUri: string): Promise<unknown>;
  /** Called once when the popup is no longer followed. */
  onStop?(): void;
}

export interface SocialPopup {
  readonly popup: PopupWindow | null;
  /** The session's login, each time it changes. */
  follow(login: LoginState | undefined): void;
  /** Stops following; closes the popup unless `keepOpen`. */
  stop(keepOpen?: boolean): void;
}

const WAITING: LoginStatus[] = ["socialStarting", "socialPopup"];

function features(page: SocialPage): string {
  const left = Math.max(0, Math.round((page.screenX ?? 0) + ((page.outerWidth ?? POPUP_WIDTH) - POPUP_WIDTH) / 2));
  const top = Math.max(0, Math.round((page.screenY ?? 0) + ((page.outerHeight ?? POPUP_HEIGHT) - POPUP_HEIGHT) / 2));
  return `popup=yes,width=${POPUP_WIDTH},height=${POPUP_HEIGHT},left=${left},top=${top}`;
}

/** Opens the popup (synchronously: call it inside the click) and asks the session to start. */
export function openSocialPopup(provider: SocialProvider, o: SocialPopupOptions): SocialPopup {
  const { page, frameOrigin } = o;
  const popup = frameOrigin ? page.open(`${frameOrigin}/loading`, POPUP_NAME, features(page)) : null;
  o.send({ type: "ConnectSocial", provider });

  let login: LoginState | undefined;
  let waited = false;
  let shownUrl: string | null = null;
  let stopped = false;

  const stop = (keepOpen = false) => {
    if (stopped) return;
    stopped = true;
    clearInterval(timer);
    page.removeEventListener("message", onMessage);
    if (!keepOpen && popup && !popup.closed) popup.close();
    o.onStop?.();
  };

  const onMessage = (event: SocialMessage) => {
    if (!popup || event.origin !== frameOrigin || event.source !== popup) return;
    const result = readSocialResult(event.data);
    if (!result) return;
    stop(true);
    o.connect(result.resultUri)
      .catch(() => o.send({ type: "EmbeddedRequestFailed", message: CONNECT_FAILED }))
      .finally(() => {
        if (!popup.closed) popup.close();
      });
  };

  // A blocked popup (null) counts as closed: the session hears "Popup closed" once it waits for it.
  const timer = setInterval(() => {
    if (login && WAITING.includes(login.status) && (!popup || popup.closed)) {
      o.send({ type: "SocialPopupClosed" });
      stop();
    }
  }, CLOSED_CHECK_MS);
  page.addEventListener("message", onMessage);

  return {
    popup,
    follow(next) {
      if (stopped) return;
      login = next;
      if (next && WAITING.includes(next.status)) {
        waited = true;
        const url = next.socialUrl;
        if (url && url !== shownUrl && popup && !popup.closed) {
          shownUrl = url;
          popup.location.href = url;
        }
      } else if (waited) stop(); // the session ended the login (cancelled, failed): the popup goes
    },
    stop,
  };
}

/** The social button's click: opens the popup at once and follows the widget's mirrored login
 * until the login is no longer the social one (or `stop`). */
export function startSocialLogin(widget: ViewModel, provider: SocialProvider, page: SocialPage = window): SocialPopup {
  const state = () => widget.transport.getSnapshot().context.mirror.state;
  // Optional chaining: a gateway without the embedded wallet sends no `embedded` part.
  const frameOrigin = state()?.embedded?.frameOrigin ?? widget.embedded?.frameOrigin() ?? null;
  let subscription: { unsubscribe(): void } | null = null;
  const popup = openSocialPopup(provider, {
    page,
    frameOrigin,
    send: (command) => widget.send(command),
    connect: (resultUri) => (widget.embedded ? widget.embedded.request("CONNECT_SOCIAL", { resultUri }) : Promise.reject(new Error(CONNECT_FAILED))),
    onStop: () => subscription?.unsubscribe(),
  });
  subscription = widget.transport.subscribe(() => popup.follow(state()?.embedded?.login));
  popup.follow(state()?.embedded?.login);
  return popup;
}

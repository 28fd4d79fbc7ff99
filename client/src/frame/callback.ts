// The OAuth callback page's script (served as /frame/assets/callback.js on the frame origin): hands
// the provider's redirect (this page's URL, with code and state) to the host page that opened the
// popup, naming that page's exact origin (written by the gateway into data-host-origin from the
// pending login), and closes. With no origin written (an unknown login) nothing is sent.
//
// Self-contained on purpose (no import, so the built file is one classic-or-module script the
// gateway's page can name); the type string is protocol.ts's SOCIAL_RESULT (a test checks it).

const hostOrigin = document.body.dataset.hostOrigin;
if (hostOrigin && window.opener) {
  window.opener.postMessage({ type: "VESTIBULE_SOCIAL_RESULT", resultUri: location.href }, hostOrigin);
  window.close();
}

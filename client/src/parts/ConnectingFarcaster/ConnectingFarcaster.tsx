// A Farcaster login (spec §2: a URL inside the modal instead of a popup): the relay's URL the
// session got from the embedded service, as a link and as a QR code for a phone, a Copy link button
// and Back (which cancels the login). Once the URL is known the secure frame is asked, once per URL,
// to wait for the Farcaster app's signature (CONNECT_FARCASTER: the frame asks its server, which
// polls the relay and checks the signature); a failure is told to the session.

import { useEffect, useRef, useState } from "react";
import { useSessionSelector, useWidget } from "../../context/widgetContext";
import { Spinner } from "../../components/Spinner/Spinner";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import { QrCode } from "../../components/QrCode/QrCode";
import css from "./ConnectingFarcaster.css?inline";

/** What the session is told when the frame cannot complete the login. */
export const FARCASTER_FAILED = "Failed to connect to farcaster";
const COPIED_MS = 2000;

/** The URLs whose login was already handed to the frame (a view drawn twice asks once). */
const asked = new Set<string>();

export function ConnectingFarcaster() {
  const widget = useWidget();
  const url = useSessionSelector((s) => s.embedded.login.socialUrl ?? null);
  const status = useSessionSelector((s) => s.embedded.login.status);
  const message = useSessionSelector((s) => s.embedded.login.message);
  const [copied, setCopied] = useState(false);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(() => () => void (timer.current && clearTimeout(timer.current)), []);

  useEffect(() => {
    if (!url || status !== "socialPopup" || asked.has(url)) return;
    asked.add(url);
    const frame = widget.embedded;
    const request = frame ? frame.request("CONNECT_FARCASTER", {}) : Promise.reject(new Error(FARCASTER_FAILED));
    request.catch(() => widget.send({ type: "EmbeddedRequestFailed", message: FARCASTER_FAILED }));
  }, [url, status, widget]);

  return (
    <section className="vst-farcaster" aria-label="Connecting" aria-busy={!message} data-testid="connecting-farcaster">
      <Stylesheet id="connecting-farcaster" css={css} />
      <p className="vst-farcaster__title">Scan with your phone or open the link</p>
      {url ? (
        <>
          <QrCode text={url} label="QR code of the Farcaster sign-in link" className="vst-farcaster__qr" testId="farcaster-qr" />
          <a className="vst-farcaster__link" href={url} target="_blank" rel="noopener noreferrer" data-testid="farcaster-link">
            {url}
          </a>
          <button
            type="button"
            className="vst-button"
            data-variant="primary"
            onClick={() => {
              const clipboard = typeof navigator === "undefined" ? undefined : navigator.clipboard;
              clipboard?.writeText(url).then(() => {
                setCopied(true);
                if (timer.current) clearTimeout(timer.current);
                timer.current = setTimeout(() => setCopied(false), COPIED_MS);
              }, () => undefined);
            }}
          >
            {copied ? "Copied" : "Copy link"}
          </button>
        </>
      ) : (
        !message && <Spinner size="large" />
      )}
      {message && (
        <p className="vst-farcaster__message" role="alert">
          {message}
        </p>
      )}
      <button type="button" className="vst-button" data-variant="quiet" onClick={() => widget.send({ type: "CancelEmbeddedLogin" })}>
        Back
      </button>
    </section>
  );
}

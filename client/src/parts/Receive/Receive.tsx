// The Receive view (a part: loaded only when the receive feature is on and the view is opened): the
// active account's full address, a copy button with a visible confirmation, and the address as a QR
// code (components/QrCode).
//
// The QR holds the plain address, not an EIP-681 `ethereum:<address>@<chainId>` URI: a Receive code
// is scanned by whoever pays, and exchanges' and many wallets' scanners accept a bare address but
// refuse or misread the URI form (some drop the chain, some reject the scheme). The network is
// written under the code instead, where a person reads it.

import { useEffect, useId, useRef, useState } from "react";
import { useSessionSelector } from "../../context/widgetContext";
import { BackToAccount } from "../../components/BackToAccount/BackToAccount";
import { QrCode } from "../../components/QrCode/QrCode";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import css from "./Receive.css?inline";

/** How long "Copied" shows. */
export const COPIED_MS = 2000;

type Copy = "idle" | "copied" | "failed";

export function Receive() {
  const account = useSessionSelector((s) => {
    const ns = s.connection.activeNamespace;
    const conn = ns ? s.connection.namespaces[ns] : undefined;
    return conn?.address ? { address: conn.address, network: conn.network?.name ?? null } : null;
  }, (a, b) => a?.address === b?.address && a?.network === b?.network);
  const [copy, setCopy] = useState<Copy>("idle");
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const id = useId();
  useEffect(() => () => void (timer.current && clearTimeout(timer.current)), []);
  const show = (next: Copy) => {
    setCopy(next);
    if (timer.current) clearTimeout(timer.current);
    timer.current = setTimeout(() => setCopy("idle"), COPIED_MS);
  };
  const back = (
    <BackToAccount />
  );
  if (!account) {
    return (
      <section className="vst-receive" aria-label="Receive">
        <p className="vst-muted">Connect a wallet to see its address.</p>
        {back}
      </section>
    );
  }
  return (
    <section className="vst-receive" aria-label="Receive" data-testid="receive">
      <Stylesheet id="receive" css={css} />
      <QrCode text={account.address} label={`QR code of the address ${account.address}`} className="vst-receive__qr" testId="receive-qr" />
      <p id={`${id}-network`} className="vst-muted vst-receive__network">
        {account.network ? `Send only assets on ${account.network} to this address.` : "Your address"}
      </p>
      <p className="vst-receive__address" data-testid="receive-address" aria-describedby={`${id}-network`}>
        {account.address}
      </p>
      <button
        type="button"
        className="vst-button"
        data-variant="primary"
        onClick={() => {
          const clipboard = typeof navigator === "undefined" ? undefined : navigator.clipboard;
          if (!clipboard) return show("failed");
          clipboard.writeText(account.address).then(
            () => show("copied"),
            () => show("failed"),
          );
        }}
      >
        {copy === "copied" ? "Copied" : "Copy address"}
      </button>
      <p className="vst-receive__copy" role="status" data-testid="receive-copy-status" data-copy={copy}>
        {copy === "copied" ? "Address copied to the clipboard" : copy === "failed" ? "Copying is not allowed here: select the address to copy it" : ""}
      </p>
      {back}
    </section>
  );
}

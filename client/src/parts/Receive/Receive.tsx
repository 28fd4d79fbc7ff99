// The Receive view (a part: loaded only when the receive feature is on and the view is opened): the
// active account's full address, a copy button with a visible confirmation, and the address as a QR
// code. The QR encoding is qrcode-generator's (a maintained library; only this part's chunk carries
// it); this file only draws its module matrix as one SVG path, so the code follows the theme's
// sizes and needs no canvas or HTML string.
//
// The QR holds the plain address, not an EIP-681 `ethereum:<address>@<chainId>` URI: a Receive code
// is scanned by whoever pays, and exchanges' and many wallets' scanners accept a bare address but
// refuse or misread the URI form (some drop the chain, some reject the scheme). The network is
// written under the code instead, where a person reads it.

import qrcode from "qrcode-generator";
import { useEffect, useId, useRef, useState } from "react";
import { useSessionSelector } from "../../context/widgetContext";
import { BackToAccount } from "../../components/BackToAccount/BackToAccount";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import css from "./Receive.css?inline";

/** How long "Copied" shows. */
export const COPIED_MS = 2000;

/** The QR code of `text`: its modules, row by row (true = dark). */
export function qrMatrix(text: string): boolean[][] {
  // Error correction M: the usual choice for a code shown on a screen.
  const qr = qrcode(0, "M");
  qr.addData(text, "Byte");
  qr.make();
  const size = qr.getModuleCount();
  return Array.from({ length: size }, (_, r) => Array.from({ length: size }, (_, c) => qr.isDark(r, c)));
}

/** The dark modules as one SVG path, one unit per module. */
export function qrPath(matrix: boolean[][]): string {
  return matrix.flatMap((row, r) => row.flatMap((dark, c) => (dark ? [`M${c} ${r}h1v1h-1z`] : []))).join("");
}

function QrCode({ text, label }: { text: string; label: string }) {
  const matrix = qrMatrix(text);
  const size = matrix.length;
  const path = qrPath(matrix);
  // A quiet zone of 4 modules, as the QR standard asks.
  const quiet = 4;
  return (
    <svg
      className="vst-receive__qr"
      role="img"
      aria-label={label}
      data-testid="receive-qr"
      data-qr-text={text}
      viewBox={`${-quiet} ${-quiet} ${size + 2 * quiet} ${size + 2 * quiet}`}
      shapeRendering="crispEdges"
    >
      <rect x={-quiet} y={-quiet} width={size + 2 * quiet} height={size + 2 * quiet} className="vst-receive__qr-background" />
      <path d={path} className="vst-receive__qr-modules" />
    </svg>
  );
}

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
      <QrCode text={account.address} label={`QR code of the address ${account.address}`} />
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

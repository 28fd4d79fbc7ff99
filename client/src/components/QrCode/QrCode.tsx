// A QR code drawn as one SVG path (the Receive view's address, the Farcaster sign-in link). The
// encoding is qrcode-generator's (a maintained library); only the parts that draw a code import
// this file, so only their chunks load it (client/scripts/check-size.mjs checks). One path and no
// canvas or HTML string: the code follows the theme's sizes and colours (the caller's class).

import qrcode from "qrcode-generator";

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

/** `text` as a QR code with a quiet zone of 4 modules (as the QR standard asks). The background
 * and modules take `${className}-background` and `${className}-modules`. */
export function QrCode({ text, label, className, testId }: { text: string; label: string; className: string; testId: string }) {
  const matrix = qrMatrix(text);
  const size = matrix.length;
  const quiet = 4;
  return (
    <svg
      className={className}
      role="img"
      aria-label={label}
      data-testid={testId}
      data-qr-text={text}
      viewBox={`${-quiet} ${-quiet} ${size + 2 * quiet} ${size + 2 * quiet}`}
      shapeRendering="crispEdges"
    >
      <rect x={-quiet} y={-quiet} width={size + 2 * quiet} height={size + 2 * quiet} className={`${className}-background`} />
      <path d={qrPath(matrix)} className={`${className}-modules`} />
    </svg>
  );
}

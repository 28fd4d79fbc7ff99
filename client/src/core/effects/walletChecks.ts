// What the session takes from the page's wallet discovery, checked before a wallet is reported: the
// server refuses a whole `ReportWallets` for one bad entry, so one malformed (or hostile)
// announcement would otherwise hide every wallet. The bounds are the server's, generated from
// actors/src/model/connector.rs. Rust's `len()` counts UTF-8 bytes, so these do.
//
// Connector ids the session gives itself are reserved: an EIP-6963 announcement (whose rdns is its
// connector id) may not take one, or it would be handed the embedded wallet's or a Solana wallet's
// requests and speak for it.

import {
  EMBEDDED_CONNECTOR_ID,
  INJECTED_CONNECTOR_ID,
  MAX_REPORTED_WALLETS,
  SOLANA_CONNECTOR_PREFIX,
  WALLET_ICON_MAX_BYTES,
  WALLET_NAME_MAX_BYTES,
  WALLET_RDNS_MAX_BYTES,
} from "../../generated/constants";

export { INJECTED_CONNECTOR_ID, MAX_REPORTED_WALLETS, SOLANA_CONNECTOR_PREFIX, WALLET_ICON_MAX_BYTES, WALLET_NAME_MAX_BYTES, WALLET_RDNS_MAX_BYTES };

/** Whether `id` is one the session names itself (`auth`, `injected`, `solana:…`); compared without
 * case, so that no announcement even looks like one. */
export function isReservedConnectorId(id: string): boolean {
  const lower = id.toLowerCase();
  return lower === EMBEDDED_CONNECTOR_ID || lower === INJECTED_CONNECTOR_ID || lower.startsWith(SOLANA_CONNECTOR_PREFIX);
}

/** Rust's `str::trim` strips Unicode White_Space, which has U+0085 (JavaScript's \s does not); \s
 * has U+FEFF (Rust's does not). Trimming both keeps the name the server checks the one sent. */
export const trimName = (name: string) => name.replace(/^[\s\u0085]+|[\s\u0085]+$/g, "");

/** Text of 1 to `max` UTF-8 bytes that the server can read. It must be well-formed: JSON.stringify
 * writes a lone surrogate as an escape that serde_json refuses, and the whole frame with it. Checked
 * by a round trip through UTF-8 (TextEncoder replaces a lone surrogate, so the text does not come
 * back the same; nor does text that starts with U+FEFF, which TextDecoder drops: refused too). */
export function isText(text: unknown, max: number): text is string {
  if (typeof text !== "string" || !text) return false;
  const bytes = new TextEncoder().encode(text);
  return bytes.length <= max && new TextDecoder().decode(bytes) === text;
}

/** Characters a wallet's name may not hold: controls, format characters (bidi overrides and
 * isolates, zero-width characters, tags), private-use and unassigned ones, and white space but the
 * space ("\u202EksaMateM" reads "MetaMask"). A courtesy: the rule is the server's
 * (actors/src/model/display.rs `is_hidden`, which also has variation selectors and fillers), and it
 * leaves out only the wallet that breaks it, so what this misses costs no other wallet. */
const HIDDEN = /(?! )[\p{C}\s]/u;

/** Whether the server takes a wallet of this name (trimmed: 1 to WALLET_NAME_MAX_BYTES bytes, no
 * hidden characters) and, for an EIP-6963 one, rdns (1 to WALLET_RDNS_MAX_BYTES bytes, not a
 * reserved connector id); a wallet it does not take is left out, with a console warning. */
export function isReportable(name: string, rdns?: string): boolean {
  const ok = isText(name, WALLET_NAME_MAX_BYTES) && !HIDDEN.test(name) && (rdns === undefined || (isText(rdns, WALLET_RDNS_MAX_BYTES) && !isReservedConnectorId(rdns)));
  if (!ok) console.warn("Vestibule: ignored a wallet:", rdns ?? name);
  return ok;
}

/** The icon as reported: a `data:image/` URL the server keeps, or nothing. */
export const reportableIcon = (icon: unknown): string | undefined => (isText(icon, WALLET_ICON_MAX_BYTES) && icon.startsWith("data:image/") ? icon : undefined);

/** Whether `value` is an object with a function `method` (a provider's `request`, a Wallet Standard
 * feature's method). */
export function hasMethod<K extends string>(value: unknown, method: K): value is Record<K, (...args: never[]) => unknown> {
  return value !== null && typeof value === "object" && method in value && typeof (value as Record<string, unknown>)[method] === "function";
}

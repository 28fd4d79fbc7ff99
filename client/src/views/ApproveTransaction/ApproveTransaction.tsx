// The ApproveTransaction view (spec §2, §4 Wallet request outcome): the host app asked the connected
// wallet to sign or send, and the request waits on the session's transaction stack
// (`hostRequests.stack`, oldest first). The view shows the request on top of the stack in words with
// its key params (a transaction's receiver, value in the network's native units and whether it
// carries data; a message's text), asks the visitor to approve it in the wallet, says how many more
// wait, and offers Cancel (`CancelHostRequest`: the host gets 4001 and the wallet's prompt is
// withdrawn). While sign-in is required and no sign-in session exists the server keeps the modal
// from closing (`modal.closable`); the view says so, and Cancel still refuses the request.

import { useEffect, useRef } from "react";
import { useSessionSelector, useWidget } from "../../context/widgetContext";
import type { HostRequest } from "../../generated/HostRequest";
import type { NativeCurrency } from "../../generated/NativeCurrency";
import { Spinner } from "../../components/Spinner/Spinner";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import { truncateAddress } from "../Account/Account";
import css from "./ApproveTransaction.css?inline";

/** What each signing or sending method asks, in words. */
const METHOD_WORDS: Record<string, string> = {
  personal_sign: "Sign a message",
  eth_signTypedData_v4: "Sign typed data",
  eth_sendTransaction: "Send a transaction",
  wallet_sendCalls: "Send calls",
  wallet_grantPermissions: "Grant permissions",
  wallet_revokePermissions: "Revoke permissions",
};

export function methodInWords(method: string): string {
  return METHOD_WORDS[method] ?? method;
}

/** `raw` (a hex quantity or a decimal string) in units of `decimals` digits, exactly, without
 * trailing zeros; null when it is not a quantity. */
export function formatUnits(raw: string, decimals: number): string | null {
  let value: bigint;
  try {
    if (!/^(0x[0-9a-fA-F]+|[0-9]+)$/.test(raw)) return null;
    value = BigInt(raw);
  } catch {
    return null;
  }
  const scale = 10n ** BigInt(decimals);
  const whole = value / scale;
  const fraction = (value % scale).toString().padStart(decimals, "0").replace(/0+$/, "");
  return fraction ? `${whole}.${fraction}` : whole.toString();
}

// Characters that reorder or hide text (bidi controls, zero-width ones): shown by their code point,
// so that a message cannot read differently here than what is signed.
const HIDDEN_CHARACTERS = /[\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/g;

/** Text from a request as it is shown: every hiding or reordering character spelled out. */
export function shownText(text: string): string {
  return text.replace(HIDDEN_CHARACTERS, (c) => `[U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}]`);
}

/** A personal_sign message as text: hex decoded as UTF-8 when it is printable, else as given. */
export function messageText(message: string): string {
  return shownText(decodedMessage(message));
}

function decodedMessage(message: string): string {
  const hex = /^0x([0-9a-fA-F]{2})*$/.test(message) ? message.slice(2) : null;
  if (hex === null) return message;
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    // Printable: no control characters but line breaks and tabs.
    return /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/.test(text) ? message : text;
  } catch {
    return message;
  }
}

function field(value: unknown, key: string): unknown {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? Object.entries(value).find(([k]) => k === key)?.[1] : undefined;
}

function first(params: unknown, index = 0): unknown {
  return Array.isArray(params) ? params[index] : undefined;
}

/** The key params of a request, as label and value rows. */
export function requestDetails(request: HostRequest, currency: NativeCurrency | null): [string, string][] {
  const rows: [string, string][] = [];
  switch (request.method) {
    case "eth_sendTransaction": {
      const tx = first(request.params);
      const to = field(tx, "to");
      rows.push(["To", typeof to === "string" ? truncateAddress(to) : "New contract"]);
      const value = field(tx, "value");
      // Absent is zero; anything else that does not read as a quantity is said so, not shown as 0.
      const amount = value === undefined || value === null ? "0" : typeof value === "string" ? formatUnits(value, currency?.decimals ?? 18) : null;
      rows.push(["Value", amount === null ? "Unreadable" : `${amount} ${currency?.symbol ?? ""}`.trim()]);
      // Either field carries calldata (a wallet reads whichever is set).
      const carries = [field(tx, "data"), field(tx, "input")].some((d) => d !== undefined && d !== null && d !== "0x" && d !== "");
      rows.push(["Data", carries ? "Carries data" : "None"]);
      break;
    }
    case "personal_sign": {
      // EIP-191 order is [message, address]; some libraries still send [address, message].
      const [a, b] = [first(request.params), first(request.params, 1)];
      const legacy = typeof a === "string" && /^0x[0-9a-fA-F]{40}$/.test(a) && typeof b === "string";
      const message = legacy ? b : a;
      if (typeof message === "string") rows.push(["Message", messageText(message)]);
      break;
    }
    case "eth_signTypedData_v4": {
      const raw = first(request.params, 1);
      let typed: unknown = raw;
      if (typeof raw === "string") {
        try {
          typed = JSON.parse(raw);
        } catch {
          typed = undefined;
        }
      }
      const primary = field(typed, "primaryType");
      const domain = field(typed, "domain");
      const [name, contract, chainId] = [field(domain, "name"), field(domain, "verifyingContract"), field(domain, "chainId")];
      if (typeof primary === "string") rows.push(["Type", shownText(primary)]);
      if (typeof name === "string") rows.push(["Domain", shownText(name)]);
      if (typeof contract === "string") rows.push(["Contract", truncateAddress(contract)]);
      if (typeof chainId === "string" || typeof chainId === "number") rows.push(["Chain", String(chainId)]);
      break;
    }
    case "wallet_sendCalls": {
      const calls = field(first(request.params), "calls");
      if (Array.isArray(calls)) rows.push(["Calls", String(calls.length)]);
      break;
    }
  }
  return rows;
}

export function ApproveTransaction() {
  const widget = useWidget();
  const request = useSessionSelector((s) => {
    const top = s.hostRequests.stack.at(-1);
    return top === undefined ? null : (s.hostRequests.items[top] ?? null);
  });
  const waiting = useSessionSelector((s) => Math.max(0, s.hostRequests.stack.length - 1)) ?? 0;
  const currency = useSessionSelector((s) => {
    const network = request?.network ?? s.connection.namespaces.eip155?.network?.caipNetworkId;
    return s.networks.find((n) => n.caipNetworkId === network)?.nativeCurrency ?? null;
  });
  const closable = useSessionSelector((s) => s.modal.closable) ?? true;
  // The embedded wallet draws its own approval: the secure frame is placed over this box. The
  // request is the route's (sign-in, send) or the host's on top of the stack.
  const embedded =
    useSessionSelector((s) => {
      const id = s.router.stack.at(-1)?.params?.requestId ?? request?.walletRequest;
      return id ? s.requests.items[id]?.connectorId === "auth" : false;
    }) ?? false;
  const slot = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!embedded) return;
    widget.embedded?.placeApproval(slot.current);
    return () => widget.embedded?.placeApproval(null);
  }, [embedded, widget]);
  if (embedded) {
    return (
      <section className="vst-approve" aria-label="Approve transaction" data-testid="approve-transaction" data-embedded="true">
        <Stylesheet id="approve-transaction" css={css} />
        <div ref={slot} className="vst-approve__frame" data-testid="approve-frame-slot" />
      </section>
    );
  }
  if (!request) {
    return (
      <section className="vst-approve" aria-label="Approve transaction" data-testid="approve-transaction">
        <Stylesheet id="approve-transaction" css={css} />
        <p className="vst-muted">No request is waiting for approval.</p>
      </section>
    );
  }
  const details = requestDetails(request, currency ?? null);
  return (
    <section className="vst-approve" aria-label="Approve transaction" data-testid="approve-transaction" data-method={request.method}>
      <Stylesheet id="approve-transaction" css={css} />
      <h3 className="vst-approve__title">{methodInWords(request.method)}</h3>
      {details.length > 0 && (
        <dl className="vst-approve__details" data-testid="approve-details">
          {details.map(([label, value]) => (
            <div key={label} className="vst-approve__row">
              <dt className="vst-muted">{label}</dt>
              <dd data-field={label}>{value}</dd>
            </div>
          ))}
        </dl>
      )}
      <p className="vst-approve__status" role="status">
        <Spinner />
        Approve the request in your wallet
      </p>
      {waiting > 0 && (
        <p className="vst-muted" data-testid="approve-waiting">
          {waiting === 1 ? "1 more request waits" : `${waiting} more requests wait`}
        </p>
      )}
      {!closable && (
        <p className="vst-muted" data-testid="approve-sign-in">
          Sign-in is required: this window stays open until you approve or cancel.
        </p>
      )}
      <button type="button" className="vst-button" data-variant="quiet" onClick={() => widget.send({ type: "CancelHostRequest", requestId: request.id })}>
        Cancel
      </button>
    </section>
  );
}

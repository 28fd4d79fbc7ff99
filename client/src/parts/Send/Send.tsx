// The Send view (a part: loaded only when the send feature is on and the view is opened; spec §4
// Send, §5 Send). The server owns the form: what the visitor types goes to it as `SetSendForm`
// (debounced, so typing an address is one command, not forty), it validates `SubmitSend` with the
// catalogue's messages, asks the connected wallet through the session's request queue, and resets
// the form (a new `formVersion`) after a send. The inputs start from the server's form, so a reload
// keeps what was typed, and start again when the version changes. The same form sends SOL and SPL
// tokens from a Solana account (the server builds the transfer; the receiver is a base58 address).

import { useEffect, useId, useRef, useState } from "react";
import { useRegion, useSessionSelector, useWidget } from "../../context/widgetContext";
import type { SendForm } from "../../generated/SendForm";
import type { SentStatus } from "../../generated/SentStatus";
import type { SentTransaction } from "../../generated/SentTransaction";
import type { TokenBalance } from "../../generated/TokenBalance";
import { Spinner } from "../../components/Spinner/Spinner";
import { BackToAccount } from "../../components/BackToAccount/BackToAccount";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import { truncateAddress } from "../../views/Account/Account";
import css from "./Send.css?inline";

/** How long typing must pause before the form goes to the server. */
export const FORM_DEBOUNCE_MS = 300;

const STATUS_TEXT: Record<SentStatus, string> = {
  pending: "Pending",
  confirmed: "Confirmed",
  reverted: "Reverted",
  unconfirmed: "Not confirmed yet",
};

/** A transaction's page on a block explorer: `/tx/<hash>` under the explorer's path, keeping its
 * query (Solana's explorers name the cluster there: `https://explorer.solana.com/?cluster=devnet`). */
export function explorerTxUrl(explorer: string, hash: string): string {
  try {
    const url = new URL(explorer);
    url.pathname = `${url.pathname.replace(/\/$/, "")}/tx/${encodeURIComponent(hash)}`;
    return url.toString();
  } catch {
    return `${explorer.replace(/\/$/, "")}/tx/${encodeURIComponent(hash)}`;
  }
}

/** What the receiver field shows before anything is typed, by the account's namespace. */
const RECEIVER_PLACEHOLDER: Record<string, string> = { eip155: "0x…", solana: "Solana address (base58)" };

/** The status, linked to the transaction's page when its network has an explorer. */
function StatusLink({ explorer, hash, children }: { explorer: string | undefined; hash: string; children: string }) {
  if (!explorer) return <>{children}</>;
  return (
    <a href={explorerTxUrl(explorer, hash)} target="_blank" rel="noreferrer noopener">
      {children}
    </a>
  );
}

function Sent({ sent }: { sent: SentTransaction[] }) {
  // Each transaction links to its own network's explorer: a switch between sends leaves the
  // earlier ones on another chain.
  const networks = useSessionSelector((s) => s.networks);
  const explorerOf = (network: string) => networks?.find((n) => n.caipNetworkId === network)?.blockExplorers[0];
  return (
    <section className="vst-send__sent" aria-label="Sent transactions">
      <h3 className="vst-send__heading">Sent</h3>
      <ul className="vst-send__list">
        {sent.map((s) => (
          <li key={s.hash} className="vst-send__tx" data-testid="sent-transaction" data-status={s.status} data-hash={s.hash}>
            <span>
              {s.transfer.amount} {s.transfer.symbol} <span className="vst-muted">to {truncateAddress(s.transfer.receiver)}</span>
            </span>
            <span className="vst-send__status" data-status={s.status}>
              {s.status === "pending" && <Spinner />}
              <StatusLink explorer={explorerOf(s.transfer.network)} hash={s.hash}>
                {STATUS_TEXT[s.status]}
              </StatusLink>
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}

function Form({ initial, version, tokens }: { initial: SendForm; version: number; tokens: TokenBalance[] }) {
  const widget = useWidget();
  const sending = useRegion("send") === "sending";
  const error = useSessionSelector((s) => s.send.error);
  const namespace = useSessionSelector((s) => s.connection.activeNamespace);
  const [form, setForm] = useState<SendForm>(initial);
  const id = useId();
  // The pending debounced form; sent at once on submit and when the view goes away.
  const pending = useRef<{ timer: ReturnType<typeof setTimeout>; form: SendForm } | null>(null);
  const flush = () => {
    if (!pending.current) return;
    clearTimeout(pending.current.timer);
    widget.send({ type: "SetSendForm", form: pending.current.form });
    pending.current = null;
  };
  // Typing not sent yet goes to the server when the view goes away, but not when the server reset
  // the form (a new version): that would bring back what the reset cleared.
  useEffect(
    () => () => {
      if (widget.transport.getSnapshot().context.mirror.state?.send.formVersion === version) flush();
      else if (pending.current) clearTimeout(pending.current.timer);
    },
    [],
  );
  const change = (next: SendForm, now = false) => {
    setForm(next);
    if (pending.current) clearTimeout(pending.current.timer);
    pending.current = { form: next, timer: setTimeout(flush, FORM_DEBOUNCE_MS) };
    if (now) flush();
  };
  const token = tokens.find((t) => t.asset === form.token);
  return (
    <form
      className="vst-send__form"
      aria-label="Send tokens"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        if (pending.current) {
          clearTimeout(pending.current.timer);
          pending.current = null;
        }
        widget.send({ type: "SubmitSend", form });
      }}
    >
      <label className="vst-send__label" htmlFor={`${id}-token`}>
        Token
      </label>
      <select
        id={`${id}-token`}
        className="vst-input"
        value={form.token ?? ""}
        disabled={sending}
        onChange={(e) => change({ ...form, token: e.currentTarget.value || null }, true)}
      >
        <option value="">Choose a token</option>
        {tokens.map((t) => (
          <option key={t.asset} value={t.asset}>
            {t.symbol} ({t.display})
          </option>
        ))}
      </select>
      <label className="vst-send__label" htmlFor={`${id}-amount`}>
        Amount
      </label>
      <div className="vst-send__amount">
        <input
          id={`${id}-amount`}
          className="vst-input"
          inputMode="decimal"
          autoComplete="off"
          placeholder="0.0"
          value={form.amount}
          disabled={sending}
          onChange={(e) => change({ ...form, amount: e.currentTarget.value })}
        />
        {token && (
          <button type="button" className="vst-button vst-send__max" disabled={sending} onClick={() => change({ ...form, amount: token.quantity }, true)}>
            Max
          </button>
        )}
      </div>
      {token && (
        <p className="vst-muted vst-send__balance" data-testid="send-balance">
          Balance: {token.display} {token.symbol}
        </p>
      )}
      <label className="vst-send__label" htmlFor={`${id}-receiver`}>
        To
      </label>
      <input
        id={`${id}-receiver`}
        className="vst-input"
        autoComplete="off"
        spellCheck={false}
        placeholder={RECEIVER_PLACEHOLDER[namespace ?? "eip155"] ?? ""}
        value={form.receiver}
        disabled={sending}
        onChange={(e) => change({ ...form, receiver: e.currentTarget.value })}
      />
      {error && (
        <p role="alert" className="vst-send__error" data-testid="send-error">
          {error}
        </p>
      )}
      <button type="submit" className="vst-button" data-variant="primary" disabled={sending} aria-busy={sending}>
        {sending && <Spinner />}
        {sending ? "Confirm in your wallet…" : "Send"}
      </button>
    </form>
  );
}

export function Send() {
  const widget = useWidget();
  const send = useSessionSelector((s) => s.send);
  const native = useSessionSelector((s) => s.balances.native);
  const tokens = useSessionSelector((s) => s.balances.tokens);
  // The token picker needs the balances (the server ignores this while they are fresh).
  useEffect(() => widget.send({ type: "RefreshBalances" }), [widget]);
  if (!send) return null;
  const all = [...(native ? [native] : []), ...(tokens ?? [])];
  return (
    <section className="vst-send" aria-label="Send" data-testid="send">
      <Stylesheet id="send" css={css} />
      {/* Keyed by the server's form version: a reset form starts its inputs again. */}
      <Form key={send.formVersion} version={send.formVersion} initial={send.form} tokens={all} />
      {send.sent.length > 0 && <Sent sent={send.sent} />}
      <BackToAccount />
    </section>
  );
}

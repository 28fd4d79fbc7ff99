// The Account view's Activity tab (a part: loaded only when the activity feature is on and the tab
// is opened): the connected account's transactions on its chain as the server lists them (newest
// first, spam and other chains' already dropped), grouped by the year and month of their mined
// time, with + / − per transfer as the server signs them (spec §9 operation types), and the next
// page asked with `LoadActivity { more: true }` while the server has a next cursor. Loading, loaded
// and failed are the activity chart's states; a failure has emptied the list (spec §4).

import { useEffect } from "react";
import { useRegion, useSessionSelector, useWidget } from "../../context/widgetContext";
import type { ActivityTransaction } from "../../generated/ActivityTransaction";
import type { ActivityTransfer } from "../../generated/ActivityTransfer";
import { Spinner } from "../../components/Spinner/Spinner";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import { truncateAddress } from "../../views/Account/Account";
import css from "./Activity.css?inline";

/** The spec's message when there is no account to ask about. */
export const NO_ACCOUNT_ADDRESS = "Transactions can't be fetched without an accountAddress";

/** `2026-11` → `November 2026` (the server groups by UTC month, so this names it in UTC). */
export function monthTitle(yearMonth: string): string {
  const [year, month] = yearMonth.split("-").map(Number);
  if (!year || !month) return yearMonth;
  return new Date(Date.UTC(year, month - 1, 1)).toLocaleString("en-US", { month: "long", year: "numeric", timeZone: "UTC" });
}

/** Consecutive transactions of the same month, in the server's (newest first) order. */
export function groupByMonth(transactions: ActivityTransaction[]): Array<{ yearMonth: string; transactions: ActivityTransaction[] }> {
  const groups: Array<{ yearMonth: string; transactions: ActivityTransaction[] }> = [];
  for (const t of transactions) {
    const last = groups.at(-1);
    if (last?.yearMonth === t.yearMonth) last.transactions.push(t);
    else groups.push({ yearMonth: t.yearMonth, transactions: [t] });
  }
  return groups;
}

/** `+ 0.5 ETH`, `− 12 USDC`, or no sign for a transfer to oneself. */
export function transferText(t: ActivityTransfer): string {
  const sign = t.sign === "plus" ? "+" : t.sign === "minus" ? "−" : "";
  const what = t.nft ? (t.nft.name ?? "NFT") : `${t.quantity}${t.symbol ? ` ${t.symbol}` : ""}`;
  return sign ? `${sign} ${what}` : what;
}

const capitalized = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

function Counterparty({ t }: { t: ActivityTransaction }) {
  const incoming = t.transfers.some((x) => x.sign === "plus") && !t.transfers.some((x) => x.sign === "minus");
  const other = incoming ? t.sentFrom : t.sentTo;
  if (!other) return null;
  return (
    <span className="vst-muted vst-activity__party" title={other}>
      {incoming ? "from" : "to"} {truncateAddress(other)}
    </span>
  );
}

function Row({ t }: { t: ActivityTransaction }) {
  const day = new Date(t.minedAt * 1000).toLocaleString("en-US", { month: "short", day: "numeric", timeZone: "UTC" });
  return (
    <li className="vst-activity__row" data-testid="activity-transaction" data-hash={t.id} data-status={t.status}>
      <span className="vst-activity__what">
        <span className="vst-activity__type">
          {capitalized(t.operationType)}
          {t.status === "failed" && <span className="vst-activity__failed"> · Failed</span>}
        </span>
        <Counterparty t={t} />
      </span>
      <span className="vst-activity__amounts">
        {t.transfers.map((x, i) => (
          <span key={i} data-testid="activity-transfer" data-sign={x.sign ?? "none"}>
            {transferText(x)}
          </span>
        ))}
        <time className="vst-muted vst-activity__day" dateTime={new Date(t.minedAt * 1000).toISOString()}>
          {day}
        </time>
      </span>
    </li>
  );
}

export function Activity() {
  const widget = useWidget();
  const status = useRegion("activity");
  const address = useSessionSelector((s) => (s.connection.activeNamespace ? s.connection.namespaces[s.connection.activeNamespace]?.address : null));
  const activity = useSessionSelector((s) => s.activity);
  // The newest page when the tab shows (the server keeps a loaded list and answers at once).
  useEffect(() => {
    if (address) widget.send({ type: "LoadActivity", more: false });
  }, [widget, address]);
  const transactions = activity?.transactions ?? [];
  let body;
  if (!address) {
    body = (
      <p className="vst-activity__error" role="alert">
        {NO_ACCOUNT_ADDRESS}
      </p>
    );
  } else if (status === "failed") {
    body = (
      <p className="vst-activity__error" role="alert">
        {activity?.error ?? "Failed to fetch transactions"}
      </p>
    );
  } else if (transactions.length === 0) {
    body =
      status === "loaded" ? (
        <p className="vst-muted">No transactions yet.</p>
      ) : (
        <p className="vst-activity__loading vst-muted" role="status">
          <Spinner /> Loading transactions…
        </p>
      );
  } else {
    const loadingMore = status === "loading";
    body = (
      <>
        {groupByMonth(transactions).map((g) => (
          <section key={g.yearMonth} className="vst-activity__month" aria-label={monthTitle(g.yearMonth)} data-testid="activity-month" data-month={g.yearMonth}>
            <h3 className="vst-activity__title">{monthTitle(g.yearMonth)}</h3>
            <ul className="vst-activity__list">
              {g.transactions.map((t) => (
                <Row key={t.id} t={t} />
              ))}
            </ul>
          </section>
        ))}
        {(activity?.next || loadingMore) && (
          <button
            type="button"
            className="vst-button"
            data-variant="quiet"
            disabled={loadingMore}
            aria-busy={loadingMore}
            onClick={() => widget.send({ type: "LoadActivity", more: true })}
          >
            {loadingMore && <Spinner />}
            {loadingMore ? "Loading…" : "Load more"}
          </button>
        )}
      </>
    );
  }
  return (
    <div className="vst-activity" data-testid="activity" data-status={status}>
      <Stylesheet id="activity" css={css} />
      {body}
    </div>
  );
}

// The Account view's Tokens tab (a part, like Activity: the modal chunk drawn before any connection
// does not carry it): the connected account's balances as the server formats them (spec
// §5 Display: amounts floored to 3 decimals, fiat to 2 and only when the deployment has a price
// source: a balance without `usdValue` shows none, never a guessed one), native first, then the
// configured ERC-20 tokens in configuration order. Loading and the "Token Balance Unavailable"
// failure are the balances chart's states. The same rows serve a Solana account (SOL, then the
// configured SPL mints).

import { useRegion, useSessionSelector } from "../../context/widgetContext";
import type { TokenBalance } from "../../generated/TokenBalance";
import { Spinner } from "../../components/Spinner/Spinner";
import { Stylesheet } from "../../components/Stylesheet/Stylesheet";
import { usd, useBalancesSource } from "../../views/Account/Account";
import css from "./TokenBalances.css?inline";

function Row({ balance }: { balance: TokenBalance }) {
  return (
    <li className="vst-tokens__row" data-testid="token-balance" data-asset={balance.asset}>
      <span className="vst-tokens__icon" aria-hidden="true">
        {balance.iconUrl ? <img src={balance.iconUrl} alt="" width={32} height={32} /> : balance.symbol.slice(0, 1)}
      </span>
      <span className="vst-tokens__name">
        <span className="vst-tokens__symbol">{balance.symbol}</span>
        {balance.name && <span className="vst-muted vst-tokens__label">{balance.name}</span>}
      </span>
      <span className="vst-tokens__amount">
        <span data-testid="token-amount" title={`${balance.quantity} ${balance.symbol}`}>
          {balance.display} {balance.symbol}
        </span>
        {balance.usdValue !== null && (
          <span className="vst-muted vst-tokens__fiat" data-testid="token-fiat">
            {usd(balance.usdValue)}
          </span>
        )}
      </span>
    </li>
  );
}

export function TokenBalances() {
  const status = useRegion("balances");
  const source = useBalancesSource();
  const balances = useSessionSelector((s) => s.balances);
  const networkName = useSessionSelector((s) => (s.connection.activeNamespace ? s.connection.namespaces[s.connection.activeNamespace]?.network?.name : null)) ?? "this network";
  const all = balances ? [...(balances.native ? [balances.native] : []), ...balances.tokens] : [];
  let body;
  if (source === "unsupported") {
    body = <p className="vst-muted">Switch to a supported network to see your balances.</p>;
  } else if (source !== "served") {
    body = <p className="vst-muted">Token balances are not available on this deployment yet.</p>;
  } else if (status === "failed" && all.length === 0) {
    body = (
      <p className="vst-tokens__error" role="alert">
        {balances?.error ?? "Token Balance Unavailable"}
      </p>
    );
  } else if (all.length === 0) {
    body =
      status === "loaded" ? (
        <p className="vst-muted">No tokens on {networkName}.</p>
      ) : (
        <p className="vst-tokens__loading vst-muted" role="status">
          <Spinner /> Loading balances…
        </p>
      );
  } else {
    body = (
      <ul className="vst-tokens__list" aria-label="Token balances" aria-busy={status === "loading"}>
        {all.map((b) => (
          <Row key={b.asset} balance={b} />
        ))}
      </ul>
    );
  }
  return (
    <div className="vst-tokens" data-testid="token-balances" data-status={status}>
      <Stylesheet id="token-balances" css={css} />
      {body}
    </div>
  );
}

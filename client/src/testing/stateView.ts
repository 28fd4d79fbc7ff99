// For view tests: draw the widget's views from a session state the test sets (the replay timeline's
// view model, `replay/replayView.ts`), and record the commands the views send. The starting state is
// the end of the sign-in session the Rust side produced (an eip155 account connected, the modal on
// Account); tests change the parts they are about with plain object spreads, as the server's
// events would.

import type { ClientCommand } from "../generated/ClientCommand";
import type { SessionState } from "../generated/SessionState";
import type { TokenBalance } from "../generated/TokenBalance";
import type { ActivityTransaction } from "../generated/ActivityTransaction";
import type { View } from "../generated/View";
import { signInFrames } from "../generated/fixtureFrames";
import type { ViewModel } from "../context/widgetContext";
import { createReplayView } from "../replay/replayView";
import { act } from "@testing-library/react";
import { scriptedWidget, settle } from "./harness";

export interface StateView {
  model: ViewModel;
  /** Every command the views sent, in order. */
  commands: ClientCommand[];
  /** Draws `state` next (wrap in `act`). */
  show(state: SessionState): void;
  stop(): void;
}

export function stateView(state: SessionState): StateView {
  const view = createReplayView();
  const commands: ClientCommand[] = [];
  const model: ViewModel = { ...view.model, send: (c) => void commands.push(c) };
  view.show(state);
  return { model, commands, show: (s) => view.show(s), stop: () => view.stop() };
}

/**
 * Waits for a lazy view's effects once it is found. A lazy chunk commits outside render's `act`, so
 * its effects (its store subscriptions, the commands it sends when it shows) run in React's next
 * scheduler task, which may come after the test's next synchronous `act(() => view.show(...))` and
 * its checks on a busy machine. A timer queued now runs after that task.
 */
export async function settleLazyView(): Promise<void> {
  await act(() => new Promise<void>((resolve) => setTimeout(resolve, 0)));
}

/** The connected session at the end of the sign-in fixture (needs a DOM environment). */
export async function connectedState(): Promise<SessionState> {
  const s = scriptedWidget(signInFrames);
  await settle();
  s.welcome();
  s.serveUntil();
  const state = s.widget.state();
  s.widget.destroy();
  if (!state) throw new Error("the fixture has no state");
  return state;
}

export const NETWORK = "eip155:1";

export function onView(state: SessionState, view: View, below: View[] = ["Account"]): SessionState {
  return { ...state, router: { current: view, stack: [...below.map((v) => ({ view: v })), { view }] } };
}

/** The chain service serves the account's network. */
export function served(state: SessionState, networks: string[] = [NETWORK]): SessionState {
  return { ...state, chainService: { networks } };
}

export function token(symbol: string, over: Partial<TokenBalance> = {}): TokenBalance {
  const erc20 = over.address !== undefined ? over.address : symbol === "ETH" ? null : "0x5FbDB2315678afecb367f032d93F642f64180aa3";
  return {
    asset: erc20 ? `${NETWORK}/erc20:${erc20}` : `${NETWORK}/native`,
    address: erc20,
    name: symbol === "ETH" ? "Ether" : `${symbol} Token`,
    symbol,
    decimals: 18,
    raw: "1234567000000000000",
    quantity: "1.234567",
    display: "1.234",
    usdPrice: null,
    usdValue: null,
    iconUrl: null,
    ...over,
  };
}

/** Balances loaded for the connected account. */
export function withBalances(state: SessionState, native: TokenBalance, tokens: TokenBalance[] = [], totalUsd: string | null = null): SessionState {
  const address = state.connection.namespaces.eip155?.address ?? null;
  return {
    ...served(state),
    balances: { ...state.balances, status: "loaded", network: NETWORK, address, native, tokens, totalUsd, fetchedMs: 1, lastFetch: 1 },
  };
}

export function transaction(id: string, over: Partial<ActivityTransaction> = {}): ActivityTransaction {
  return {
    id,
    network: NETWORK,
    minedAt: Date.UTC(2026, 10, 20) / 1000,
    yearMonth: "2026-11",
    operationType: "send",
    status: "confirmed",
    sentFrom: "0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025",
    sentTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    transfers: [{ symbol: "ETH", quantity: "0.5", sign: "minus", nft: null }],
    ...over,
  };
}

export const SOLANA_NETWORK = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
export const SOLANA_ADDRESS = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";

/** A Solana account (on Solana Devnet, with `explorer` when given) connected beside the eip155 one,
 * and active; the chain service serves its network. */
export function withSolanaAccount(state: SessionState, explorer?: string): SessionState {
  const evm = state.connection.namespaces.eip155;
  if (!evm) throw new Error("the state has no eip155 connection");
  const network = { caipNetworkId: SOLANA_NETWORK, name: "Solana Devnet", supported: true };
  const solana = {
    ...evm,
    connectorId: "solana:Dev Solana Wallet",
    accounts: [{ address: SOLANA_ADDRESS, type: "eoa" as const }],
    address: SOLANA_ADDRESS,
    caipAddress: `${SOLANA_NETWORK}:${SOLANA_ADDRESS}`,
    network,
  };
  return {
    ...served(state, [NETWORK, SOLANA_NETWORK]),
    networks: [
      ...state.networks,
      { caipNetworkId: SOLANA_NETWORK, name: "Solana Devnet", nativeCurrency: { name: "Solana", symbol: "SOL", decimals: 9 }, rpcUrls: [], blockExplorers: explorer ? [explorer] : [], testnet: true },
    ],
    connection: {
      ...state.connection,
      namespaces: { ...state.connection.namespaces, solana },
      activeNamespace: "solana",
      activeFeatures: { balance: true, names: false, activity: false, send: true },
    },
  };
}

/** A balance of the Solana account: SOL, or an SPL token of `mint`. */
export function solanaToken(symbol: string, mint: string | null = null, over: Partial<TokenBalance> = {}): TokenBalance {
  return token(symbol, {
    asset: mint ? `${SOLANA_NETWORK}/token:${mint}` : `${SOLANA_NETWORK}/native`,
    address: mint,
    name: mint ? `${symbol} Token` : "Solana",
    decimals: mint ? 6 : 9,
    ...over,
  });
}

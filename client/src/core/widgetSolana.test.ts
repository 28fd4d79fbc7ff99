// @vitest-environment happy-dom
// The widget with a Solana wallet registered through the Wallet Standard, fed by the multichain
// session the Rust side produced: the wallet is reported with its namespace, the session's Solana
// connect request is performed with it, its account changes are forwarded while the widget lives,
// and destroy() stops listening.
import { afterEach, beforeEach, expect, it } from "vitest";
import { getWallets } from "@wallet-standard/app";
import { ed25519 } from "@noble/curves/ed25519";
import { multichainFrames } from "../generated/fixtureFrames";
import { scriptedWidget, settle } from "../testing/harness";
import { DevSolanaWallet } from "../wallet/solana/devSolanaWallet";

const unregister: Array<() => void> = [];
afterEach(() => {
  for (const u of unregister.splice(0)) u();
});
beforeEach(() => localStorage.clear());

it("reports, connects and follows a Wallet Standard wallet of the session", async () => {
  const wallet = DevSolanaWallet.random();
  unregister.push(getWallets().register(wallet));
  const s = scriptedWidget(multichainFrames);
  await settle();
  s.welcome();
  await settle();
  const reported = s.socket().commands().find((c) => c.type === "ReportWallets");
  expect(reported?.wallets).toEqual([{ name: "Dev Solana Wallet", icon: wallet.icon, kind: "ANNOUNCED", namespace: "solana" }]);

  // The session asks the Solana wallet to connect (its request in the frames): the widget answers with its accounts.
  s.serveUntil((w) => w.state()?.connection.namespaces.solana?.status === "connecting");
  await settle();
  const answer = s.socket().commands().find((c) => c.type === "ResolveWalletRequest" && JSON.stringify(c).includes("chains"));
  expect(answer).toMatchObject({ outcome: { status: "ok", result: { accounts: [wallet.address], chains: ["solana:mainnet", "solana:devnet", "solana:testnet"] } } });

  // Connected in the frames (with the test key's account): the wallet's change events are forwarded.
  s.serveUntil();
  await settle();
  const next = ed25519.utils.randomPrivateKey();
  wallet.switchAccount(next);
  await settle();
  const changed = s.socket().commands().filter((c) => c.type === "WalletAccountsChanged");
  expect(changed.at(-1)).toEqual({ type: "WalletAccountsChanged", connectorId: "solana:Dev Solana Wallet", accounts: [wallet.address] });

  s.widget.destroy();
  const sent = s.socket().sent.length;
  wallet.switchAccount(ed25519.utils.randomPrivateKey());
  await settle();
  expect(s.socket().sent.length).toBe(sent);
});

// The demo dapp served at `/`: a small example dapp built on the React entry (the widget shares the
// page's React). Query parameters: `?theme=light`, `?siwx=optional|required`, `?projectId=`,
// `?email=on&socials=google,x`, `?rpc=<node URL>` (the dev wallet's node), `?solana=devnet` (a
// multichain session: Ethereum and that Solana cluster; `mainnet`, `devnet` or `testnet`).
// With the gateway's local devnet (`/devnet.json`, served when `./scripts/run` started one) the
// session's EVM networks are the devnet's two chains and the dev wallet is its funded one; with
// `?solana=devnet` the dev Solana wallet is the devnet's funded one too, sending to its Solana peer.
// `window.__vestibule` is the widget's debug handle, `window.__provider` the host's EIP-1193
// provider, `window.__solana` its Solana provider, `window.__devWallet` the dev wallet.

import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import type { SessionOptionsInput } from "../core/options";
import type { SocialProvider } from "../generated/SocialProvider";
import { SOLANA_CLUSTERS } from "../generated/constants";
import { App } from "./App/App";
import { devnetNetworks, fetchDevnet, installDevSolanaWallet, installDevWallet } from "./devWallet";

const SOCIALS = { google: true, x: true, farcaster: true, discord: true, apple: true, github: true, facebook: true } satisfies Record<SocialProvider, true>;
function isSocial(s: string): s is SocialProvider {
  return Object.hasOwn(SOCIALS, s);
}

const params = new URLSearchParams(location.search);

async function start() {
  // Asked before the first render: the session's networks and the dev wallet depend on it.
  const devnet = await fetchDevnet();
  const devWallet = installDevWallet(params, devnet);
  if (devWallet) Object.assign(window, { __devWallet: devWallet });
  installDevSolanaWallet(params, devnet);

  const theme = params.get("theme") === "light" ? "light" : "dark";
  const socials = (params.get("socials") ?? "").split(",").filter((s) => s !== "");
  const siwx = params.get("siwx");
  const solana = Object.entries(SOLANA_CLUSTERS).find(([, c]) => c.chain === `solana:${params.get("solana")}`)?.[0];
  const evm = devnet ? devnetNetworks(devnet) : ["eip155:1"];
  const options: SessionOptionsInput = {
    themeMode: theme,
    ...(params.get("email") || socials.length ? { features: { email: params.get("email") === "on", socials: socials.filter(isSocial) } } : {}),
    ...(siwx ? { siwx: { required: siwx === "required", signOutOnDisconnect: false } } : {}),
    ...(devnet || solana ? { networks: [...evm, ...(solana ? [solana] : [])] } : {}),
  };

  const root = document.getElementById("root");
  if (root) {
    document.documentElement.dataset.theme = theme;
    createRoot(root).render(
      <StrictMode>
        <App
          widgetOptions={{ gatewayUrl: `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`, projectId: params.get("projectId") ?? "demo", options }}
          theme={theme}
          devWallet={devWallet !== null}
          devnet={devnet}
        />
      </StrictMode>,
    );
  }
}

void start();

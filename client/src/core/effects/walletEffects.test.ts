// The wallet requests the session issues for the account flows, performed on a provider: the send's
// `eth_sendTransaction`, the network switch's `wallet_switchEthereumChain` and
// `wallet_addEthereumChain` reach the wallet with the server's method and parameters as they are,
// and the wallet's answer or error code comes back as the outcome the session decides on.

import { expect, it } from "vitest";
import type { WalletRequest } from "../../generated/WalletRequest";
import { perform, type Eip1193Provider } from "./walletEffects";

const rpc = (id: string, method: string, params: unknown): WalletRequest => ({
  id,
  connectorId: "dev.vestibule.wallet",
  namespace: "eip155",
  kind: { type: "rpc", method, params },
  issuedMs: 1,
});

function wallet(answer: (method: string, params: unknown) => unknown): Eip1193Provider & { calls: Array<{ method: string; params?: unknown }> } {
  const calls: Array<{ method: string; params?: unknown }> = [];
  return {
    calls,
    request: async (args) => {
      calls.push(args);
      return answer(args.method, args.params);
    },
  };
}

const error = (code: number, message: string, data?: unknown) => Object.assign(new Error(message), { code, data });

it("sends the transfer the server built and answers with the hash", async () => {
  const tx = { from: "0x17c5185167401eD00cF5F5b2fc97D9BBfDb7D025", to: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", value: "0x16345785d8a0000" };
  const hash = `0x${"12".repeat(32)}`;
  const w = wallet(() => hash);
  expect(await perform(rpc("r1", "eth_sendTransaction", [tx]), w)).toEqual({ status: "ok", result: hash });
  expect(w.calls).toEqual([{ method: "eth_sendTransaction", params: [tx] }]);
});

it("asks the switch and the add with the server's parameters, and returns 4902 as the wallet's code", async () => {
  const switching = [{ chainId: "0x7a6a" }];
  const adding = [{ chainId: "0x7a6a", chainName: "Anvil 31338", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: ["http://127.0.0.1:8546"], blockExplorerUrls: null }];
  const known = new Set<string>();
  const w = wallet((method, params) => {
    const [p] = params as Array<{ chainId: string }>;
    if (method === "wallet_addEthereumChain") {
      known.add(p.chainId);
      return null;
    }
    if (!known.has(p.chainId)) throw error(4902, "Unrecognized chain ID");
    return null;
  });
  expect(await perform(rpc("r1", "wallet_switchEthereumChain", switching), w)).toEqual({ status: "error", code: 4902, message: "Unrecognized chain ID" });
  expect(await perform(rpc("r2", "wallet_addEthereumChain", adding), w)).toEqual({ status: "ok", result: null });
  expect(await perform(rpc("r3", "wallet_switchEthereumChain", switching), w)).toEqual({ status: "ok", result: null });
  expect(w.calls.map((c) => [c.method, c.params])).toEqual([
    ["wallet_switchEthereumChain", switching],
    ["wallet_addEthereumChain", adding],
    ["wallet_switchEthereumChain", switching],
  ]);
});

it("reads a 4902 nested in data.originalError, and keeps the outer code otherwise", async () => {
  const nested = wallet(() => {
    throw error(-32603, "Internal error", { originalError: { code: 4902, message: "Unrecognized chain ID" } });
  });
  expect(await perform(rpc("r1", "wallet_switchEthereumChain", [{ chainId: "0x1" }]), nested)).toMatchObject({ status: "error", code: 4902 });
  const declined = wallet(() => {
    throw error(4001, "User rejected the request.");
  });
  expect(await perform(rpc("r2", "wallet_switchEthereumChain", [{ chainId: "0x1" }]), declined)).toEqual({ status: "error", code: 4001, message: "User rejected the request." });
  const plain = wallet(() => {
    throw new Error("boom");
  });
  expect(await perform(rpc("r3", "eth_sendTransaction", [{}]), plain)).toEqual({ status: "error", code: -32603, message: "boom" });
});

// @vitest-environment happy-dom
// The host's Solana provider on a widget fed by the multichain session the Rust side produced, with
// the dev Solana wallet (the fixture's key) registered through the Wallet Standard: connect() asks
// the session (SwitchActiveChain while the EVM account is active) and resolves when Solana
// connects; signing goes to the wallet the session connected, for the session's network.
import { afterEach, beforeEach, expect, it } from "vitest";
import { ed25519 } from "@noble/curves/ed25519";
import { base58 } from "@scure/base";
import { getWallets } from "@wallet-standard/app";
import { multichainFrames } from "../generated/fixtureFrames";
import { scriptedWidget, settle } from "../testing/harness";
import { DevSolanaWallet } from "../wallet/solana/devSolanaWallet";
import { parseTransaction, serializeTransaction, writeLength } from "../wallet/solana/transaction";
import { createSolanaProvider } from "./solanaProvider";

const unregister: Array<() => void> = [];
afterEach(() => {
  for (const u of unregister.splice(0)) u();
});
beforeEach(() => localStorage.clear());

/** A legacy message whose only signer is `payer` (a memo-less transfer to itself: enough to sign). */
function messageFor(payer: Uint8Array): Uint8Array {
  const system = new Uint8Array(32);
  const data = Uint8Array.of(2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0);
  return Uint8Array.from([1, 0, 1, ...writeLength(2), ...payer, ...system, ...new Uint8Array(32).fill(9), ...writeLength(1), 1, ...writeLength(2), 0, 0, ...writeLength(data.length), ...data]);
}

it("connects through the session and signs with the session's Solana wallet", async () => {
  // The fixture's Solana account is the test key [7; 32]'s.
  const wallet = new DevSolanaWallet(new Uint8Array(32).fill(7));
  unregister.push(getWallets().register(wallet));
  const s = scriptedWidget(multichainFrames);
  const solana = createSolanaProvider(s.widget);
  const events: string[] = [];
  solana.on("connect", () => events.push("connect"));
  await settle();
  s.welcome();
  s.serveUntil((w) => w.state()?.connection.namespaces.eip155?.status === "connected");
  await settle();
  expect(solana.address).toBeNull();
  await expect(solana.signMessage(new Uint8Array(1))).rejects.toMatchObject({ code: 4900 });

  // The EVM account is active: connect() shows SwitchActiveChain, and resolves once Solana connects.
  const connecting = solana.connect();
  await settle();
  const asked = s.socket().commands().filter((c) => c.type === "SwitchActiveNamespace");
  expect(asked).toEqual([{ type: "SwitchActiveNamespace", namespace: "solana" }]);
  // The scripted session answers the command as a gateway would: accepted, with its diff next.
  const sent = s.socket().sent.find((m) => m.type === "command" && JSON.stringify(m).includes("SwitchActiveNamespace"));
  s.socket().serve({ type: "result", commandId: String(sent?.id), status: "accepted", seq: s.widget.seq() + 1 });
  s.serveUntil((w) => w.state()?.connection.namespaces.solana?.status === "connected");
  await expect(connecting).resolves.toEqual({ address: wallet.address });
  expect(events).toEqual(["connect"]);
  expect(solana.chain).toBe("solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1");

  const message = new TextEncoder().encode("from the host");
  const { signature } = await solana.signMessage(message);
  expect(ed25519.verify(signature, message, base58.decode(wallet.address))).toBe(true);
  const unsigned = serializeTransaction([new Uint8Array(64)], messageFor(base58.decode(wallet.address)));
  const signed = parseTransaction(await solana.signTransaction(unsigned));
  expect(ed25519.verify(signed.signatures[0], signed.message, base58.decode(wallet.address))).toBe(true);

  const disconnecting = solana.disconnect();
  await settle();
  expect(s.socket().commands().filter((c) => c.type === "Disconnect")).toEqual([{ type: "Disconnect", namespace: "solana" }]);
  const disconnect = s.socket().sent.find((m) => m.type === "command" && JSON.stringify(m).includes('"Disconnect"'));
  s.socket().serve({ type: "result", commandId: String(disconnect?.id), status: "accepted", seq: s.widget.seq() + 1 });
  await expect(disconnecting).resolves.toBeUndefined();
  s.widget.destroy();
  await expect(solana.connect()).rejects.toMatchObject({ code: 4900 });
});

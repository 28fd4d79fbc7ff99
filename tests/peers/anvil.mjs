// A real local EVM node for the JavaScript tests (the client's vitest and the Chromium e2e tests):
// anvil from this package (./scripts/test installs it and exports ANVIL_BIN). Anvil's first default
// account is funded; its key is public and used only against this throwaway node.

import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { createInterface } from "node:readline";

export const ANVIL_KEY_0 = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

const DEFAULT_BIN = resolve(import.meta.dirname, "node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil");

/**
 * Starts anvil on a free loopback port; fails (never skips) when anvil is not installed.
 * `genesisTimestamp` (seconds): the genesis block's time; anvil then dates each block that much
 * plus the seconds elapsed since it started (so a test's blocks fall on a known day).
 */
export async function startAnvil(chainId = 1, { genesisTimestamp } = {}) {
  const bin = process.env.ANVIL_BIN ?? DEFAULT_BIN;
  if (!existsSync(bin)) throw new Error(`anvil is not at ${bin}: run ./scripts/test (it installs tests/peers)`);
  const args = ["--port", "0", "--chain-id", String(chainId)];
  if (genesisTimestamp !== undefined) args.push("--timestamp", String(genesisTimestamp));
  const child = spawn(bin, args, { stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise((ok, fail) => {
    // Read every line (the banner is long) so the pipe never fills.
    createInterface({ input: child.stdout }).on("line", (line) => {
      const m = /Listening on (\S+)/.exec(line);
      if (m) ok(`http://${m[1]}`);
    });
    child.once("exit", (code) => fail(new Error(`anvil exited with ${code} before listening`)));
  });
  return {
    url,
    pid: child.pid,
    stop: () =>
      new Promise((ok) => {
        if (child.exitCode !== null) return ok();
        child.once("exit", () => ok());
        child.kill("SIGTERM");
      }),
  };
}

/**
 * The receipt of `hash`, once the node has mined it. anvil answers eth_sendRawTransaction before
 * its miner has run, so on a busy machine the receipt can be null for a moment: poll (counted, with
 * a bound that only ends a hung test) instead of reading once.
 */
export async function waitForReceipt(url, hash, tries = 600) {
  for (let i = 0; i < tries; i += 1) {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getTransactionReceipt", params: [hash] }),
    });
    const { result } = await response.json();
    if (result) return result;
    await new Promise((ok) => setTimeout(ok, 50));
  }
  throw new Error(`no receipt for ${hash} after ${tries} polls`);
}

// A real local EVM node for the JavaScript tests (the client's vitest and the Chromium e2e tests):
// anvil from this package (./scripts/test installs it and exports ANVIL_BIN). Anvil's first default
// account is funded; its key is public and used only against this throwaway node.

import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { createInterface } from "node:readline";

export const ANVIL_KEY_0 = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

const DEFAULT_BIN = resolve(import.meta.dirname, "node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil");

/** Starts anvil on a free loopback port; fails (never skips) when anvil is not installed. */
export async function startAnvil(chainId = 1) {
  const bin = process.env.ANVIL_BIN ?? DEFAULT_BIN;
  if (!existsSync(bin)) throw new Error(`anvil is not at ${bin}: run ./scripts/test (it installs tests/peers)`);
  const child = spawn(bin, ["--port", "0", "--chain-id", String(chainId)], { stdio: ["ignore", "pipe", "inherit"] });
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
    stop: () =>
      new Promise((ok) => {
        if (child.exitCode !== null) return ok();
        child.once("exit", () => ok());
        child.kill("SIGTERM");
      }),
  };
}

// The local Solana peer for the JavaScript tests (the client's vitest and the Chromium e2e tests):
// LiteSVM behind JSON-RPC (solana/server.mjs), started as a child process on a free loopback port by
// scripts/solana-peer.mjs, which funds the dev Solana wallet's key and creates a demo SPL mint. The
// child exits when its standard input closes, so it never outlives the test process; `stop()` ends
// it by its pid.

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { createInterface } from "node:readline";

/** The dev Solana wallet's test key: { secretKey (hex ed25519 seed), address (base58) }. */
export const SOLANA_DEV_KEY = JSON.parse(readFileSync(resolve(import.meta.dirname, "solana-dev-key.json"), "utf8"));

const SCRIPT = resolve(import.meta.dirname, "scripts/solana-peer.mjs");

/** Starts a peer; `options`: { cluster = "devnet", fund = dev key address, sol = 10, decimals = 6, tokens = 1000 }. */
export async function startSolanaPeer(options = {}) {
  const args = [SCRIPT, "--exit-with-stdin"];
  for (const [name, value] of Object.entries(options)) if (value !== undefined) args.push(`--${name}`, String(value));
  const child = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "inherit"] });
  const info = await new Promise((ok, fail) => {
    createInterface({ input: child.stdout }).once("line", (line) => {
      try {
        ok(JSON.parse(line));
      } catch (e) {
        fail(e);
      }
    });
    child.once("exit", (code) => fail(new Error(`the Solana peer exited with ${code} before serving`)));
  });
  return {
    ...info,
    pid: child.pid,
    /** One JSON-RPC call; rejects with the error object's message. */
    async rpc(method, params = []) {
      const response = await fetch(info.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
      const body = await response.json();
      if (body.error) throw Object.assign(new Error(body.error.message), { code: body.error.code, data: body.error.data });
      return body.result;
    },
    stop: () =>
      new Promise((ok) => {
        if (child.exitCode !== null || child.signalCode !== null) return ok();
        child.once("exit", () => ok());
        child.kill("SIGTERM");
      }),
  };
}

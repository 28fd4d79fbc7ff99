#!/usr/bin/env node
// Starts the local Solana peer (LiteSVM behind JSON-RPC) and prepares it: funds a key in SOL and
// creates a demo SPL mint with a token account for it. Prints one JSON line once it serves:
//   {"url":"http://127.0.0.1:PORT","cluster":"devnet","genesisHash":"…","owner":"…","mint":"…","tokenAccount":"…","decimals":6,"tokens":1000}
// and writes the same to --out FILE when given (atomically: a reader never sees half of it; with
// --symbol and --name, which an SPL mint does not hold itself, added as "symbol" and "name"). Runs until SIGINT or SIGTERM (or, with
// --exit-with-stdin, until its standard input closes: how tests make sure it never outlives them).
//
//   node scripts/solana-peer.mjs [--host 127.0.0.1] [--port 0] [--cluster devnet|mainnet|testnet]
//                                [--fund ADDRESS] [--sol 10] [--decimals 6] [--tokens 1000] [--out FILE]
//                                [--symbol VDS] [--name "Vestibule Demo SPL"]
// --fund defaults to the dev Solana wallet's address (solana-dev-key.json); --tokens 0 skips the mint.

import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { createSolanaPeer, serve } from "../solana/server.mjs";
import { fundAndMint } from "../solana/setup.mjs";

const devKey = JSON.parse(readFileSync(resolve(import.meta.dirname, "../solana-dev-key.json"), "utf8"));
const { values } = parseArgs({
  options: {
    host: { type: "string", default: "127.0.0.1" },
    port: { type: "string", default: "0" },
    cluster: { type: "string", default: "devnet" },
    fund: { type: "string", default: devKey.address },
    sol: { type: "string", default: "10" },
    decimals: { type: "string", default: "6" },
    tokens: { type: "string", default: "1000" },
    out: { type: "string" },
    symbol: { type: "string" },
    name: { type: "string" },
    "exit-with-stdin": { type: "boolean", default: false },
  },
});

const peer = createSolanaPeer({ cluster: values.cluster });
const prepared = fundAndMint(peer, { owner: values.fund, sol: Number(values.sol), decimals: Number(values.decimals), tokens: Number(values.tokens) });
const server = await serve(peer, { host: values.host, port: Number(values.port) });
const label = { ...(values.symbol ? { symbol: values.symbol } : {}), ...(values.name ? { name: values.name } : {}) };
const info = { url: server.url, cluster: peer.cluster, genesisHash: peer.genesisHash, ...prepared, ...(prepared.mint ? label : {}) };
if (values.out) {
  writeFileSync(`${values.out}.tmp`, JSON.stringify(info, null, 2) + "\n");
  renameSync(`${values.out}.tmp`, values.out);
}
process.stdout.write(JSON.stringify(info) + "\n");

const stop = () => server.close().then(() => process.exit(0));
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
if (values["exit-with-stdin"]) {
  process.stdin.on("end", stop);
  process.stdin.on("close", stop);
  process.stdin.resume();
}

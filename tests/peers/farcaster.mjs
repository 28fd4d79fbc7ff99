// Sign In With Farcaster's peers for the tests, offline: a fake relay (node http, the three
// /v1/channel routes) and the IdRegistry on a local chain 10 (anvil, with the stub contract's
// runtime code placed at the registry's address by anvil_setCode).
//
// The relay keeps each channel the service opens; a test plays the Farcaster app with
// `complete(channelToken, { fid, privateKey })`: it builds the EIP-4361 message FIP-11 describes
// for the channel's domain, URI and nonce (chain 10, a `farcaster://fid/<fid>` resource), signs it
// EIP-191 with the key, and marks the channel completed.

import { createServer } from "node:http";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { secp256k1 } from "@noble/curves/secp256k1";
import { keccak_256 } from "@noble/hashes/sha3";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils";
import { startAnvil } from "./anvil.mjs";

/** Farcaster's IdRegistry on OP mainnet: the embedded service's default. */
export const ID_REGISTRY = "0x00000000Fc6c5F01Fc30151999387Bb99A9f489b";

const strip0x = (hex) => (hex.startsWith("0x") ? hex.slice(2) : hex);

/** EIP-55 checksummed address of a secp256k1 private key (hex). */
export function addressOf(privateKey) {
  const publicKey = secp256k1.getPublicKey(strip0x(privateKey), false);
  return checksum(bytesToHex(keccak_256(publicKey.slice(1)).slice(-20)));
}

export function checksum(address) {
  const lower = strip0x(address).toLowerCase();
  const hash = bytesToHex(keccak_256(utf8ToBytes(lower)));
  let out = "0x";
  for (let i = 0; i < lower.length; i += 1) out += parseInt(hash[i], 16) >= 8 ? lower[i].toUpperCase() : lower[i];
  return out;
}

/** personal_sign: 65 bytes r || s || v (v = 27 + recovery), hex. */
export function personalSign(message, privateKey) {
  const bytes = utf8ToBytes(message);
  const prefix = utf8ToBytes(`\x19Ethereum Signed Message:\n${bytes.length}`);
  const digest = keccak_256(new Uint8Array([...prefix, ...bytes]));
  const signature = secp256k1.sign(digest, strip0x(privateKey));
  return `0x${signature.toCompactHex()}${(27 + signature.recovery).toString(16)}`;
}

/** The sign-in message for a channel (EIP-4361 text, the fields FIP-11 fixes). */
export function siwfMessage(channel, { fid, address, issuedAt = new Date().toISOString() }) {
  const lines = [
    `${channel.domain} wants you to sign in with your Ethereum account:`,
    address,
    "",
    "Farcaster Auth",
    "",
    `URI: ${channel.siweUri}`,
    "Version: 1",
    "Chain ID: 10",
    `Nonce: ${channel.nonce}`,
    `Issued At: ${issuedAt}`,
  ];
  if (channel.expirationTime) lines.push(`Expiration Time: ${channel.expirationTime}`);
  if (channel.notBefore) lines.push(`Not Before: ${channel.notBefore}`);
  lines.push("Resources:", `- farcaster://fid/${fid}`);
  return lines.join("\n");
}

function readJson(request) {
  return new Promise((ok, fail) => {
    let body = "";
    request.setEncoding("utf8");
    request.on("data", (chunk) => {
      body += chunk;
      if (body.length > 64 * 1024) request.destroy();
    });
    request.on("end", () => {
      try {
        ok(body ? JSON.parse(body) : {});
      } catch (error) {
        fail(error);
      }
    });
    request.on("error", fail);
  });
}

/**
 * The fake relay on a free loopback port. Routes: POST /v1/channel (open a channel),
 * GET /v1/channel/status (Bearer channelToken: 202 pending or 200 completed),
 * POST /v1/channel/authenticate (Bearer channelToken: what the app signed; completes the channel).
 */
export async function startFarcasterRelay() {
  const channels = new Map();
  const server = createServer(async (request, response) => {
    const send = (status, body) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify(body));
    };
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? "")?.[1];
    try {
      if (request.method === "POST" && request.url === "/v1/channel") {
        const { siweUri, domain, nonce, notBefore, expirationTime } = await readJson(request);
        if (!siweUri || !domain) return send(400, { error: "siweUri and domain are required" });
        const channelToken = randomBytes(16).toString("hex");
        const channel = { siweUri, domain, nonce: nonce ?? randomBytes(8).toString("hex"), notBefore, expirationTime, state: "pending" };
        channels.set(channelToken, channel);
        const url = `https://warpcast.com/~/siwf?channelToken=${channelToken}`;
        return send(201, { channelToken, url, nonce: channel.nonce });
      }
      const channel = token && channels.get(token);
      if (request.method === "GET" && request.url === "/v1/channel/status") {
        if (!channel) return send(401, { error: "unknown channel" });
        const { state, nonce, message, signature, fid, username, displayName, pfpUrl, custody } = channel;
        return send(state === "completed" ? 200 : 202, { state, nonce, message, signature, fid, username, displayName, pfpUrl, custody, verifications: [] });
      }
      if (request.method === "POST" && request.url === "/v1/channel/authenticate") {
        if (!channel) return send(401, { error: "unknown channel" });
        Object.assign(channel, await readJson(request), { state: "completed" });
        return send(201, { state: "completed" });
      }
      send(404, { error: "not found" });
    } catch (error) {
      send(400, { error: String(error) });
    }
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    channels,
    /** The token of the last channel opened. */
    lastChannel: () => [...channels.keys()].at(-1),
    /** Plays the Farcaster app: signs the channel's message for `fid` with `privateKey`. */
    async complete(channelToken, { fid, privateKey, username = "alice", displayName = "Alice" }) {
      const channel = channels.get(channelToken);
      if (!channel) throw new Error(`no channel ${channelToken}`);
      const address = addressOf(privateKey);
      const message = siwfMessage(channel, { fid, address });
      const signature = personalSign(message, privateKey);
      const response = await fetch(`${url}/v1/channel/authenticate`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${channelToken}` },
        body: JSON.stringify({ message, signature, fid, username, displayName, pfpUrl: "", custody: address }),
      });
      if (!response.ok) throw new Error(`authenticate: HTTP ${response.status}`);
    },
    stop: () => new Promise((ok) => server.close(() => ok())),
  };
}

async function rpc(url, method, params) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const answer = await response.json();
  if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
  return answer.result;
}

/**
 * anvil with chain id 10 and the stub IdRegistry at `ID_REGISTRY`; `setCustody(fid, address)`
 * writes a custody address (through anvil's unlocked first account).
 */
export async function startFarcasterChain() {
  const anvil = await startAnvil(10);
  const artifact = JSON.parse(readFileSync(resolve(import.meta.dirname, "contracts/StubIdRegistry.json"), "utf8"));
  await rpc(anvil.url, "anvil_setCode", [ID_REGISTRY, `0x${strip0x(artifact.deployedBytecode)}`]);
  const [from] = await rpc(anvil.url, "eth_accounts", []);
  const selector = bytesToHex(keccak_256(utf8ToBytes("setCustody(uint256,address)")).slice(0, 4));
  return {
    ...anvil,
    idRegistry: ID_REGISTRY,
    async setCustody(fid, address) {
      const data = `0x${selector}${BigInt(fid).toString(16).padStart(64, "0")}${strip0x(address).toLowerCase().padStart(64, "0")}`;
      const hash = await rpc(anvil.url, "eth_sendTransaction", [{ from, to: ID_REGISTRY, data }]);
      for (let i = 0; i < 600; i += 1) {
        if (await rpc(anvil.url, "eth_getTransactionReceipt", [hash])) return;
        await new Promise((ok) => setTimeout(ok, 20));
      }
      throw new Error("setCustody was not mined");
    },
    async custodyOf(fid) {
      const selector = bytesToHex(keccak_256(utf8ToBytes("custodyOf(uint256)")).slice(0, 4));
      const result = await rpc(anvil.url, "eth_call", [{ to: ID_REGISTRY, data: `0x${selector}${BigInt(fid).toString(16).padStart(64, "0")}` }, "latest"]);
      return checksum(`0x${strip0x(result).slice(-40)}`);
    },
  };
}


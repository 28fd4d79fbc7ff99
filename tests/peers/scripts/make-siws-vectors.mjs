#!/usr/bin/env node
// Writes actors/tests/vectors/siws/*.json: Sign-In With Solana test vectors made independently of
// Vestibule's Rust code. Messages are built from input fields with the construction algorithm of
// Phantom's Sign-In With Solana specification (`createSignInMessageText`: header, address, then
// "\n\n" + statement, then "\n\n" + the advanced fields each on a line); signatures are ed25519 by
// @noble/curves over the message's UTF-8 bytes. Deterministic: fixed keys, ed25519 signs
// deterministically. Run from tests/peers: `node scripts/make-siws-vectors.mjs`.

import { writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { ed25519 } from "@noble/curves/ed25519";
import { bytesToHex } from "@noble/hashes/utils";
import { base58 } from "@scure/base";

const OUT = resolve(import.meta.dirname, "../../../actors/tests/vectors/siws");
const seed = (byte) => new Uint8Array(32).fill(byte);
const address = (byte) => base58.encode(ed25519.getPublicKey(seed(byte)));

// Phantom's construction, field for field.
function createSignInMessageText(input) {
  let message = `${input.domain} wants you to sign in with your Solana account:\n`;
  message += `${input.address}`;
  if (input.statement) message += `\n\n${input.statement}`;
  const fields = [];
  if (input.uri) fields.push(`URI: ${input.uri}`);
  if (input.version) fields.push(`Version: ${input.version}`);
  if (input.chainId) fields.push(`Chain ID: ${input.chainId}`);
  if (input.nonce) fields.push(`Nonce: ${input.nonce}`);
  if (input.issuedAt) fields.push(`Issued At: ${input.issuedAt}`);
  if (input.expirationTime) fields.push(`Expiration Time: ${input.expirationTime}`);
  if (input.notBefore) fields.push(`Not Before: ${input.notBefore}`);
  if (input.requestId) fields.push(`Request ID: ${input.requestId}`);
  if (input.resources) {
    fields.push(`Resources:`);
    for (const resource of input.resources) fields.push(`- ${resource}`);
  }
  if (fields.length) message += `\n\n${fields.join("\n")}`;
  return message;
}

const base = {
  domain: "app.example.com",
  address: address(1),
  uri: "https://app.example.com/login",
  version: "1",
  chainId: "mainnet",
  nonce: "oBbLoEldZs91",
  issuedAt: "2024-05-01T11:59:00Z",
};
const CAIP2 = {
  mainnet: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
  "solana:mainnet": "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
  devnet: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
  "solana:devnet": "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
  testnet: "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z",
  "solana:testnet": "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z",
  localnet: "solana:localnet",
};

const positive = {
  "required fields only": { ...base },
  "with statement": { ...base, statement: "Clicking Sign only proves you own this wallet. It costs nothing." },
  "every field": {
    ...base,
    domain: "app.example.com:8443",
    statement: "Sign in to Example",
    uri: "https://app.example.com:8443/login?next=%2Fhome",
    chainId: "devnet",
    expirationTime: "2024-05-01T12:09:00.500Z",
    notBefore: "2024-05-01T11:58:00+02:00",
    requestId: "req-7:a",
    resources: ["https://example.com/tos", "ipfs://bafybeiemxf5abjwjbikoz4mc3a3dla6ual3jsgpdr4cjr3oz3evfyavhwq/"],
  },
  "chain id testnet": { ...base, chainId: "testnet" },
  "chain id localnet": { ...base, chainId: "localnet" },
  "chain id solana:mainnet": { ...base, chainId: "solana:mainnet" },
  "chain id solana:devnet": { ...base, chainId: "solana:devnet" },
  "chain id solana:testnet": { ...base, chainId: "solana:testnet" },
  "empty request id": { ...base, requestId: "" },
  "a 32-character address": { ...base, address: "11111111111111111111111111111111" },
};
// Phantom's builder skips an empty request id; keep it in the text as the grammar allows (*pchar).
const messages = Object.fromEntries(
  Object.entries(positive).map(([name, f]) => {
    const text = createSignInMessageText(f) + (f.requestId === "" ? "" : "");
    return [name, { fields: f, message: name === "empty request id" ? text.replace(`Issued At: ${f.issuedAt}`, `Issued At: ${f.issuedAt}\nRequest ID: `) : text, caip10: `${CAIP2[f.chainId]}:${f.address}` }];
  }),
);

const ok = createSignInMessageText(base);
// Each refused for the reason named: Phantom's ABNF, or Vestibule's stricter rule (marked).
const negative = {
  "chain id not in the grammar (mainnet-beta)": { message: ok.replace("Chain ID: mainnet", "Chain ID: mainnet-beta"), field: "chainId" },
  "chain id as a genesis-hash reference": { message: ok.replace("Chain ID: mainnet", "Chain ID: 5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"), field: "chainId" },
  "chain id solana:localnet": { message: ok.replace("Chain ID: mainnet", "Chain ID: solana:localnet"), field: "chainId" },
  "chain id in capitals": { message: ok.replace("Chain ID: mainnet", "Chain ID: Mainnet"), field: "chainId" },
  "address with a non-base58 character (0)": { message: ok.replace(base.address, "0" + base.address.slice(1)), field: "address" },
  "address of 31 bytes": { message: ok.replace(base.address, base58.encode(new Uint8Array(31).fill(3))), field: "address" },
  "an Ethereum address": { message: ok.replace(base.address, "0x52908400098527886E0F7030069857D2E4169EE7"), field: "address" },
  "nonce shorter than 8": { message: ok.replace("Nonce: oBbLoEldZs91", "Nonce: abc1234"), field: "nonce" },
  "nonce with a symbol": { message: ok.replace("Nonce: oBbLoEldZs91", "Nonce: oBbLoEld-Zs91"), field: "nonce" },
  "version 2": { message: ok.replace("Version: 1", "Version: 2"), field: "version" },
  "issued at not RFC 3339": { message: ok.replace("Issued At: 2024-05-01T11:59:00Z", "Issued At: 2024-05-01 11:59:00"), field: "issuedAt" },
  "uri not a URI": { message: ok.replace("URI: https://app.example.com/login", "URI: app example"), field: "uri" },
  "statement with a quote": { message: createSignInMessageText({ ...base, statement: 'Say "hi"' }), field: "statement" },
  "CRLF line ends": { message: ok.replaceAll("\n", "\r\n"), field: null },
  "a trailing line feed": { message: ok + "\n", field: null },
  "the EIP-4361 layout (two empty lines before URI)": { message: ok.replace("\n\nURI: ", "\n\n\nURI: "), field: null },
  "a lower-case label": { message: ok.replace("Nonce: ", "nonce: "), field: null },
  "fields out of order": { message: ok.replace("Version: 1\nChain ID: mainnet", "Chain ID: mainnet\nVersion: 1"), field: null },
  "a resource without its dash": { message: ok + "\nResources:\nhttps://example.com/tos", field: null },
  "the Ethereum header": { message: ok.replace("Solana account", "Ethereum account"), field: null },
  "Vestibule: the minimal message (no URI, nonce or times)": { message: createSignInMessageText({ domain: base.domain, address: base.address }), field: null, vestibuleOnly: true },
  "Vestibule: no Issued At": { message: createSignInMessageText({ ...base, issuedAt: undefined }), field: null, vestibuleOnly: true },
};

// Verification: signed by key 1 (the address) unless said otherwise; judged at `time` for origin
// https://app.example.com, nonce oBbLoEldZs91, chain = the message's.
const sign = (message, byte = 1) => bytesToHex(ed25519.sign(new TextEncoder().encode(message), seed(byte)));
const every = messages["every field"].message;
const verification = {
  "valid": { message: ok, signature: sign(ok), time: "2024-05-01T12:00:00Z", valid: true },
  "valid with every field": { message: every, signature: sign(every), time: "2024-05-01T12:00:00Z", valid: true, domain: "app.example.com:8443" },
  "signed by another key": { message: ok, signature: sign(ok, 2), time: "2024-05-01T12:00:00Z", reason: "signature_mismatch" },
  "a tampered signature": { message: ok, signature: sign(ok).replace(/^(..)/, (b) => (parseInt(b, 16) ^ 1).toString(16).padStart(2, "0")), time: "2024-05-01T12:00:00Z", reason: "signature_mismatch" },
  "a tampered message": { message: ok.replace("oBbLoEldZs91", "oBbLoEldZs92"), signature: sign(ok), time: "2024-05-01T12:00:00Z", reason: "nonce_mismatch" },
  "a signature of 63 bytes": { message: ok, signature: sign(ok).slice(0, 126), time: "2024-05-01T12:00:00Z", reason: "malformed_signature" },
  "expired": { message: every, signature: sign(every), time: "2024-05-01T12:09:00.500Z", reason: "expired", domain: "app.example.com:8443" },
  "not yet valid": { message: every, signature: sign(every), time: "2024-05-01T09:57:59Z", reason: "not_yet_valid", domain: "app.example.com:8443" },
  "another domain": { message: ok.replace("app.example.com wants", "evil.example wants"), signature: sign(ok.replace("app.example.com wants", "evil.example wants")), time: "2024-05-01T12:00:00Z", reason: "domain_mismatch" },
};

const write = (name, value) => writeFileSync(resolve(OUT, name), JSON.stringify(value, null, 2) + "\n");
write("parsing_positive.json", messages);
write("parsing_negative.json", negative);
write("verification.json", verification);
console.log(`wrote ${Object.keys(messages).length + Object.keys(negative).length + Object.keys(verification).length} vectors to ${OUT}`);

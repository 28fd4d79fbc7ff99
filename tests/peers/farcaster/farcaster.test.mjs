// The Farcaster peers: the fake relay's channel round trip and the stub IdRegistry on chain 10.
import { test } from "node:test";
import assert from "node:assert/strict";
import { secp256k1 } from "@noble/curves/secp256k1";
import { keccak_256 } from "@noble/hashes/sha3";
import { utf8ToBytes, bytesToHex } from "@noble/hashes/utils";
import { addressOf, checksum, startFarcasterChain, startFarcasterRelay } from "../farcaster.mjs";

const KEY = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

function recover(message, signature) {
  const bytes = utf8ToBytes(message);
  const digest = keccak_256(new Uint8Array([...utf8ToBytes(`\x19Ethereum Signed Message:\n${bytes.length}`), ...bytes]));
  const hex = signature.slice(2);
  const sig = secp256k1.Signature.fromCompact(hex.slice(0, 128)).addRecoveryBit(parseInt(hex.slice(128), 16) - 27);
  const publicKey = sig.recoverPublicKey(digest).toRawBytes(false);
  return checksum(bytesToHex(keccak_256(publicKey.slice(1)).slice(-20)));
}

test("a channel opened, pending, then completed with a message signed by the given key", async () => {
  const relay = await startFarcasterRelay();
  try {
    const opened = await fetch(`${relay.url}/v1/channel`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ siweUri: "http://frame.test", domain: "frame.test", nonce: "abcdef0123456789", expirationTime: "2030-01-01T00:00:00Z" }),
    }).then((r) => r.json());
    assert.equal(opened.nonce, "abcdef0123456789");
    assert.match(opened.url, /channelToken=/);
    const status = () => fetch(`${relay.url}/v1/channel/status`, { headers: { authorization: `Bearer ${opened.channelToken}` } });
    const pending = await status();
    assert.equal(pending.status, 202);
    assert.equal((await pending.json()).state, "pending");
    await relay.complete(opened.channelToken, { fid: 77, privateKey: KEY });
    const done = await (await status()).json();
    assert.equal(done.state, "completed");
    assert.equal(done.fid, 77);
    assert.match(done.message, /^frame\.test wants you to sign in with your Ethereum account:\n/);
    assert.match(done.message, /\nChain ID: 10\nNonce: abcdef0123456789\n/);
    assert.match(done.message, /\nResources:\n- farcaster:\/\/fid\/77$/);
    assert.equal(recover(done.message, done.signature), addressOf(KEY));
    assert.equal((await fetch(`${relay.url}/v1/channel/status`, { headers: { authorization: "Bearer nope" } })).status, 401);
  } finally {
    await relay.stop();
  }
});

test("the stub IdRegistry on chain 10 answers custodyOf with the address set", async () => {
  const chain = await startFarcasterChain();
  try {
    const chainId = await fetch(chain.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }) }).then((r) => r.json());
    assert.equal(chainId.result, "0xa");
    await chain.setCustody(77, addressOf(KEY));
    assert.equal(await chain.custodyOf(77), addressOf(KEY));
    assert.equal(await chain.custodyOf(78), "0x0000000000000000000000000000000000000000");
  } finally {
    await chain.stop();
  }
});

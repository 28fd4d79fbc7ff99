// The local Solana peer: its JSON-RPC answers, real transactions (SOL and SPL) executed by LiteSVM,
// failures as a Solana node reports them, and no process left behind.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { hexToBytes } from "@noble/hashes/utils";
import { SOLANA_DEV_KEY, startSolanaPeer } from "../solana.mjs";
import { GENESIS_HASHES } from "./server.mjs";
import { associatedTokenAddress, base58, compileMessage, instructions, keypairFromSeed, parseTransaction, randomKeypair, signMessageInto, transaction, TOKEN_PROGRAM } from "./tx.mjs";

const dev = keypairFromSeed(hexToBytes(SOLANA_DEV_KEY.secretKey));
let peer;

before(async () => {
  peer = await startSolanaPeer();
});
after(() => peer?.stop());

async function signed(payer, ixs, signers = [payer]) {
  const { value } = await peer.rpc("getLatestBlockhash");
  return signMessageInto(compileMessage({ payer: payer.address, instructions: ixs, recentBlockhash: value.blockhash }), signers);
}
const b64 = (bytes) => Buffer.from(bytes).toString("base64");
const lamports = async (address) => (await peer.rpc("getBalance", [address])).value;
const tokens = async (owner, mint) =>
  (await peer.rpc("getTokenAccountsByOwner", [owner, { mint }, { encoding: "jsonParsed" }])).value.map((a) => a.account.data.parsed.info.tokenAmount.amount);

test("the key file's address is its seed's, and the peer funded it and made its demo token", async () => {
  assert.equal(dev.address, SOLANA_DEV_KEY.address);
  assert.equal(peer.owner, dev.address);
  assert.equal(await peer.rpc("getGenesisHash"), GENESIS_HASHES.devnet);
  assert.equal(await lamports(dev.address), 10_000_000_000);
  assert.equal(peer.tokenAccount, associatedTokenAddress(dev.address, peer.mint));
  assert.deepEqual(await tokens(dev.address, peer.mint), ["1000000000"]);
  const mint = await peer.rpc("getAccountInfo", [peer.mint, { encoding: "jsonParsed" }]);
  assert.equal(mint.value.owner, TOKEN_PROGRAM);
  assert.deepEqual([mint.value.data.parsed.type, mint.value.data.parsed.info.decimals, mint.value.data.parsed.info.supply], ["mint", 6, "1000000000"]);
  const raw = await peer.rpc("getTokenAccountsByOwner", [dev.address, { programId: TOKEN_PROGRAM }, { encoding: "base64" }]);
  assert.equal(Buffer.from(raw.value[0].account.data[0], "base64").length, 165);
  assert.deepEqual((await peer.rpc("getTokenAccountBalance", [peer.tokenAccount])).value, { amount: "1000000000", decimals: 6, uiAmount: 1000, uiAmountString: "1000" });
  assert.equal(await peer.rpc("getMinimumBalanceForRentExemption", [165]), 2039280);
});

test("a SOL transfer signed by the dev key is executed and finalized", async () => {
  const to = randomKeypair().address;
  const before = await lamports(dev.address);
  const wire = await signed(dev, [instructions.transfer(dev.address, to, 1_000_000)]);
  const simulated = await peer.rpc("simulateTransaction", [b64(wire), { encoding: "base64" }]);
  assert.equal(simulated.value.err, null);
  assert.equal(await lamports(to), 0, "a simulation changes nothing");
  const signature = await peer.rpc("sendTransaction", [b64(wire), { encoding: "base64" }]);
  assert.equal(signature, base58.encode(parseTransaction(wire).signatures[0]), "the transaction's id is its first signature");
  assert.equal(await lamports(to), 1_000_000);
  assert.equal(await lamports(dev.address), before - 1_000_000 - 5000, "the amount and one signature's fee");
  const status = await peer.rpc("getSignatureStatuses", [[signature, "1111111111111111111111111111111111111111111111111111111111111111"]]);
  assert.equal(status.value[0].confirmationStatus, "finalized");
  assert.equal(status.value[0].err, null);
  assert.equal(status.value[1], null);
  // The same transaction again is refused, as a node refuses a duplicate.
  await assert.rejects(peer.rpc("sendTransaction", [b64(wire), { encoding: "base64" }]), /AlreadyProcessed/);
});

test("an SPL TransferChecked to a new owner's associated account moves the tokens", async () => {
  const owner = randomKeypair().address;
  const destination = associatedTokenAddress(owner, peer.mint);
  const wire = await signed(dev, [
    instructions.createAssociatedTokenAccountIdempotent(dev.address, owner, peer.mint),
    instructions.transferChecked(peer.tokenAccount, peer.mint, destination, dev.address, 2_500_000n, 6),
  ]);
  await peer.rpc("sendTransaction", [b64(wire), { encoding: "base64" }]);
  assert.deepEqual(await tokens(owner, peer.mint), ["2500000"]);
  assert.deepEqual(await tokens(dev.address, peer.mint), ["997500000"]);
  // Wrong decimals: the token program refuses (MintDecimalsMismatch, custom error 18).
  const bad = await signed(dev, [instructions.transferChecked(peer.tokenAccount, peer.mint, destination, dev.address, 1n, 9)]);
  const simulated = await peer.rpc("simulateTransaction", [b64(bad), { encoding: "base64" }]);
  assert.deepEqual(simulated.value.err, { InstructionError: [0, { Custom: 18 }] });
});

test("failures read as a Solana node's: preflight, signatures, unknown methods, batches", async () => {
  const poor = randomKeypair();
  const overspend = await signed(poor, [instructions.transfer(poor.address, dev.address, 1)]);
  await assert.rejects(peer.rpc("sendTransaction", [b64(overspend), { encoding: "base64" }]), (e) => e.code === -32002 && /Transaction simulation failed/.test(e.message));
  const wire = await signed(dev, [instructions.transfer(dev.address, poor.address, 7)]);
  const { signatures, message } = parseTransaction(wire);
  const forged = signatures[0].slice();
  forged[0] ^= 1;
  await assert.rejects(peer.rpc("sendTransaction", [b64(transaction(message, [forged])), { encoding: "base64" }]), /SignatureFailure|signature/i);
  assert.equal(await lamports(poor.address), 0);
  // A signature count in a non-canonical encoding, or more signatures than the message requires:
  // refused as invalid (LiteSVM would abort the peer), and the peer still answers.
  for (const bad of [new Uint8Array([0x81, 0x00, ...signatures[0], ...message]), transaction(message, [signatures[0], new Uint8Array(64)])]) {
    await assert.rejects(peer.rpc("sendTransaction", [b64(bad), { encoding: "base64" }]), (e) => e.code === -32602, "refused as invalid");
  }
  assert.equal((await peer.rpc("getLatestBlockhash")).value.blockhash.length > 0, true, "the peer is still up");
  await assert.rejects(peer.rpc("getNothing"), (e) => e.code === -32601);
  await assert.rejects(peer.rpc("getBalance", ["not-base58-0OIl"]), (e) => e.code === -32602);
  const batch = await fetch(peer.url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "getGenesisHash" }, { jsonrpc: "2.0", id: 2, method: "getHealth" }]),
  }).then((r) => r.json());
  assert.deepEqual(batch.map((r) => r.result), [GENESIS_HASHES.devnet, "ok"]);
});

test("the peer answers as the cluster it is told to be", async () => {
  const mainnet = await startSolanaPeer({ cluster: "mainnet", tokens: 0 });
  try {
    assert.equal(await mainnet.rpc("getGenesisHash"), GENESIS_HASHES.mainnet);
    assert.equal(mainnet.mint, undefined);
  } finally {
    await mainnet.stop();
  }
});

test("each cluster's genesis hash is 32 bytes in base58 whose first 32 characters are the cluster's CAIP-2 reference", async () => {
  // The ids the gateway configures (docs/chain.md); the chain service sets aside an endpoint whose
  // getGenesisHash does not start with its network's reference (decision 0915).
  const caip2 = { devnet: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1", mainnet: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", testnet: "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z" };
  assert.deepEqual(Object.keys(GENESIS_HASHES).sort(), Object.keys(caip2).sort());
  for (const [cluster, hash] of Object.entries(GENESIS_HASHES)) {
    assert.equal(base58.decode(hash).length, 32, cluster);
    assert.equal(`solana:${hash.slice(0, 32)}`, caip2[cluster], cluster);
  }
  assert.equal(peer.genesisHash, GENESIS_HASHES.devnet, "devnet by default");
  const testnet = await startSolanaPeer({ cluster: "testnet", tokens: 0 });
  try {
    assert.equal(testnet.genesisHash, GENESIS_HASHES.testnet);
    assert.equal(await testnet.rpc("getGenesisHash"), testnet.genesisHash, "it answers the cluster it says it plays");
  } finally {
    await testnet.stop();
  }
});

test("a peer whose parent dies exits: no orphan", async () => {
  // A parent process that starts a peer, prints its pid and is then killed with SIGKILL.
  const code = `import { startSolanaPeer } from ${JSON.stringify(new URL("../solana.mjs", import.meta.url).href)};
    const p = await startSolanaPeer({ tokens: 0 }); console.log(p.pid); setInterval(() => {}, 1000);`;
  const parent = spawn(process.execPath, ["--input-type=module", "-e", code], { stdio: ["ignore", "pipe", "inherit"] });
  const pid = await new Promise((ok) => parent.stdout.once("data", (d) => ok(Number(String(d).trim()))));
  assert.ok(pid > 0);
  process.kill(pid, 0); // alive now
  parent.kill("SIGKILL");
  await new Promise((ok) => parent.once("exit", ok));
  // Wait for the peer to notice its closed standard input and exit (an event, polled).
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      break;
    }
    await new Promise((ok) => setTimeout(ok, 20));
  }
});

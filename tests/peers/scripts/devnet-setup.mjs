// Sets up running anvil chains as Vestibule's devnet: funds the dev wallet (tests/peers/dev-wallet.json)
// with ETH, deploys the demo ERC-20 (contracts/DemoToken.json) with the whole supply minted to it,
// checks both, and writes where everything is. Called by start_devnet in scripts/lib/devnet.sh.
//
// With `solana=FILE` (what scripts/solana-peer.mjs wrote with --out), also checks that the Solana
// peer holds the dev Solana wallet's SOL and demo SPL tokens and adds that network.
//
//   node scripts/devnet-setup.mjs OUT_DIR 31337=http://127.0.0.1:PORT 31338=http://127.0.0.1:PORT [solana=FILE]
//
// Writes, atomically:
//   OUT_DIR/devnet.json  { devWallet, devWalletKey, networks: { "eip155:31337": { chainId, rpcUrl, token },
//                          "solana:EtWT…": { cluster, genesisHash, rpcUrl, token } },
//                          solanaWallet, solanaWalletKey }
//                        (the gateway adds every network of it to its chain service and serves it at
//                        /devnet.json for the demo's dev wallets, keys included: they are public, see
//                        dev-wallet.json and solana-dev-key.json; a Solana token's address is its mint)
//   OUT_DIR/chain.toml   the chain service's [networks] configuration for the EVM chains
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const devWallet = JSON.parse(readFileSync(join(here, "..", "dev-wallet.json"), "utf8"));
const solanaKey = JSON.parse(readFileSync(join(here, "..", "solana-dev-key.json"), "utf8"));
const token = JSON.parse(readFileSync(join(here, "..", "contracts", "DemoToken.json"), "utf8"));

// anvil's first development account: unlocked on every anvil, so it deploys without a key here.
const DEPLOYER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const ETHER = 10n ** 18n;
const DEV_WALLET_ETH = 1_000n * ETHER;
const TOKEN_DECIMALS = 18;
const TOKEN_SUPPLY = 1_000_000n * 10n ** BigInt(TOKEN_DECIMALS);

const [outDir, ...chainArgs] = process.argv.slice(2);
if (!outDir || chainArgs.length === 0) {
  console.error("usage: devnet-setup.mjs OUT_DIR CHAIN_ID=RPC_URL...");
  process.exit(2);
}

let nextId = 1;
async function rpc(url, method, params) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, method, params }),
  });
  if (!response.ok) throw new Error(`${method} on ${url}: HTTP ${response.status}`);
  const body = await response.json();
  if (body.error) throw new Error(`${method} on ${url}: ${body.error.message}`);
  return body.result;
}

const hex = (n) => `0x${BigInt(n).toString(16)}`;
const word = (value) => BigInt(value).toString(16).padStart(64, "0");

async function receipt(url, hash) {
  // anvil answers before its miner has run: poll, with a bound (30 s) that only ends a hung node.
  for (let i = 0; i < 600; i++) {
    const found = await rpc(url, "eth_getTransactionReceipt", [hash]);
    if (found) return found;
    await new Promise((ok) => setTimeout(ok, 50));
  }
  throw new Error(`no receipt for ${hash} on ${url}`);
}

async function setUp(chainId, url) {
  const actual = Number(await rpc(url, "eth_chainId", []));
  if (actual !== chainId) throw new Error(`${url} serves chain ${actual}, not ${chainId}`);

  await rpc(url, "anvil_setBalance", [devWallet.address, hex(DEV_WALLET_ETH)]);

  // constructor(uint8 decimals_, address holder, uint256 supply)
  const data = token.bytecode + word(TOKEN_DECIMALS) + word(devWallet.address) + word(TOKEN_SUPPLY);
  const hash = await rpc(url, "eth_sendTransaction", [{ from: DEPLOYER, data }]);
  const deployed = await receipt(url, hash);
  if (deployed.status !== "0x1" || !deployed.contractAddress) throw new Error(`deploying DemoToken on ${url} failed`);
  const address = deployed.contractAddress;

  // balanceOf(devWallet)
  const balanceOf = `0x70a08231${word(devWallet.address)}`;
  const held = BigInt(await rpc(url, "eth_call", [{ to: address, data: balanceOf }, "latest"]));
  if (held !== TOKEN_SUPPLY) throw new Error(`the dev wallet holds ${held} tokens on ${url}, not ${TOKEN_SUPPLY}`);
  const eth = BigInt(await rpc(url, "eth_getBalance", [devWallet.address, "latest"]));
  if (eth !== DEV_WALLET_ETH) throw new Error(`the dev wallet holds ${eth} wei on ${url}`);

  return { chainId, rpcUrl: url, token: { address, name: "Vestibule Demo Token", symbol: "VDT", decimals: TOKEN_DECIMALS } };
}

/** The Solana peer as solana-peer.mjs prepared it, checked on the node: the dev Solana wallet's
 * SOL and its demo SPL tokens. */
async function setUpSolana(file) {
  const peer = JSON.parse(readFileSync(file, "utf8"));
  if (peer.owner !== solanaKey.address) throw new Error(`the Solana peer funded ${peer.owner}, not the dev Solana wallet ${solanaKey.address}`);
  if (!peer.mint) throw new Error("the Solana peer has no demo mint");
  const genesis = await rpc(peer.url, "getGenesisHash", []);
  if (genesis !== peer.genesisHash) throw new Error(`the Solana peer answers genesis ${genesis}, not ${peer.genesisHash}`);
  const { value: lamports } = await rpc(peer.url, "getBalance", [peer.owner]);
  if (!(lamports > 0)) throw new Error(`the dev Solana wallet holds ${lamports} lamports`);
  const { value: accounts } = await rpc(peer.url, "getTokenAccountsByOwner", [peer.owner, { mint: peer.mint }, { encoding: "jsonParsed" }]);
  const amount = accounts?.[0]?.account?.data?.parsed?.info?.tokenAmount?.amount;
  const expected = (BigInt(peer.tokens) * 10n ** BigInt(peer.decimals)).toString();
  if (amount !== expected) throw new Error(`the dev Solana wallet holds ${amount} of the demo mint, not ${expected}`);
  const id = `solana:${peer.genesisHash.slice(0, 32)}`;
  const token = { address: peer.mint, name: peer.name ?? "Vestibule Demo SPL", symbol: peer.symbol ?? "VDS", decimals: peer.decimals };
  return [id, { cluster: peer.cluster, genesisHash: peer.genesisHash, rpcUrl: peer.url, token }];
}

const networks = {};
let solana = null;
for (const arg of chainArgs) {
  const [id, value] = arg.split("=");
  if (id === "solana") {
    const [network, n] = await setUpSolana(value);
    networks[network] = n;
    solana = network;
  } else {
    networks[`eip155:${id}`] = await setUp(Number(id), value);
  }
}

function writeAtomically(path, text) {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

writeAtomically(
  join(outDir, "devnet.json"),
  `${JSON.stringify({ devWallet: devWallet.address, devWalletKey: devWallet.privateKey, networks, ...(solana ? { solanaWallet: solanaKey.address, solanaWalletKey: solanaKey.secretKey } : {}) }, null, 2)}\n`,
);

const toml = Object.entries(networks)
  .filter(([key]) => key.startsWith("eip155:"))
  .map(
    ([key, n]) =>
      `[networks."${key}"]\nrpc_urls = ["${n.rpcUrl}"]\n` +
      `tokens = [{ address = "${n.token.address}", name = "${n.token.name}", symbol = "${n.token.symbol}", decimals = ${n.token.decimals} }]\n`,
  )
  .join("\n");
writeAtomically(join(outDir, "chain.toml"), `# Written by tests/peers/scripts/devnet-setup.mjs for this devnet run.\n${toml}`);

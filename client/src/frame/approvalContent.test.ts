// What the approval page shows is what the frame signs (security review: a hostile host page may
// post any RPC_REQUEST to the frame; the frame's approval is the visitor's only safeguard).
// Each test is given / when / then: the request a host could post, what the frame does with it,
// and what the visitor saw against what was signed.

import { RLP } from "@ethereumjs/rlp";
import { base64 } from "@scure/base";
import { describe, expect, it } from "vitest";
import { compileMessage, instructions, randomKeypair, transaction as wireTransaction } from "../../../tests/peers/solana/tx.mjs";
import { typedDataDigest, type TypedData } from "../wallet/eip712";
import { addressesOf, splitSeed } from "./keys";
import { memoryDeviceStore } from "./deviceStore";
import { seal } from "./testSupport";
import { performRequest, type ApprovalText, type FrameContext, type FrameLogin, type RpcRequest } from "./wallet";

const FRAME = "frame-1";
const SYSTEM_PROGRAM = "11111111111111111111111111111111";
const SEED = Uint8Array.from({ length: 32 }, (_, i) => 255 - i);
const RECEIVER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const USDC = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48";
const ERC20_TRANSFER = "0xa9059cbb" + RECEIVER.slice(2).toLowerCase().padStart(64, "0") + (10n ** 12n).toString(16).padStart(64, "0");

/** A logged-in frame whose /api/rpc answers like a node; it records the raw transactions sent. */
async function wallet(node: Record<string, unknown> = {}) {
  const keyPair = await frameKeyPairFor();
  const store = memoryDeviceStore();
  const { device, server } = await splitSeed(SEED);
  await store.put("w1", device);
  const sent: string[] = [];
  const answers: Record<string, unknown> = {
    eth_getTransactionCount: "0x3",
    eth_estimateGas: "0x5208",
    eth_maxPriorityFeePerGas: "0x3b9aca00", // 1 gwei
    eth_getBlockByNumber: { baseFeePerGas: "0x2540be400" }, // 10 gwei
    ...node,
  };
  const ctx: FrameContext = {
    frameId: FRAME,
    frameToken: "token",
    keyPair,
    store,
    post: async (path, body) => {
      if (path === "/api/wallet/share") return { serverShare: await seal(keyPair.publicKey, server, FRAME) };
      if (path !== "/api/rpc") throw new Error(`no route ${path}`);
      if (body.method === "eth_sendRawTransaction") return (sent.push(String((body.params as string[])[0])), { result: "0x" + "ab".repeat(32) });
      return { result: answers[String(body.method)] };
    },
  };
  const login: FrameLogin = { userId: "u1", walletId: "w1", ...addressesOf(SEED) };
  const shown: ApprovalText[] = [];
  const approveAll = async (text: ApprovalText) => (shown.push(text), true);
  return { ctx, login, sent, shown, approveAll };
}

async function frameKeyPairFor() {
  const { frameKeyPair } = await import("./hpke");
  return frameKeyPair();
}

const evm = (method: string, params: unknown): RpcRequest => ({ requestId: "r1", connectorId: "auth", namespace: "eip155", chainId: "eip155:31337", kind: { type: "rpc", method, params } });
const rows = (text: ApprovalText | undefined) => Object.fromEntries(text?.rows ?? []);

/** The fields of a signed EIP-1559 transaction (0x02 ‖ rlp([...])). */
function decodeSigned(raw: string) {
  const bytes = Uint8Array.from(raw.slice(4).match(/../g) ?? [], (h) => parseInt(h, 16));
  const f = RLP.decode(bytes) as Uint8Array[];
  const big = (b: Uint8Array) => (b.length ? BigInt("0x" + Buffer.from(b).toString("hex")) : 0n);
  return { chainId: big(f[0]), nonce: big(f[1]), maxPriorityFeePerGas: big(f[2]), maxFeePerGas: big(f[3]), gas: big(f[4]), to: "0x" + Buffer.from(f[5]).toString("hex"), value: big(f[6]), data: "0x" + Buffer.from(f[7]).toString("hex") };
}

describe("eth_sendTransaction: the request is parsed once, strictly, and the page shows the transaction signed", () => {
  it.each([
    ["an uppercase 0X prefix (BigInt reads it as 100 ETH; the old page showed 0 ETH)", "0X56BC75E2D63100000"],
    ["decimal with surrounding whitespace (1 ETH signed, 0 ETH shown before)", " 1000000000000000000\n"],
    ["a 0b binary literal", "0b1"],
    ["a 0o octal literal", "0o7"],
    ["plain decimal digits", "1000"],
    ["uppercase hex digits", "0xDE0B6B3A7640000"],
    ["a leading zero", "0x01"],
    ["no digits", "0x"],
    ["a JSON number", 1],
  ])("given value as %s, when the host posts it, then the frame refuses it (-32602) without asking or signing", async (_, value) => {
    const { ctx, login, sent, shown, approveAll } = await wallet();
    const outcome = await performRequest(ctx, login, evm("eth_sendTransaction", [{ from: login.eip155Address, to: RECEIVER, value }]), approveAll);
    expect(outcome).toMatchObject({ status: "error", code: -32602 });
    if (outcome.status === "error") expect(outcome.message).toMatch(/value/);
    expect(shown).toEqual([]);
    expect(sent).toEqual([]);
  });

  it.each([
    ["gas", "0x05208"],
    ["nonce", "0X3"],
    ["maxFeePerGas", " 0x1"],
    ["maxPriorityFeePerGas", "1"],
  ])("given a non-canonical %s (%j), then the frame refuses the request without asking", async (key, bad) => {
    const { ctx, login, sent, shown, approveAll } = await wallet();
    const outcome = await performRequest(ctx, login, evm("eth_sendTransaction", [{ from: login.eip155Address, to: RECEIVER, value: "0x0", [key]: bad }]), approveAll);
    expect(outcome).toMatchObject({ status: "error", code: -32602 });
    expect(shown).toEqual([]);
    expect(sent).toEqual([]);
  });

  it("given data: false beside an ERC-20 transfer in input (the old page said 'Data: None' and signed the transfer), then it is refused", async () => {
    const { ctx, login, sent, shown, approveAll } = await wallet();
    const outcome = await performRequest(ctx, login, evm("eth_sendTransaction", [{ from: login.eip155Address, to: USDC, value: "0x0", data: false, input: ERC20_TRANSFER }]), approveAll);
    expect(outcome).toMatchObject({ status: "error", code: -32602 });
    expect(shown).toEqual([]);
    expect(sent).toEqual([]);
  });

  it.each([
    ["data and input that differ", { data: "0x", input: ERC20_TRANSFER }],
    ["data: null", { data: null }],
    ["input: 7", { input: 7 }],
    ["odd-length data", { data: "0xabc" }],
    ["gasPrice (not an EIP-1559 field: it would be dropped)", { gasPrice: "0x1" }],
    ["an unknown field", { feeCurrency: "0x01" }],
    ["another chain's chainId", { chainId: "0x1" }],
    ["a legacy type", { type: "0x0" }],
    ["an access list (not signed)", { accessList: [{ address: USDC, storageKeys: [] }] }],
    ["to that is not an address", { to: "0x1234" }],
  ])("given %s, then the request is refused without asking", async (_, extra) => {
    const { ctx, login, sent, shown, approveAll } = await wallet();
    const outcome = await performRequest(ctx, login, evm("eth_sendTransaction", [{ from: login.eip155Address, to: USDC, value: "0x0", ...extra }]), approveAll);
    expect(outcome).toMatchObject({ status: "error", code: -32602 });
    expect(shown).toEqual([]);
    expect(sent).toEqual([]);
  });

  it("given a '0 ETH' send with the host's gas and fees (210 ETH of fees at most), when shown, then the page states gas limit, fees in gwei, the maximum fee and total in ETH, and the nonce; and they are the signed ones", async () => {
    const { ctx, login, sent, shown, approveAll } = await wallet();
    const request = evm("eth_sendTransaction", [{ from: login.eip155Address, to: RECEIVER, value: "0x0", gas: "0x1312d00", maxFeePerGas: "0x2540be400", maxPriorityFeePerGas: "0x2540be400", nonce: "0x7" }]);
    const outcome = await performRequest(ctx, login, request, approveAll);
    expect(outcome.status).toBe("ok");
    expect(shown[0]?.title).toBe("Send a transaction");
    expect(rows(shown[0])).toMatchObject({
      To: RECEIVER,
      Value: "0 ETH",
      Data: "None",
      Network: "eip155:31337",
      "Gas limit": "20000000",
      "Max fee per gas": "10 gwei",
      "Max priority fee per gas": "10 gwei",
      "Max network fee": "0.2 ETH",
      "Max total": "0.2 ETH",
      Nonce: "7",
    });
    const signed = decodeSigned(sent[0] ?? "");
    expect(signed).toMatchObject({ chainId: 31337n, nonce: 7n, gas: 20_000_000n, maxFeePerGas: 10n ** 10n, maxPriorityFeePerGas: 10n ** 10n, value: 0n, data: "0x" });
    expect(signed.to).toBe(RECEIVER.toLowerCase());
  });

  it("given a transfer with gas and fees left to the wallet, when shown, then the filled values (from the node) are shown and are exactly those signed", async () => {
    const { ctx, login, sent, shown, approveAll } = await wallet();
    const outcome = await performRequest(ctx, login, evm("eth_sendTransaction", [{ from: login.eip155Address, to: RECEIVER, value: "0x16345785d8a0001" }]), approveAll);
    expect(outcome.status).toBe("ok");
    // 2 × base fee (10 gwei) + priority (1 gwei) = 21 gwei; 21 000 gas.
    expect(rows(shown[0])).toMatchObject({ Value: "0.100000000000000001 ETH", "Gas limit": "21000", "Max fee per gas": "21 gwei", "Max priority fee per gas": "1 gwei", "Max network fee": "0.000441 ETH", "Max total": "0.100441000000000001 ETH", Nonce: "3" });
    expect(decodeSigned(sent[0] ?? "")).toMatchObject({ nonce: 3n, gas: 21_000n, maxFeePerGas: 21n * 10n ** 9n, maxPriorityFeePerGas: 10n ** 9n, value: 10n ** 17n + 1n });
  });

  it("given the session's own ERC-20 send ({ to: token, value: '0x0', data }), then the page shows the data, its length and selector, and signs that data", async () => {
    const { ctx, login, sent, shown, approveAll } = await wallet();
    const outcome = await performRequest(ctx, login, evm("eth_sendTransaction", [{ from: login.eip155Address, to: USDC, value: "0x0", data: ERC20_TRANSFER }]), approveAll);
    expect(outcome.status).toBe("ok");
    expect(rows(shown[0])).toMatchObject({ To: USDC, Value: "0 ETH", Data: ERC20_TRANSFER, "Data size": "68 bytes", "Function selector": "0xa9059cbb" });
    expect(decodeSigned(sent[0] ?? "").data).toBe(ERC20_TRANSFER);
  });

  it("given the same calldata in both data and input (as some libraries send), then it is accepted and signed once", async () => {
    const { ctx, login, sent, approveAll } = await wallet();
    const outcome = await performRequest(ctx, login, evm("eth_sendTransaction", [{ from: login.eip155Address, to: USDC, value: "0x0", data: ERC20_TRANSFER, input: ERC20_TRANSFER, type: "0x2", chainId: "0x7a69" }]), approveAll);
    expect(outcome.status).toBe("ok");
    expect(decodeSigned(sent[0] ?? "").data).toBe(ERC20_TRANSFER);
  });

  it("given a request for another account, then it is refused (4100) without asking", async () => {
    const { ctx, login, shown, approveAll } = await wallet();
    const outcome = await performRequest(ctx, login, evm("eth_sendTransaction", [{ from: RECEIVER, to: RECEIVER, value: "0x0" }]), approveAll);
    expect(outcome).toMatchObject({ status: "error", code: 4100 });
    expect(shown).toEqual([]);
  });
});

describe("eth_signTypedData_v4: the page shows the domain's contract and chain", () => {
  const typed = (domain: Record<string, unknown>, fields = [["name", "string"], ["version", "string"], ["chainId", "uint256"], ["verifyingContract", "address"]]) => ({
    types: { EIP712Domain: fields.map(([name, type]) => ({ name, type })), Permit: [{ name: "spender", type: "address" }, { name: "value", type: "uint256" }] },
    primaryType: "Permit",
    domain,
    message: { spender: RECEIVER, value: "1000" },
  });

  it("given a permit for a token on chain 1, when shown, then the page names the verifying contract and the chain id (and that it is not the current network)", async () => {
    const { ctx, login, shown, approveAll } = await wallet();
    const data = typed({ name: "USD Coin", version: "2", chainId: 1, verifyingContract: USDC.toLowerCase() });
    const outcome = await performRequest(ctx, login, evm("eth_signTypedData_v4", [login.eip155Address, JSON.stringify(data)]), approveAll);
    expect(outcome.status).toBe("ok");
    expect(rows(shown[0])).toMatchObject({ Type: "Permit", Domain: "USD Coin", Contract: USDC, "Chain ID": "1 (not this network, eip155:31337)" });
  });

  it("given a domain whose type leaves verifyingContract out, then the page says the signature names no contract (the object's field is not signed)", async () => {
    const { ctx, login, shown, approveAll } = await wallet();
    const data = typed({ name: "App", chainId: "0x7a69", verifyingContract: USDC }, [["name", "string"], ["chainId", "uint256"]]);
    await performRequest(ctx, login, evm("eth_signTypedData_v4", [login.eip155Address, data]), approveAll);
    expect(rows(shown[0])).toMatchObject({ Domain: "App", Contract: "None", "Chain ID": "31337" });
  });

  it("given typed data that cannot be hashed, then it is refused without asking", async () => {
    const { ctx, login, shown, approveAll } = await wallet();
    const outcome = await performRequest(ctx, login, evm("eth_signTypedData_v4", [login.eip155Address, { types: {}, primaryType: "X", domain: {}, message: {} }]), approveAll);
    expect(outcome).toMatchObject({ status: "error", code: -32602 });
    expect(shown).toEqual([]);
  });
});

describe("Solana transactions: the page shows the fee payer, the instructions and their programs", () => {
  const unknownProgram = randomKeypair().address;
  function wire(payer: string, receiver: string) {
    const message = compileMessage({
      payer,
      recentBlockhash: SYSTEM_PROGRAM,
      instructions: [
        instructions.transfer(payer, receiver, 1_500_000_001),
        { programId: unknownProgram, accounts: [{ address: receiver, signer: false, writable: true }], data: Uint8Array.of(1, 2, 3) },
      ],
    });
    return base64.encode(wireTransaction(message, [new Uint8Array(64)]));
  }

  it("given signTransaction of a SOL transfer and a call to an unknown program, when shown, then the page names the fee payer, counts the instructions, decodes the transfer and says the other is not decoded", async () => {
    const { ctx, login, shown, approveAll } = await wallet();
    const receiver = randomKeypair().address;
    const request: RpcRequest = { requestId: "r1", connectorId: "auth", namespace: "solana", chainId: "solana:devnet", kind: { type: "signTransaction", transaction: wire(login.solanaAddress, receiver), address: login.solanaAddress, network: "solana:devnet" } };
    const outcome = await performRequest(ctx, login, request, approveAll);
    expect(outcome.status).toBe("ok");
    const shownRows = rows(shown[0]);
    expect(shownRows["Fee payer"]).toBe(`${login.solanaAddress} (this wallet)`);
    expect(shownRows.Instructions).toBe("2");
    expect(shownRows["Instruction 1"]).toBe(`System Program (${SYSTEM_PROGRAM}): transfer 1.500000001 SOL from ${login.solanaAddress} to ${receiver}`);
    expect(shownRows["Instruction 2"]).toBe(`${unknownProgram}: not decoded (1 account, 3 bytes of data)`);
  });

  it("given signAndSendTransaction through rpc, then the same description is shown", async () => {
    const { ctx, login, shown, approveAll } = await wallet();
    const receiver = randomKeypair().address;
    const request: RpcRequest = { requestId: "r1", connectorId: "auth", namespace: "solana", chainId: "solana:devnet", kind: { type: "rpc", method: "solana:signAndSendTransaction", params: { transaction: wire(login.solanaAddress, receiver), address: login.solanaAddress } } };
    const outcome = await performRequest(ctx, login, request, approveAll);
    expect(outcome.status).toBe("ok");
    expect(rows(shown[0])).toMatchObject({ Method: "solana:signAndSendTransaction", Instructions: "2" });
    expect(rows(shown[0])["Instruction 1"]).toContain("transfer 1.500000001 SOL");
  });

  it("given a v0 transaction that loads accounts from a lookup table and sets a compute unit price, then the page decodes the price and says the looked-up accounts are not shown", async () => {
    const { ctx, login, shown, approveAll } = await wallet();
    const price = Uint8Array.of(3, 0x40, 0x42, 0x0f, 0, 0, 0, 0, 0); // 1 000 000 micro-lamports
    const legacy = compileMessage({ payer: login.solanaAddress, recentBlockhash: SYSTEM_PROGRAM, instructions: [{ programId: "ComputeBudget111111111111111111111111111111", accounts: [], data: price }] });
    const table = randomKeypair().publicKey;
    const v0 = Uint8Array.from([0x80, ...legacy, 1, ...table, 1, 0, 1, 1]);
    const request: RpcRequest = { requestId: "r1", connectorId: "auth", namespace: "solana", chainId: "solana:devnet", kind: { type: "signTransaction", transaction: base64.encode(wireTransaction(v0, [new Uint8Array(64)])), address: login.solanaAddress, network: "solana:devnet" } };
    expect((await performRequest(ctx, login, request, approveAll)).status).toBe("ok");
    expect(rows(shown[0])).toMatchObject({
      Instructions: "1",
      "Instruction 1": "Compute Budget Program (ComputeBudget111111111111111111111111111111): set the compute unit price to 1000000 micro-lamports",
      "Address lookup tables": "1, loading 2 accounts not shown here (they cannot be resolved without the chain)",
    });
  });

  it("given bytes that are not a transaction, then it is refused without asking", async () => {
    const { ctx, login, shown, approveAll } = await wallet();
    const request: RpcRequest = { requestId: "r1", connectorId: "auth", namespace: "solana", chainId: "solana:devnet", kind: { type: "signTransaction", transaction: base64.encode(Uint8Array.of(1, 2, 3)), address: login.solanaAddress, network: "solana:devnet" } };
    const outcome = await performRequest(ctx, login, request, approveAll);
    expect(outcome.status).toBe("error");
    expect(shown).toEqual([]);
  });
});

// Browser-side review (decision 1504): the typed data's page showed `JSON.stringify(message)` while
// eip712.ts hashed its own reading of the message, and the two disagreed; and text the host chose
// was drawn with its invisible characters, which reorder or hide what is around them.
describe("eth_signTypedData_v4: the page shows the message as it is signed", () => {
  // DAI's permit: `allowed: true` gives the spender an unlimited allowance.
  const DAI = "0x6B175474E89094C44Da98b954EedeAC495271d0F";
  const daiPermit = (message: Record<string, unknown>) => ({
    types: {
      EIP712Domain: [{ name: "name", type: "string" }, { name: "version", type: "string" }, { name: "chainId", type: "uint256" }, { name: "verifyingContract", type: "address" }],
      Permit: [{ name: "holder", type: "address" }, { name: "spender", type: "address" }, { name: "nonce", type: "uint256" }, { name: "expiry", type: "uint256" }, { name: "allowed", type: "bool" }],
    },
    primaryType: "Permit",
    domain: { name: "Dai Stablecoin", version: "1", chainId: 31337, verifyingContract: DAI },
    message,
  });
  const signTyped = async (data: unknown) => {
    const w = await wallet();
    const outcome = await performRequest(w.ctx, w.login, evm("eth_signTypedData_v4", [w.login.eip155Address, JSON.stringify(data)]), w.approveAll);
    return { ...w, outcome, page: rows(w.shown[0]) };
  };
  const holder = addressesOf(SEED).eip155Address;

  it("given a DAI permit whose allowed is the string \"false\" (hashed as true: an unlimited allowance, while the page read \"allowed\":\"false\"), then it is refused without asking", async () => {
    const asked = { holder, spender: RECEIVER, nonce: 0, expiry: 0, allowed: "false" };
    // Why: the encoder reads any non-empty string as true.
    expect(typedDataDigest(daiPermit(asked) as TypedData)).toEqual(typedDataDigest(daiPermit({ ...asked, allowed: true }) as TypedData));
    const { outcome, shown } = await signTyped(daiPermit(asked));
    expect(outcome).toMatchObject({ status: "error", code: -32602 });
    expect(shown).toEqual([]);
  });

  it("given a field of the type missing from the message (a string hashed as \"undefined\", shown nowhere), then it is refused without asking", async () => {
    const data = { ...daiPermit({}), types: { ...daiPermit({}).types, Mail: [{ name: "to", type: "address" }, { name: "note", type: "string" }] }, primaryType: "Mail", message: { to: RECEIVER } };
    const { outcome, shown } = await signTyped(data);
    expect(outcome).toMatchObject({ status: "error", code: -32602 });
    expect(shown).toEqual([]);
  });

  it("given a uint beyond 2^53 as a JSON number (shown 12345678901234567000, hashed 12345678901234567168), then it is refused without asking", async () => {
    const { outcome, shown } = await signTyped(JSON.parse(JSON.stringify(daiPermit({ holder, spender: RECEIVER, nonce: 0, expiry: 0, allowed: false })).replace('"expiry":0', '"expiry":12345678901234567000')));
    expect(outcome).toMatchObject({ status: "error", code: -32602 });
    expect(shown).toEqual([]);
  });

  it("given values of the wrong kind (a number for a string, an address that is not 20 bytes, bytes4 of 1 byte, a list for a uint), then each is refused without asking", async () => {
    const types = (field: string) => ({ ...daiPermit({}).types, M: [{ name: "v", type: field }] });
    for (const [field, v] of [["string", 5], ["address", "0x1234"], ["bytes4", "0x12"], ["uint256", [1]], ["uint8", 256], ["int8", -129], ["uint7", 1], ["bytes", "1234"]] as const) {
      const { outcome, shown } = await signTyped({ ...daiPermit({}), types: types(field), primaryType: "M", message: { v } });
      expect(outcome, `${field} ${JSON.stringify(v)}`).toMatchObject({ status: "error", code: -32602 });
      expect(shown).toEqual([]);
    }
  });

  it("given a message with a key its type does not name (not signed), then the page shows only the signed fields, their values as encoded", async () => {
    const { outcome, page } = await signTyped(daiPermit({ holder: holder.toLowerCase(), spender: RECEIVER.toLowerCase(), nonce: "0x0", expiry: "0x10", allowed: false, note: "this only lets them read your balance" }));
    expect(outcome.status).toBe("ok");
    expect(page.Data).toBe(JSON.stringify({ holder, spender: RECEIVER, nonce: "0", expiry: "16", allowed: false }));
  });

  it("given a field named __proto__ (signed like any other), then the page shows it", async () => {
    const data = JSON.parse('{"types":{"EIP712Domain":[{"name":"name","type":"string"}],"M":[{"name":"__proto__","type":"uint256"},{"name":"to","type":"address"}]},"primaryType":"M","domain":{"name":"App"},"message":{"__proto__":"1000","to":"' + RECEIVER + '"}}');
    const { outcome, page } = await signTyped(data);
    expect(outcome.status).toBe("ok");
    expect(page.Data).toBe('{"__proto__":"1000","to":"' + RECEIVER + '"}');
  });

  it("given a string holding a right-to-left override before the amount (the page then read 0000001 for 1000000), then the page shows the override as an escape and the digits in order", async () => {
    const data = {
      types: { EIP712Domain: [{ name: "name", type: "string" }], "Transfer\u202E": [{ name: "memo", type: "string" }, { name: "amount", type: "uint256" }] },
      primaryType: "Transfer\u202E",
      domain: { name: "Wallet\u2067 App\n" },
      message: { memo: "gift \u202E", amount: "1000000" },
    };
    const { outcome, shown, page } = await signTyped(data);
    expect(outcome.status).toBe("ok");
    for (const [, value] of shown[0]?.rows ?? []) expect(value).not.toMatch(/[\u202A-\u202E\u2066-\u2069\n]/);
    expect(page.Data).toBe('{"memo":"gift \\u202e","amount":"1000000"}');
    expect(page.Type).toBe("Transfer\\u202e");
    expect(page.Domain).toBe("Wallet\\u2067 App\\u000a");
  });
});

describe("text the host chose is shown as it reads", () => {
  it("given a personal_sign message with a line separator or a right-to-left mark (invisible in the page, in the signed bytes), then the page shows it as hex", async () => {
    const { ctx, login, shown, approveAll } = await wallet();
    for (const text of ["Sign in to good.example\u2028URI: https://good.example", "pay \u200F100"]) {
      await performRequest(ctx, login, evm("personal_sign", ["0x" + Buffer.from(text).toString("hex"), login.eip155Address]), approveAll);
    }
    expect(shown.map((s) => rows(s).Message)).toEqual(["0x" + Buffer.from("Sign in to good.example\u2028URI: https://good.example").toString("hex"), "0x" + Buffer.from("pay \u200F100").toString("hex")]);
  });

  it("given a network name with an override and a line break (the request's own words), then the page shows them as escapes", async () => {
    const { ctx, login, shown, approveAll } = await wallet();
    await performRequest(ctx, login, { ...evm("personal_sign", ["0x68", login.eip155Address]), chainId: "eip155:1\n\u202Etsetnet" }, approveAll);
    expect(rows(shown[0]).Network).toBe("eip155:1\\u000a\\u202etsetnet");
  });
});

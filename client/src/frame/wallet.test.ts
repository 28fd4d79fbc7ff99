// The frame's wallet against a fake frame API: a new user's wallet is created and bound, a known
// wallet is recovered on a new device from sealed server + recovery shares (same address), and
// signing requests are approved (signatures verify) or rejected (4001); a SIGN_OUT wins over a
// login whose verification is still in flight.

import { base64urlnopad } from "@scure/base";
import { describe, expect, it } from "vitest";
import { recoverPersonalSign } from "../wallet/devWallet";
import { frameKeyPair, openShare } from "./hpke";
import { addressesOf, bindingText, combineShares, splitSeed } from "./keys";
import { memoryDeviceStore } from "./deviceStore";
import { seal } from "./testSupport";
import { completeLogin, createLoginSlot, LOGIN_CANCELLED, performRequest, USER_REJECTED, type FrameContext, type FrameLogin, type RpcRequest } from "./wallet";

const FRAME = "frame-1";
const SEED = Uint8Array.from({ length: 32 }, (_, i) => 255 - i);

async function context(routes: Record<string, (body: Record<string, unknown>) => unknown>) {
  const keyPair = await frameKeyPair();
  const store = memoryDeviceStore();
  const calls: Array<[string, Record<string, unknown>]> = [];
  const ctx: FrameContext = {
    frameId: FRAME,
    frameToken: "token",
    keyPair,
    store,
    post: async (path, body) => {
      calls.push([path, body]);
      const route = routes[path];
      if (!route) throw new Error(`no route ${path}`);
      return route(body);
    },
  };
  return { ctx, store, calls, keyPair };
}

const rpc = (kind: RpcRequest["kind"], namespace: RpcRequest["namespace"] = "eip155"): RpcRequest => ({ requestId: "r1", connectorId: "auth", namespace, chainId: "eip155:31337", kind });

describe("HPKE", () => {
  it("opens a share sealed to the frame's public key with aad = frame id, and refuses another frame id", async () => {
    const pair = await frameKeyPair();
    expect(pair.privateKey.extractable).toBe(false);
    const sealed = await seal(pair.publicKey, Uint8Array.of(1, 2, 3), FRAME);
    expect(await openShare(pair, sealed, FRAME)).toEqual(Uint8Array.of(1, 2, 3));
    await expect(openShare(pair, sealed, "frame-2")).rejects.toThrow();
  });
});

describe("login", () => {
  it("a user without a wallet: creates it, binds it with both signatures, keeps the device share", async () => {
    let bound: Record<string, unknown> = {};
    const { ctx, store } = await context({ "/api/wallet": (body) => ((bound = body), { walletId: "w1" }) });
    const login = await completeLogin(ctx, { userId: "u1", email: "a@b.c", wallet: null });
    expect(login.walletId).toBe("w1");
    expect(bound.eip155Address).toBe(login.eip155Address);
    expect(recoverPersonalSign(new TextEncoder().encode(bindingText(FRAME, "u1")), String(bound.eip155Signature))).toBe(login.eip155Address);
    // The device share and the server's two shares rebuild the same wallet.
    const device = store.shares.get("w1");
    expect(device?.length).toBe(33);
    const seed = await combineShares(device ?? new Uint8Array(), base64urlnopad.decode(String(bound.serverShare)));
    expect(addressesOf(seed).eip155Address).toBe(login.eip155Address);
    const fromRecovery = await combineShares(base64urlnopad.decode(String(bound.recoveryShare)), base64urlnopad.decode(String(bound.serverShare)));
    expect(addressesOf(fromRecovery).eip155Address).toBe(login.eip155Address);
  });

  it("a new device: recovers the same address from server + recovery shares and keeps the recovery share", async () => {
    const { server, recovery } = await splitSeed(SEED);
    const { ctx, store, keyPair } = await context({});
    const addresses = addressesOf(SEED);
    const result = {
      userId: "u1",
      wallet: { walletId: "w1", ...addresses, serverShare: await seal(keyPair.publicKey, server, FRAME), recoveryShare: await seal(keyPair.publicKey, recovery, FRAME) },
    };
    const login = await completeLogin(ctx, result);
    expect(login.eip155Address).toBe(addresses.eip155Address);
    expect(store.shares.get("w1")).toEqual(recovery);
  });

  it("refuses a wallet whose shares do not rebuild its address", async () => {
    const { server, recovery } = await splitSeed(SEED);
    const { ctx, keyPair } = await context({});
    const result = {
      userId: "u1",
      wallet: { walletId: "w1", eip155Address: "0x0000000000000000000000000000000000000001", solanaAddress: "x", serverShare: await seal(keyPair.publicKey, server, FRAME), recoveryShare: await seal(keyPair.publicKey, recovery, FRAME) },
    };
    await expect(completeLogin(ctx, result)).rejects.toThrow("does not match");
  });
});

describe("a SIGN_OUT during a login's verification", () => {
  /** A verification the test answers when it wants (the frame API's answer to the code). */
  function inFlight() {
    let answer: (value: unknown) => void = () => undefined;
    const pending = new Promise<unknown>((resolve) => (answer = resolve));
    return { verify: () => pending, answer };
  }

  it("wins: a user without a wallet verified after it gets none created and no login; a later login works", async () => {
    // Given a login whose code the frame API is still checking
    const { ctx, store, calls } = await context({ "/api/wallet": () => ({ walletId: "w1" }) });
    const slot = createLoginSlot(ctx);
    const check = inFlight();
    const login = slot.verify(check.verify);
    // When the host signs the frame out, then the code verifies (a user without a wallet)
    slot.signOut();
    check.answer({ userId: "u1", wallet: null });
    // Then the login fails "Login cancelled": no login, no wallet created, no share stored
    await expect(login).rejects.toThrow(LOGIN_CANCELLED);
    expect(slot.current()).toBeNull();
    expect(calls).toEqual([]);
    expect(store.shares.size).toBe(0);
    // The probe: a later login with the same answer creates the wallet and is the frame's login.
    const later = await slot.verify(async () => ({ userId: "u1", wallet: null }));
    expect(later.walletId).toBe("w1");
    expect(slot.current()).toEqual(later);
    expect(calls.map(([path]) => path)).toEqual(["/api/wallet"]);
    expect(store.shares.has("w1")).toBe(true);
  });

  it("wins on a new device too: the recovery share verified after it is not stored", async () => {
    // Given a known wallet's login on a new device, its code still being checked
    const { server, recovery } = await splitSeed(SEED);
    const { ctx, store, keyPair } = await context({});
    const result = {
      userId: "u1",
      wallet: { walletId: "w1", ...addressesOf(SEED), serverShare: await seal(keyPair.publicKey, server, FRAME), recoveryShare: await seal(keyPair.publicKey, recovery, FRAME) },
    };
    const slot = createLoginSlot(ctx);
    const check = inFlight();
    const login = slot.verify(check.verify);
    // When the host signs the frame out, then the code verifies
    slot.signOut();
    check.answer(result);
    // Then nothing is kept
    await expect(login).rejects.toThrow(LOGIN_CANCELLED);
    expect(slot.current()).toBeNull();
    expect(store.shares.size).toBe(0);
    // The probe: the same answer to a later login recovers the wallet and keeps the recovery share.
    const later = await slot.verify(async () => result);
    expect(later.eip155Address).toBe(addressesOf(SEED).eip155Address);
    expect(slot.current()).toEqual(later);
    expect(store.shares.get("w1")).toEqual(recovery);
  });

  it("wins while the login completes: the recovery share is not stored, the login not kept", async () => {
    // Given a new device's login whose code verified, the frame looking its store over
    const { server, recovery } = await splitSeed(SEED);
    const { ctx, store, keyPair } = await context({});
    const result = {
      userId: "u1",
      wallet: { walletId: "w1", ...addressesOf(SEED), serverShare: await seal(keyPair.publicKey, server, FRAME), recoveryShare: await seal(keyPair.publicKey, recovery, FRAME) },
    };
    let looked: () => void = () => undefined;
    const looking = new Promise<void>((resolve) => (looked = resolve));
    const lookup = inFlight();
    ctx.store = { ...store, get: async (id) => (looked(), await lookup.verify(), store.get(id)) };
    const slot = createLoginSlot(ctx);
    const login = slot.verify(async () => result);
    await looking;
    // When the host signs the frame out, then the lookup answers (no share here)
    slot.signOut();
    lookup.answer(undefined);
    // Then nothing is kept
    await expect(login).rejects.toThrow(LOGIN_CANCELLED);
    expect(slot.current()).toBeNull();
    expect(store.shares.size).toBe(0);
    // The probe: a later login keeps the recovery share and the login.
    const later = await slot.verify(async () => result);
    expect(slot.current()).toEqual(later);
    expect(store.shares.get("w1")).toEqual(recovery);
  });

  it("a wallet already bound when the SIGN_OUT comes keeps its device share (the service counts it here), not the login", async () => {
    // Given a new user's wallet being bound by the frame API
    const binding = inFlight();
    let asked: () => void = () => undefined;
    const binds = new Promise<void>((resolve) => (asked = resolve));
    const { ctx, store } = await context({ "/api/wallet": () => (asked(), binding.verify()) });
    const slot = createLoginSlot(ctx);
    const login = slot.verify(async () => ({ userId: "u1", wallet: null }));
    await binds;
    // When the host signs the frame out, then the wallet is bound
    slot.signOut();
    binding.answer({ walletId: "w1" });
    // Then the login is cancelled, the device share kept
    await expect(login).rejects.toThrow(LOGIN_CANCELLED);
    expect(slot.current()).toBeNull();
    expect(store.shares.has("w1")).toBe(true);
  });
});

describe("requests", () => {
  async function loggedIn(extra: Record<string, (body: Record<string, unknown>) => unknown> = {}) {
    const { device, server } = await splitSeed(SEED);
    const t = await context({ "/api/wallet/share": async () => ({ serverShare: await seal(t.keyPair.publicKey, server, FRAME) }), ...extra });
    await t.store.put("w1", device);
    const login: FrameLogin = { userId: "u1", walletId: "w1", ...addressesOf(SEED) };
    return { ...t, login };
  }

  it("connect answers the logged-in account as an external wallet's connect does; without a login, 4100", async () => {
    const { ctx, login } = await loggedIn();
    const never = async () => false;
    expect(await performRequest(ctx, login, rpc({ type: "connect" }), never)).toEqual({ status: "ok", result: { accounts: [login.eip155Address], chainId: "0x7a69" } });
    expect(await performRequest(ctx, login, { ...rpc({ type: "sync" }, "solana"), chainId: "solana:devnet" }, never)).toEqual({ status: "ok", result: { accounts: [login.solanaAddress], chains: ["solana:devnet"] } });
    expect(await performRequest(ctx, null, rpc({ type: "connect" }), never)).toMatchObject({ status: "error", code: 4100 });
  });

  it("personal_sign: shows the message, signs on Approve with a freshly released server share; Reject answers 4001", async () => {
    const { ctx, login, calls } = await loggedIn();
    const asked: string[] = [];
    const request = rpc({ type: "rpc", method: "personal_sign", params: ["0x68656c6c6f", login.eip155Address] });
    const approved = await performRequest(ctx, login, request, async (text) => (asked.push(`${text.title}: ${text.rows[0]?.[1]}`), true));
    expect(asked).toEqual(["Sign a message: hello"]);
    expect(approved.status).toBe("ok");
    if (approved.status === "ok") expect(recoverPersonalSign(new TextEncoder().encode("hello"), String(approved.result))).toBe(login.eip155Address);
    expect(calls.filter(([p]) => p === "/api/wallet/share")).toHaveLength(1);
    expect(await performRequest(ctx, login, request, async () => false)).toEqual(USER_REJECTED);
    expect(calls.filter(([p]) => p === "/api/wallet/share")).toHaveLength(1);
  });

  it("eth_sendTransaction: fills nonce, gas and fees through /api/rpc, sends the signed raw transaction, answers its hash", async () => {
    const sent: unknown[] = [];
    const answers: Record<string, unknown> = {
      eth_getTransactionCount: "0x3",
      eth_estimateGas: "0x5208",
      eth_maxPriorityFeePerGas: "0x1",
      eth_getBlockByNumber: { baseFeePerGas: "0x10" },
    };
    const { ctx, login } = await loggedIn({
      "/api/rpc": (body) => {
        if (body.method === "eth_sendRawTransaction") return (sent.push(body.params), { result: "0xhash" });
        return { result: answers[String(body.method)] };
      },
    });
    const asked: Array<[string, string]> = [];
    const request = rpc({ type: "rpc", method: "eth_sendTransaction", params: [{ from: login.eip155Address, to: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", value: "0xde0b6b3a7640000" }] });
    const outcome = await performRequest(ctx, login, request, async (text) => (asked.push(...text.rows), true));
    expect(asked).toContainEqual(["Value", "1 ETH"]);
    expect(outcome).toEqual({ status: "ok", result: "0xhash" });
    expect(String((sent[0] as string[])[0])).toMatch(/^0x02/);
  });

  it("a failure that is not a refusal answers -32603 with its words: a plain object's message, else The embedded wallet failed", async () => {
    const failing = (thrown: unknown) =>
      loggedIn({
        "/api/wallet/share": () => {
          throw thrown;
        },
      });
    const sign = async (thrown: unknown) => {
      const { ctx, login } = await failing(thrown);
      return performRequest(ctx, login, rpc({ type: "rpc", method: "personal_sign", params: ["0x68", login.eip155Address] }), async () => true);
    };
    expect(await sign({ code: "busy", message: "The share is not released now" })).toEqual({ status: "error", code: -32603, message: "The share is not released now" });
    for (const thrown of [new Error(""), undefined, { code: "busy" }]) expect(await sign(thrown)).toEqual({ status: "error", code: -32603, message: "The embedded wallet failed" });
  });

  it("a request for another account is refused (4100); an unsupported method is 4200 without asking", async () => {
    const { ctx, login } = await loggedIn();
    const other = await performRequest(ctx, login, rpc({ type: "rpc", method: "personal_sign", params: ["0x68", "0x0000000000000000000000000000000000000001"] }), async () => true);
    expect(other).toMatchObject({ status: "error", code: 4100 });
    let asked = false;
    expect(await performRequest(ctx, login, rpc({ type: "rpc", method: "eth_sign", params: [] }), async () => (asked = true))).toMatchObject({ status: "error", code: 4200 });
    expect(asked).toBe(false);
  });
});

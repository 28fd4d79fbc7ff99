// Solana wire formats for the local peer and the tests, written from the documented layouts (no
// Solana SDK): base58, compact-u16 lengths, legacy messages and transactions, the System, SPL Token
// and Associated Token Account instructions the peer and the tests need, and program-derived
// addresses. Keys are ed25519 (@noble/curves): a keypair is { seed, publicKey } (32 bytes each).

import { ed25519 } from "@noble/curves/ed25519";
import { sha256 } from "@noble/hashes/sha2";
import { base58 } from "@scure/base";

export { base58, ed25519 };

export const SYSTEM_PROGRAM = "11111111111111111111111111111111";
export const TOKEN_PROGRAM = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
export const TOKEN_2022_PROGRAM = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";
export const ASSOCIATED_TOKEN_PROGRAM = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";

export const toBytes = (address) => (typeof address === "string" ? base58.decode(address) : address);
export const toAddress = (bytes) => (typeof bytes === "string" ? bytes : base58.encode(bytes));

export function keypairFromSeed(seed) {
  return { seed, publicKey: ed25519.getPublicKey(seed), address: base58.encode(ed25519.getPublicKey(seed)) };
}

export function randomKeypair() {
  return keypairFromSeed(ed25519.utils.randomPrivateKey());
}

/** Solana's compact-u16 ("shortvec") length prefix. */
export function encodeLength(n) {
  const out = [];
  let rest = n;
  for (;;) {
    const byte = rest & 0x7f;
    rest >>= 7;
    if (rest === 0) {
      out.push(byte);
      return out;
    }
    out.push(byte | 0x80);
  }
}

/** Reads a compact-u16 at `offset`: [value, bytes read]. */
export function decodeLength(bytes, offset) {
  let value = 0;
  for (let i = 0; i < 3; i++) {
    const byte = bytes[offset + i];
    if (byte === undefined) throw new Error("truncated length");
    value |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) === 0) return [value, i + 1];
  }
  throw new Error("length longer than 3 bytes");
}

const u32 = (n) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, true);
  return b;
};
const u64 = (n) => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(n), true);
  return b;
};
const concat = (...parts) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

/** A legacy message: the fee payer first, then signers (writable first), then the rest. */
export function compileMessage({ payer, instructions, recentBlockhash }) {
  const metas = new Map();
  const add = (address, signer, writable) => {
    const key = toAddress(address);
    const m = metas.get(key) ?? { signer: false, writable: false };
    metas.set(key, { signer: m.signer || signer, writable: m.writable || writable });
  };
  add(payer, true, true);
  for (const ix of instructions) {
    for (const a of ix.accounts) add(a.address, a.signer, a.writable);
    add(ix.programId, false, false);
  }
  const entries = [...metas.entries()];
  const rank = ([key, m]) => (key === toAddress(payer) ? -1 : m.signer ? (m.writable ? 0 : 1) : m.writable ? 2 : 3);
  entries.sort((a, b) => rank(a) - rank(b));
  const keys = entries.map(([k]) => k);
  const header = [
    entries.filter(([, m]) => m.signer).length,
    entries.filter(([, m]) => m.signer && !m.writable).length,
    entries.filter(([, m]) => !m.signer && !m.writable).length,
  ];
  const compiled = instructions.map((ix) => {
    const accounts = ix.accounts.map((a) => keys.indexOf(toAddress(a.address)));
    return concat([keys.indexOf(toAddress(ix.programId))], encodeLength(accounts.length), accounts, encodeLength(ix.data.length), ix.data);
  });
  return concat(
    header,
    encodeLength(keys.length),
    ...keys.map((k) => base58.decode(k)),
    base58.decode(recentBlockhash),
    encodeLength(compiled.length),
    ...compiled,
  );
}

/** The account keys a message (legacy or v0) names, and how many must sign. */
export function messageSigners(message) {
  let at = message[0] & 0x80 ? 1 : 0;
  const required = message[at];
  at += 3;
  const [count, read] = decodeLength(message, at);
  at += read;
  const keys = [];
  for (let i = 0; i < count; i++) keys.push(base58.encode(message.slice(at + 32 * i, at + 32 * (i + 1))));
  return { required, keys };
}

/** A wire transaction: the signatures (empty ones zero) and the message. */
export function transaction(message, signatures) {
  return concat(encodeLength(signatures.length), ...signatures, message);
}

/** Signs `message` with `keypairs` (each in its signer slot) into a wire transaction. */
export function signMessageInto(message, keypairs) {
  const { required, keys } = messageSigners(message);
  const signatures = keys.slice(0, required).map((key) => {
    const kp = keypairs.find((k) => k.address === key);
    return kp ? ed25519.sign(message, kp.seed) : new Uint8Array(64);
  });
  return transaction(message, signatures);
}

/** Splits a wire transaction: [signatures, message]. */
export function parseTransaction(wire) {
  const [count, read] = decodeLength(wire, 0);
  const signatures = [];
  for (let i = 0; i < count; i++) signatures.push(wire.slice(read + 64 * i, read + 64 * (i + 1)));
  return { signatures, message: wire.slice(read + 64 * count) };
}

const meta = (address, signer, writable) => ({ address, signer, writable });

export const instructions = {
  transfer: (from, to, lamports) => ({
    programId: SYSTEM_PROGRAM,
    accounts: [meta(from, true, true), meta(to, false, true)],
    data: concat(u32(2), u64(lamports)),
  }),
  createAccount: (from, account, lamports, space, owner) => ({
    programId: SYSTEM_PROGRAM,
    accounts: [meta(from, true, true), meta(account, true, true)],
    data: concat(u32(0), u64(lamports), u64(space), toBytes(owner)),
  }),
  /** SPL Token InitializeMint2 (20): decimals, mint authority, no freeze authority. */
  initializeMint2: (mint, decimals, authority, program = TOKEN_PROGRAM) => ({
    programId: program,
    accounts: [meta(mint, false, true)],
    data: concat([20, decimals], toBytes(authority), [0]),
  }),
  /** SPL Token MintTo (7). */
  mintTo: (mint, account, authority, amount, program = TOKEN_PROGRAM) => ({
    programId: program,
    accounts: [meta(mint, false, true), meta(account, false, true), meta(authority, true, false)],
    data: concat([7], u64(amount)),
  }),
  /** SPL Token TransferChecked (12). */
  transferChecked: (source, mint, destination, owner, amount, decimals, program = TOKEN_PROGRAM) => ({
    programId: program,
    accounts: [meta(source, false, true), meta(mint, false, false), meta(destination, false, true), meta(owner, true, false)],
    data: concat([12], u64(amount), [decimals]),
  }),
  /** Associated Token Account CreateIdempotent (1). */
  createAssociatedTokenAccountIdempotent: (payer, owner, mint, program = TOKEN_PROGRAM) => ({
    programId: ASSOCIATED_TOKEN_PROGRAM,
    accounts: [
      meta(payer, true, true),
      meta(associatedTokenAddress(owner, mint, program), false, true),
      meta(owner, false, false),
      meta(mint, false, false),
      meta(SYSTEM_PROGRAM, false, false),
      meta(program, false, false),
    ],
    data: Uint8Array.of(1),
  }),
};

function onCurve(bytes) {
  try {
    ed25519.ExtendedPoint.fromHex(bytes);
    return true;
  } catch {
    return false;
  }
}

/** `find_program_address`: the first bump from 255 down whose hash is off the curve. */
export function findProgramAddress(seeds, programId) {
  const marker = new TextEncoder().encode("ProgramDerivedAddress");
  for (let bump = 255; bump >= 0; bump--) {
    const hash = sha256(concat(...seeds.map(toBytes), [bump], toBytes(programId), marker));
    if (!onCurve(hash)) return [base58.encode(hash), bump];
  }
  throw new Error("no viable bump");
}

/** The associated token account of `owner` for `mint`. */
export function associatedTokenAddress(owner, mint, program = TOKEN_PROGRAM) {
  return findProgramAddress([owner, program, mint], ASSOCIATED_TOKEN_PROGRAM)[0];
}

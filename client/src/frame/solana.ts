// What a Solana transaction asks, for the approval page: its fee payer, its other signers, and each
// instruction with the program it invokes. System Program transfers and Compute Budget settings are
// decoded; any other instruction is shown as "not decoded" with its program id (never left out), and
// accounts a v0 message loads from address lookup tables are said to be unresolved. The message is
// read from the documented layout (legacy and v0); one that does not read exactly is refused.

import { base58 } from "@scure/base";
import { readLength, type ParsedTransaction } from "../wallet/solana/transaction";
import type { Rows } from "./evm";
import { formatUnits } from "./evm";
import { invalid } from "./refusal";

const SYSTEM_PROGRAM = "11111111111111111111111111111111";
const COMPUTE_BUDGET = "ComputeBudget111111111111111111111111111111";
const PROGRAMS: Record<string, string> = {
  [SYSTEM_PROGRAM]: "System Program",
  [COMPUTE_BUDGET]: "Compute Budget Program",
  TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA: "Token Program",
  TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb: "Token-2022 Program",
  ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL: "Associated Token Account Program",
  MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr: "Memo Program",
};

interface Instruction {
  program: number;
  accounts: number[];
  data: Uint8Array;
}

interface Message {
  keys: string[];
  instructions: Instruction[];
  /** Accounts loaded from address lookup tables (v0), and the number of tables. */
  lookedUp: number;
  tables: number;
}

function readMessage(message: Uint8Array, versioned: boolean): Message {
  let at = versioned ? 1 : 0;
  const byte = () => {
    const b = message[at];
    if (b === undefined) throw new Error("truncated");
    at += 1;
    return b;
  };
  const length = () => {
    const [n, read] = readLength(message, at);
    at += read;
    return n;
  };
  const take = (n: number) => {
    if (at + n > message.length) throw new Error("truncated");
    const out = message.slice(at, at + n);
    at += n;
    return out;
  };
  at += 3; // header: required signatures, read-only signed, read-only unsigned
  const keys = Array.from({ length: length() }, () => base58.encode(take(32)));
  take(32); // recent blockhash
  const instructions = Array.from({ length: length() }, () => {
    const program = byte();
    const accounts = Array.from({ length: length() }, byte);
    return { program, accounts, data: take(length()) };
  });
  let lookedUp = 0;
  let tables = 0;
  if (versioned) {
    tables = length();
    for (let i = 0; i < tables; i++) {
      take(32);
      const writable = length();
      take(writable);
      const readonly = length();
      take(readonly);
      lookedUp += writable + readonly;
    }
  }
  if (at !== message.length) throw new Error("bytes after the message");
  return { keys, instructions, lookedUp, tables };
}

const u64 = (data: Uint8Array, at: number) => new DataView(data.buffer, data.byteOffset).getBigUint64(at, true);
const u32 = (data: Uint8Array, at: number) => new DataView(data.buffer, data.byteOffset).getUint32(at, true);

function describe(ix: Instruction, keys: string[]): string {
  const account = (i: number | undefined) => (i === undefined ? "(missing account)" : (keys[i] ?? "an account from an address lookup table (not resolved here)"));
  const program = keys[ix.program];
  if (program === undefined) return `a program from an address lookup table (not resolved here): not decoded`;
  const name = PROGRAMS[program];
  const head = name ? `${name} (${program})` : program;
  const { data } = ix;
  if (program === SYSTEM_PROGRAM && data.length === 12 && u32(data, 0) === 2 && ix.accounts.length >= 2) {
    return `${head}: transfer ${formatUnits(u64(data, 4), 9)} SOL from ${account(ix.accounts[0])} to ${account(ix.accounts[1])}`;
  }
  if (program === COMPUTE_BUDGET && data.length === 5 && data[0] === 2) return `${head}: set the compute unit limit to ${u32(data, 1)}`;
  if (program === COMPUTE_BUDGET && data.length === 9 && data[0] === 3) return `${head}: set the compute unit price to ${u64(data, 1)} micro-lamports`;
  const n = ix.accounts.length;
  return `${head}: not decoded (${n} account${n === 1 ? "" : "s"}, ${data.length} byte${data.length === 1 ? "" : "s"} of data)`;
}

/** The approval page's rows for a Solana transaction signed by `ours`. */
export function solanaTransactionRows(parsed: ParsedTransaction, ours: string): Rows {
  let message: Message;
  try {
    message = readMessage(parsed.message, parsed.version === 0);
  } catch (e) {
    throw invalid(`The transaction could not be read${e instanceof Error ? `: ${e.message}` : ""}`);
  }
  const { keys, instructions } = message;
  const payer = keys[0] ?? "";
  const rows: Rows = [["Fee payer", payer === ours ? `${payer} (this wallet)` : payer]];
  const others = parsed.signers.filter((s) => s !== ours);
  if (others.length) rows.push(["Other signers", others.join(", ")]);
  rows.push(["Instructions", String(instructions.length)]);
  instructions.forEach((ix, i) => rows.push([`Instruction ${i + 1}`, describe(ix, keys)]));
  if (message.tables) rows.push(["Address lookup tables", `${message.tables}, loading ${message.lookedUp} account${message.lookedUp === 1 ? "" : "s"} not shown here (they cannot be resolved without the chain)`]);
  return rows;
}

// Wallet answers as plain JSON, before they become a `ResolveWalletRequest`: a wallet (any page
// script can be one) may answer with what JSON.stringify throws on (a bigint, a cycle, a throwing
// getter), and the command carrying it could never be sent. So a result is copied into plain JSON
// here, or the request fails with a message that says why; nothing here throws. (What serde_json
// refuses although JSON.stringify writes it, a lone surrogate or nesting deeper than 128 levels, is
// not checked: the server would refuse that one command, which only holds up the wallet's own
// request.)
//
// A bigint is written as an EIP-1474 QUANTITY (`0x` and hex digits, no leading zeros): what a wallet
// means by one (a chain id, a balance), and what the server reads as an EVM chain id (`0x…` or
// decimal, actors/src/model/caip.rs `parse_evm_chain_id`). A negative bigint has no QUANTITY form and
// is written in decimal.

//
// The command must also fit the gateway's frame: over it, the socket is closed (1009) and the command
// dropped, and the Connecting view waits for ever. So an answer whose JSON is over
// WALLET_ANSWER_MAX_BYTES (5,000 accounts) fails the request instead, and an error's message is cut
// to what the session keeps of it (WALLET_ERROR_MAX_CHARS characters: a 70 kB one), both generated
// from actors/src/model/connector.rs.

import { WALLET_ANSWER_MAX_BYTES, WALLET_ERROR_MAX_CHARS } from "../../generated/constants";
import type { WalletOutcome } from "../../generated/WalletOutcome";

/** JSON-RPC's internal error: the code of a wallet failure that carries none. */
export const INTERNAL_ERROR = -32603;

/** The outcome as the session can read it: an answer as plain JSON, written as JSON.stringify would
 * (toJSON; undefined left out of objects, null in arrays and at the top; a number that is not
 * finite null) but for bigints (QUANTITY); or, when it cannot be (a function, a symbol, a cycle, a
 * getter that throws, over WALLET_ANSWER_MAX_BYTES), a failure that says why; an error with its
 * message cut to WALLET_ERROR_MAX_CHARS. Never throws. */
export function plainOutcome(outcome: WalletOutcome): WalletOutcome {
  // Cut between code points: half a surrogate pair would make the frame unreadable to serde_json.
  if (outcome.status !== "ok") return { ...outcome, message: [...outcome.message].slice(0, WALLET_ERROR_MAX_CHARS).join("") };
  try {
    const text = JSON.stringify(outcome.result ?? null, (_key, v: unknown) => {
      if (typeof v === "function" || typeof v === "symbol") throw new TypeError(`it holds a ${typeof v}`);
      return typeof v === "bigint" ? (v < 0n ? `${v}` : `0x${v.toString(16)}`) : v;
    });
    // The frame's limit counts UTF-8 bytes (a Blob's size), not UTF-16 units.
    if (new Blob([text]).size > WALLET_ANSWER_MAX_BYTES) throw new TypeError("it is too large");
    return { status: "ok", result: JSON.parse(text) };
  } catch (e) {
    return { status: "error", code: INTERNAL_ERROR, message: `The wallet's answer cannot be sent: ${e instanceof Error ? e.message : "it cannot be read"}` };
  }
}

// The words a thrown value gives the visitor: EIP-1193 wallets reject with plain `{ code, message }`
// objects, and anything may be thrown; what cannot be read is the caller's fallback ("Unknown
// error" for a wallet's, spec §8), never "[object Object]" or "undefined".

import { expect, it } from "vitest";
import { errorMessage } from "./errorMessage";

const UNKNOWN = "Unknown error";

it("reads the message of an Error or of a plain { code, message } object, trimmed", () => {
  expect(errorMessage(new Error("boom"), UNKNOWN)).toBe("boom");
  expect(errorMessage({ code: 4001, message: "User rejected the request." }, UNKNOWN)).toBe("User rejected the request.");
  expect(errorMessage({ code: 4001, message: "  Rejected \n" }, UNKNOWN)).toBe("Rejected");
  expect(errorMessage("  plain words ", UNKNOWN)).toBe("plain words");
});

it("answers the caller's fallback for what has no words", () => {
  for (const e of [undefined, null, {}, { code: 4001 }, { message: "" }, { message: "   " }, { message: 42 }, { message: null }, new Error(""), "", "  ", 7, Symbol("s"), Object.create(null)])
    expect(errorMessage(e, UNKNOWN)).toBe(UNKNOWN);
  expect(errorMessage({ code: -32603 }, "The embedded wallet failed")).toBe("The embedded wallet failed");
  expect(errorMessage({ message: "kept" }, "The embedded wallet failed")).toBe("kept");
});

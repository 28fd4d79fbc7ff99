import { describe, expect, it } from "vitest";
import { PROTOCOL_ERROR_CODES } from "../generated/constants";
import { protocolErrorCode } from "./refusal";

describe("protocolErrorCode", () => {
  it("given a code the server sends, when read from the network, then it is that code", () => {
    for (const code of PROTOCOL_ERROR_CODES) expect(protocolErrorCode(code)).toBe(code);
  });

  it("given anything else, when read from the network, then it is not a code", () => {
    for (const other of ["", "Invalid_App_Configuration", "not_a_code", 4001, null, undefined, {}]) expect(protocolErrorCode(other)).toBeUndefined();
  });
});

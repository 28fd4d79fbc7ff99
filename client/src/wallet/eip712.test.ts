import { describe, expect, it } from "vitest";
import { encodeType, hashStruct, hex, typedDataDigest, type TypedData } from "./eip712";

// The example of EIP-712 itself ("Mail"), with the hashes the EIP's reference implementation prints.
const mail: TypedData = {
  types: {
    EIP712Domain: [
      { name: "name", type: "string" },
      { name: "version", type: "string" },
      { name: "chainId", type: "uint256" },
      { name: "verifyingContract", type: "address" },
    ],
    Person: [
      { name: "name", type: "string" },
      { name: "wallet", type: "address" },
    ],
    Mail: [
      { name: "from", type: "Person" },
      { name: "to", type: "Person" },
      { name: "contents", type: "string" },
    ],
  },
  primaryType: "Mail",
  domain: { name: "Ether Mail", version: "1", chainId: 1, verifyingContract: "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC" },
  message: {
    from: { name: "Cow", wallet: "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826" },
    to: { name: "Bob", wallet: "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB" },
    contents: "Hello, Bob!",
  },
};

describe("EIP-712", () => {
  it("encodes types with their dependencies", () => {
    expect(encodeType(mail.types, "Mail")).toBe("Mail(Person from,Person to,string contents)Person(string name,address wallet)");
  });

  it("hashes the EIP's example to its published values", () => {
    expect(hex(hashStruct(mail.types, "EIP712Domain", mail.domain))).toBe("0xf2cee375fa42b42143804025fc449deafd50cc031ca257e0b194a650a912090f");
    expect(hex(hashStruct(mail.types, "Mail", mail.message))).toBe("0xc52c0ee5d84264471806290a3f2c4cecfc5490626bf912d01f240d7a274b371e");
    expect(hex(typedDataDigest(mail))).toBe("0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2");
  });
});

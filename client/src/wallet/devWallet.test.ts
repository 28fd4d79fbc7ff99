import { describe, expect, it } from "vitest";
import { utf8ToBytes } from "@noble/hashes/utils";
import { addressOf, DevWallet, recoverDigest, recoverPersonalSign } from "./devWallet";
import { typedDataDigest } from "./eip712";

const key = (n: number) => {
  const k = new Uint8Array(32);
  k[31] = n;
  return k;
};

describe("DevWallet", () => {
  it("derives the well-known address of private key 1 (EIP-55 checksummed)", () => {
    expect(addressOf(key(1))).toBe("0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf");
  });

  it("really signs: personal_sign recovers to its address", async () => {
    const wallet = new DevWallet(key(7));
    const message = "localhost:3000 wants you to sign in with your Ethereum account:\n" + wallet.address;
    const hex = "0x" + Array.from(utf8ToBytes(message), (b) => b.toString(16).padStart(2, "0")).join("");
    const signature = (await wallet.request({ method: "personal_sign", params: [hex, wallet.address] })) as string;
    expect(signature).toMatch(/^0x[0-9a-f]{130}$/);
    expect(recoverPersonalSign(utf8ToBytes(message), signature)).toBe(wallet.address);
  });

  it("rejects with 4001 when told to, and answers accounts only after connecting", async () => {
    const wallet = new DevWallet(key(9));
    expect(await wallet.request({ method: "eth_accounts" })).toEqual([]);
    wallet.rejectAll = true;
    await expect(wallet.request({ method: "eth_requestAccounts" })).rejects.toMatchObject({ code: 4001 });
    wallet.rejectAll = false;
    expect(await wallet.request({ method: "eth_requestAccounts" })).toEqual([wallet.address]);
    expect(await wallet.request({ method: "eth_accounts" })).toEqual([wallet.address]);
  });
});

describe("DevWallet typed data", () => {
  it("signs EIP-712 typed data (eth_signTypedData_v4) so that the digest recovers to its address", async () => {
    const wallet = new DevWallet(key(11));
    const data = {
      types: { EIP712Domain: [{ name: "name", type: "string" }, { name: "chainId", type: "uint256" }], Hello: [{ name: "to", type: "address" }, { name: "amount", type: "uint256" }] },
      primaryType: "Hello",
      domain: { name: "Vestibule", chainId: 1 },
      message: { to: wallet.address, amount: "1000000000000000000" },
    };
    const signature = (await wallet.request({ method: "eth_signTypedData_v4", params: [wallet.address, JSON.stringify(data)] })) as string;
    expect(recoverDigest(typedDataDigest(data), signature)).toBe(wallet.address);
  });
});

// Types of tx.mjs for the client's TypeScript tests (the parts they use).
export interface Keypair { seed: Uint8Array; publicKey: Uint8Array; address: string }
export interface Instruction { programId: string; accounts: Array<{ address: string; signer: boolean; writable: boolean }>; data: Uint8Array }
export declare const base58: { encode(b: Uint8Array): string; decode(s: string): Uint8Array };
export declare const TOKEN_PROGRAM: string;
export declare function keypairFromSeed(seed: Uint8Array): Keypair;
export declare function randomKeypair(): Keypair;
export declare function compileMessage(m: { payer: string; instructions: Instruction[]; recentBlockhash: string }): Uint8Array;
export declare function transaction(message: Uint8Array, signatures: Uint8Array[]): Uint8Array;
export declare function parseTransaction(wire: Uint8Array): { signatures: Uint8Array[]; message: Uint8Array };
export declare function associatedTokenAddress(owner: string, mint: string, program?: string): string;
export declare const instructions: {
  transfer(from: string, to: string, lamports: number | bigint): Instruction;
  transferChecked(source: string, mint: string, destination: string, owner: string, amount: bigint, decimals: number): Instruction;
  createAssociatedTokenAccountIdempotent(payer: string, owner: string, mint: string): Instruction;
};

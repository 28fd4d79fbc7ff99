// Types of anvil.mjs for the client's TypeScript tests.
export declare const ANVIL_KEY_0: string;
export interface Anvil {
  url: string;
  pid: number;
  stop(): Promise<void>;
}
export declare function startAnvil(chainId?: number): Promise<Anvil>;
export interface Receipt {
  status: string;
  from: string;
  to: string | null;
  blockNumber: string;
}
export declare function waitForReceipt(url: string, hash: string, tries?: number): Promise<Receipt>;

// Types of anvil.mjs for the client's TypeScript tests.
export declare const ANVIL_KEY_0: string;
export interface Anvil {
  url: string;
  stop(): Promise<void>;
}
export declare function startAnvil(chainId?: number): Promise<Anvil>;

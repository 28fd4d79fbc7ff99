// Types of solana.mjs for the client's TypeScript tests.
export declare const SOLANA_DEV_KEY: { secretKey: string; address: string };
export interface SolanaPeer {
  url: string;
  cluster: string;
  genesisHash: string;
  owner: string;
  mint?: string;
  tokenAccount?: string;
  decimals?: number;
  tokens?: number;
  pid: number;
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  stop(): Promise<void>;
}
export declare function startSolanaPeer(options?: { cluster?: string; fund?: string; sol?: number; decimals?: number; tokens?: number }): Promise<SolanaPeer>;

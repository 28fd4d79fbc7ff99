// The words of a thrown value, for the visitor. EIP-1193 wallets (MetaMask among them) and Wallet
// Standard wallets reject with plain `{ code, message }` objects, not Errors, and anything may be
// thrown: an object's non-empty `message` (trimmed), else a non-empty string, else `fallback`
// (spec §8: "Unknown error (the default for unparseable errors)" for a wallet's error). Shared by the
// core (walletEffects.ts, secureFrameHost.ts; the core chunk's budget is nearly full, so it stays
// this small) and the secure frame's own bundle (frame/wallet.ts): it imports nothing. A hostile
// object (a `message` getter that throws) makes it throw: walletFailure catches around it.

export function errorMessage(e: unknown, fallback: string): string {
  // `?.` reads `message` of anything but null and undefined: a primitive's is undefined (so a
  // string stands for itself), an object's is its own or inherited (Error.prototype's is "").
  const m = (e as { message?: unknown } | null | undefined)?.message ?? e;
  return (typeof m === "string" && m.trim()) || fallback;
}

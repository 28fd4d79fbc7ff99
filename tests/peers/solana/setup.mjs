// Funding a key and creating a demo SPL token on a peer, with real transactions: an airdrop in SOL,
// then (signed by a mint authority the peer makes) a mint account (System CreateAccount + SPL
// InitializeMint2), the owner's associated token account (ATA CreateIdempotent) and MintTo.

import { compileMessage, instructions, randomKeypair, signMessageInto, associatedTokenAddress, TOKEN_PROGRAM } from "./tx.mjs";

export const LAMPORTS_PER_SOL = 1_000_000_000;

/** Sends a legacy transaction of `ixs` paid by `payer`, signed by `signers`; returns its signature. */
export function send(peer, payer, ixs, signers) {
  const { value } = peer.call("getLatestBlockhash");
  const message = compileMessage({ payer: payer.address, instructions: ixs, recentBlockhash: value.blockhash });
  const wire = signMessageInto(message, signers);
  return peer.call("sendTransaction", [Buffer.from(wire).toString("base64"), { encoding: "base64" }]);
}

/** Funds `owner` with `sol` SOL and, when `tokens` is set, creates a mint with `decimals` and mints
 * `tokens` whole tokens to the owner's associated token account. */
export function fundAndMint(peer, { owner, sol = 10, decimals = 6, tokens = 1000 }) {
  peer.call("requestAirdrop", [owner, Math.round(sol * LAMPORTS_PER_SOL)]);
  if (!tokens) return { owner };
  const authority = randomKeypair();
  const mint = randomKeypair();
  peer.call("requestAirdrop", [authority.address, LAMPORTS_PER_SOL]);
  const rent = peer.call("getMinimumBalanceForRentExemption", [82]);
  send(peer, authority, [
    instructions.createAccount(authority.address, mint.address, rent, 82, TOKEN_PROGRAM),
    instructions.initializeMint2(mint.address, decimals, authority.address),
  ], [authority, mint]);
  const tokenAccount = associatedTokenAddress(owner, mint.address);
  send(peer, authority, [
    instructions.createAssociatedTokenAccountIdempotent(authority.address, owner, mint.address),
    instructions.mintTo(mint.address, tokenAccount, authority.address, BigInt(tokens) * 10n ** BigInt(decimals)),
  ], [authority]);
  return { owner, mint: mint.address, tokenAccount, decimals, tokens };
}

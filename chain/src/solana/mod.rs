//! Solana networks (spec §1, §5, §7, §9): addresses, the programs a transfer uses, transactions as
//! the server builds them (a System transfer, or an SPL `TransferChecked` with the receiver's
//! associated token account created idempotently when missing) and the JSON-RPC reads behind
//! balances, sends and confirmations. Encodings come from the split Solana crates
//! (`solana-address`, `solana-message`, `solana-system-interface`; decision 0911); the SPL Token and
//! Associated Token Account instructions are three small byte layouts written here.

pub mod rpc;
pub mod tx;

use std::str::FromStr;

pub use solana_message::{AccountMeta, Address as SolAddress, Hash as SolHash, Instruction, Message};

/// The System program.
pub const SYSTEM_PROGRAM: SolAddress = SolAddress::from_str_const("11111111111111111111111111111111");
/// SPL Token.
pub const TOKEN_PROGRAM: SolAddress = SolAddress::from_str_const("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
/// SPL Token-2022 (same instruction layouts for the ones used here).
pub const TOKEN_2022_PROGRAM: SolAddress = SolAddress::from_str_const("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb");
/// SPL Associated Token Account.
pub const ASSOCIATED_TOKEN_PROGRAM: SolAddress = SolAddress::from_str_const("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL");

/// Lamports per SOL (SOL has 9 decimals).
pub const SOL_DECIMALS: u8 = 9;

const BASE58_ALPHABET: &[u8] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/// Spec §5: a Solana address is 32 to 44 base58 characters; it must also name 32 bytes (an
/// ed25519 public key or a program-derived address). No surrounding blanks are accepted.
pub fn parse_solana_address(text: &str) -> Option<SolAddress> {
    if !(32..=44).contains(&text.len()) || !text.bytes().all(|b| BASE58_ALPHABET.contains(&b)) {
        return None;
    }
    SolAddress::from_str(text).ok()
}

/// Whether `program` is one of the two SPL token programs.
pub fn is_token_program(program: &SolAddress) -> bool {
    *program == TOKEN_PROGRAM || *program == TOKEN_2022_PROGRAM
}

/// The associated token account of `owner` for `mint` under the token `program`.
pub fn associated_token_address(owner: &SolAddress, mint: &SolAddress, program: &SolAddress) -> SolAddress {
    SolAddress::find_program_address(&[owner.as_ref(), program.as_ref(), mint.as_ref()], &ASSOCIATED_TOKEN_PROGRAM).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_32_to_44_base58_characters_naming_32_bytes() {
        assert_eq!(parse_solana_address("11111111111111111111111111111111"), Some(SYSTEM_PROGRAM));
        assert!(parse_solana_address("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA").is_some());
        // 31 characters; 45; a character outside base58 (0, O, I, l); blanks; EVM.
        assert!(parse_solana_address("1111111111111111111111111111111").is_none());
        assert!(parse_solana_address(&"1".repeat(45)).is_none());
        assert!(parse_solana_address("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5D0").is_none());
        assert!(parse_solana_address(" TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA").is_none());
        assert!(parse_solana_address("0x5FbDB2315678afecb367f032d93F642f64180aa3").is_none());
        // 44 base58 characters that decode to more than 32 bytes.
        assert!(parse_solana_address(&"z".repeat(44)).is_none());
    }

    #[test]
    fn the_associated_token_address_is_the_ata_programs_pda() {
        // The same derivation as the test peer's tx.mjs (whose accounts the real ATA program accepts).
        let owner = parse_solana_address("7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU").unwrap();
        let usdc = parse_solana_address("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v").unwrap();
        let ata = associated_token_address(&owner, &usdc, &TOKEN_PROGRAM);
        assert_eq!(ata.to_string(), "C4PRXFV6Gf5mytVZb6RoeLsG8CjcFWzR2EJ3dvwPTUJH");
        assert!(!ata.is_on_curve(), "a PDA is off the curve");
        assert_ne!(ata, associated_token_address(&owner, &usdc, &TOKEN_2022_PROGRAM));
    }
}

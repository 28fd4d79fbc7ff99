//! Transactions as the server builds them for a Solana send, in the legacy wire format: the
//! message (`solana-message`), preceded by one empty 64-byte signature slot per required signer,
//! which the wallet fills in. A signed transaction coming back is checked against the message the
//! server built (byte for byte) and its fee payer's ed25519 signature.

use serde::{Deserialize, Serialize};

use super::{ASSOCIATED_TOKEN_PROGRAM, AccountMeta, Instruction, Message, SYSTEM_PROGRAM, SolAddress, SolHash, associated_token_address};

/// What moves in a Solana send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SolanaTransfer {
    /// `lamports` of SOL (a System transfer).
    Native { lamports: u64 },
    /// `amount` base units of the SPL mint (TransferChecked with the mint's `decimals`), under the
    /// mint's token `program`.
    Spl { mint: SolAddress, program: SolAddress, decimals: u8, amount: u64 },
}

/// SPL Token `TransferChecked` (instruction 12): source, mint, destination, owner (signer).
pub fn transfer_checked(
    program: &SolAddress,
    source: &SolAddress,
    mint: &SolAddress,
    destination: &SolAddress,
    owner: &SolAddress,
    amount: u64,
    decimals: u8,
) -> Instruction {
    let mut data = Vec::with_capacity(10);
    data.push(12);
    data.extend_from_slice(&amount.to_le_bytes());
    data.push(decimals);
    Instruction::new_with_bytes(
        *program,
        &data,
        vec![
            AccountMeta::new(*source, false),
            AccountMeta::new_readonly(*mint, false),
            AccountMeta::new(*destination, false),
            AccountMeta::new_readonly(*owner, true),
        ],
    )
}

/// Associated Token Account `CreateIdempotent` (instruction 1): creates `owner`'s account for
/// `mint`, paid by `payer`, or does nothing when it exists.
pub fn create_associated_token_account_idempotent(
    payer: &SolAddress,
    owner: &SolAddress,
    mint: &SolAddress,
    program: &SolAddress,
) -> Instruction {
    let ata = associated_token_address(owner, mint, program);
    Instruction::new_with_bytes(
        ASSOCIATED_TOKEN_PROGRAM,
        &[1],
        vec![
            AccountMeta::new(*payer, true),
            AccountMeta::new(ata, false),
            AccountMeta::new_readonly(*owner, false),
            AccountMeta::new_readonly(*mint, false),
            AccountMeta::new_readonly(SYSTEM_PROGRAM, false),
            AccountMeta::new_readonly(*program, false),
        ],
    )
}

/// The instructions of a send from `from` to `to`. For SPL, `to` is the receiver's wallet: the
/// tokens go to its associated token account, created first when `create_receiver_account`.
pub fn transfer_instructions(
    from: &SolAddress,
    to: &SolAddress,
    transfer: &SolanaTransfer,
    create_receiver_account: bool,
) -> Vec<Instruction> {
    match *transfer {
        SolanaTransfer::Native { lamports } => vec![solana_system_interface::instruction::transfer(from, to, lamports)],
        SolanaTransfer::Spl { mint, program, decimals, amount } => {
            let source = associated_token_address(from, &mint, &program);
            let destination = associated_token_address(to, &mint, &program);
            let mut ixs = Vec::with_capacity(2);
            if create_receiver_account {
                ixs.push(create_associated_token_account_idempotent(from, to, &mint, &program));
            }
            ixs.push(transfer_checked(&program, &source, &mint, &destination, from, amount, decimals));
            ixs
        }
    }
}

/// The message of a send, paid by `from`, valid while `blockhash` is recent.
pub fn transfer_message(
    from: &SolAddress,
    to: &SolAddress,
    transfer: &SolanaTransfer,
    create_receiver_account: bool,
    blockhash: &SolHash,
) -> Message {
    Message::new_with_blockhash(&transfer_instructions(from, to, transfer, create_receiver_account), Some(from), blockhash)
}

fn push_compact_u16(out: &mut Vec<u8>, mut value: u16) {
    loop {
        let mut byte = (value & 0x7f) as u8;
        value >>= 7;
        if value != 0 {
            byte |= 0x80;
        }
        out.push(byte);
        if value == 0 {
            return;
        }
    }
}

fn read_compact_u16(bytes: &[u8]) -> Option<(u16, usize)> {
    let mut value: u32 = 0;
    for (i, byte) in bytes.iter().take(3).enumerate() {
        value |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return u16::try_from(value).ok().map(|v| (v, i + 1));
        }
    }
    None
}

/// The unsigned wire transaction of `message`: empty signature slots, then the message.
pub fn unsigned_transaction(message: &Message) -> Vec<u8> {
    let body = message.serialize();
    let signers = message.header.num_required_signatures;
    let mut wire = Vec::with_capacity(1 + 64 * usize::from(signers) + body.len());
    push_compact_u16(&mut wire, u16::from(signers));
    wire.resize(wire.len() + 64 * usize::from(signers), 0);
    wire.extend_from_slice(&body);
    wire
}

/// A wire transaction split into its signatures and message bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireTransaction {
    pub signatures: Vec<[u8; 64]>,
    pub message: Vec<u8>,
}

impl WireTransaction {
    pub fn parse(wire: &[u8]) -> Result<Self, String> {
        let (count, at) = read_compact_u16(wire).ok_or("the signature count is malformed")?;
        let end = at + 64 * usize::from(count);
        if wire.len() <= end {
            return Err("the transaction is shorter than its signatures".into());
        }
        let signatures = wire[at..end].chunks_exact(64).map(|c| c.try_into().expect("64 bytes")).collect();
        Ok(Self { signatures, message: wire[end..].to_vec() })
    }

    /// The first signature in base58: the transaction's id.
    pub fn signature(&self) -> Option<String> {
        self.signatures.first().map(|s| bs58_encode(s))
    }
}

fn bs58_encode(bytes: &[u8]) -> String {
    // solana-address's encoder is for 32 bytes; signatures are 64: encode with the same alphabet.
    const ALPHABET: &[u8] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
    let mut digits: Vec<u8> = Vec::with_capacity(bytes.len() * 138 / 100 + 1);
    for &byte in bytes {
        let mut carry = u32::from(byte);
        for d in digits.iter_mut() {
            carry += u32::from(*d) << 8;
            *d = (carry % 58) as u8;
            carry /= 58;
        }
        while carry > 0 {
            digits.push((carry % 58) as u8);
            carry /= 58;
        }
    }
    let zeros = bytes.iter().take_while(|b| **b == 0).count();
    std::iter::repeat_n(b'1', zeros).chain(digits.iter().rev().map(|d| ALPHABET[usize::from(*d)])).map(char::from).collect()
}

/// Why a signed transaction is not the one the server built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignedTransactionError {
    #[error("the wallet's answer is not a transaction: {0}")]
    Malformed(String),
    #[error("the wallet signed another transaction than the one asked")]
    OtherMessage,
    #[error("the fee payer's signature is missing or invalid")]
    BadSignature,
}

/// A signed transaction fit to send: its id (the payer's signature, base58) and the wire the node
/// gets, which the server writes itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedTransaction {
    pub signature: String,
    pub wire: Vec<u8>,
}

/// Checks that `signed` carries exactly `message` (the bytes the server built), as many
/// signatures as the message requires, and a valid ed25519 signature of it by `payer`, the first
/// signer. The wire to send is rebuilt from the built message and those signatures, in the
/// canonical encoding: the wallet's own bytes never reach a node (a non-canonical signature count
/// once did, and took down the devnet's node).
pub fn check_signed(message: &[u8], signed: &[u8], payer: &SolAddress) -> Result<CheckedTransaction, SignedTransactionError> {
    let parsed = WireTransaction::parse(signed).map_err(SignedTransactionError::Malformed)?;
    if parsed.message != message {
        return Err(SignedTransactionError::OtherMessage);
    }
    // The server builds legacy messages, whose first byte is the number of required signatures.
    let required = message.first().map_or(0, |n| usize::from(*n));
    if parsed.signatures.len() != required {
        return Err(SignedTransactionError::Malformed(format!(
            "{} signatures for a message that requires {required}",
            parsed.signatures.len()
        )));
    }
    let signature = parsed.signatures.first().ok_or(SignedTransactionError::BadSignature)?;
    let key = ed25519_dalek::VerifyingKey::from_bytes(payer.as_array()).map_err(|_| SignedTransactionError::BadSignature)?;
    key.verify_strict(message, &ed25519_dalek::Signature::from_bytes(signature)).map_err(|_| SignedTransactionError::BadSignature)?;
    let mut wire = Vec::with_capacity(3 + 64 * required + message.len());
    push_compact_u16(&mut wire, required as u16);
    for signature in &parsed.signatures {
        wire.extend_from_slice(signature);
    }
    wire.extend_from_slice(message);
    Ok(CheckedTransaction { signature: bs58_encode(signature), wire })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solana::{TOKEN_PROGRAM, parse_solana_address};

    fn key(text: &str) -> SolAddress {
        parse_solana_address(text).unwrap()
    }

    #[test]
    fn compact_u16_round_trips() {
        for value in [0u16, 1, 127, 128, 255, 16_383, 16_384, u16::MAX] {
            let mut out = vec![];
            push_compact_u16(&mut out, value);
            assert_eq!(read_compact_u16(&out), Some((value, out.len())), "{value}");
        }
        assert_eq!(read_compact_u16(&[0x80, 0x80, 0x80]), None);
    }

    #[test]
    fn base58_matches_the_address_encoder() {
        let address = key("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA");
        assert_eq!(bs58_encode(address.as_ref()), address.to_string());
        assert_eq!(bs58_encode(&[0; 32]), "11111111111111111111111111111111");
    }

    #[test]
    fn a_transfer_checked_is_instruction_12_with_amount_and_decimals() {
        let (a, b, m) = (
            key("7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU"),
            key("11111111111111111111111111111112"),
            key("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"),
        );
        let ix = transfer_checked(&TOKEN_PROGRAM, &a, &m, &b, &a, 1_500_000, 6);
        assert_eq!(ix.data, [12, 0x60, 0xe3, 0x16, 0, 0, 0, 0, 0, 6]);
        assert_eq!(
            ix.accounts.iter().map(|m| (m.is_signer, m.is_writable)).collect::<Vec<_>>(),
            [(false, true), (false, false), (false, true), (true, false)]
        );
    }

    #[test]
    fn an_unsigned_transaction_parses_back_and_a_signature_is_checked() {
        use ed25519_dalek::Signer;
        let signer = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
        let from = SolAddress::new_from_array(signer.verifying_key().to_bytes());
        let to = key("7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU");
        let message = transfer_message(&from, &to, &SolanaTransfer::Native { lamports: 5 }, false, &SolHash::new_from_array([1; 32]));
        let wire = unsigned_transaction(&message);
        let parsed = WireTransaction::parse(&wire).unwrap();
        assert_eq!(parsed.signatures, vec![[0; 64]]);
        assert_eq!(parsed.message, message.serialize());
        assert_eq!(check_signed(&parsed.message, &wire, &from), Err(SignedTransactionError::BadSignature));
        let signature = signer.sign(&parsed.message).to_bytes();
        let mut signed = wire.clone();
        signed[1..65].copy_from_slice(&signature);
        assert_eq!(
            check_signed(&parsed.message, &signed, &from),
            Ok(CheckedTransaction { signature: bs58_encode(&signature), wire: signed.clone() })
        );
        let other = transfer_message(&from, &to, &SolanaTransfer::Native { lamports: 6 }, false, &SolHash::new_from_array([1; 32]));
        assert_eq!(check_signed(&other.serialize(), &signed, &from), Err(SignedTransactionError::OtherMessage));
        assert!(matches!(check_signed(&parsed.message, &[1], &from), Err(SignedTransactionError::Malformed(_))));
    }

    #[test]
    fn a_signed_transaction_in_another_encoding_is_sent_as_the_server_writes_it_and_extra_signatures_are_refused() {
        use ed25519_dalek::Signer;
        let signer = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
        let from = SolAddress::new_from_array(signer.verifying_key().to_bytes());
        let to = key("7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU");
        let message = transfer_message(&from, &to, &SolanaTransfer::Native { lamports: 5 }, false, &SolHash::new_from_array([1; 32]));
        let body = message.serialize();
        let signature = signer.sign(&body).to_bytes();
        let canonical = [&[1u8][..], &signature, &body].concat();
        // A signature count of 1 written in two bytes (0x81 0x00) parses to the same transaction.
        let non_canonical = [&[0x81u8, 0x00][..], &signature, &body].concat();
        let checked = check_signed(&body, &non_canonical, &from).unwrap();
        assert_eq!(checked.wire, canonical, "the node gets the server's encoding, not the wallet's");
        // Two signatures where the message requires one: refused.
        let two = [&[2u8][..], &signature, &[0u8; 64], &body].concat();
        assert!(matches!(check_signed(&body, &two, &from), Err(SignedTransactionError::Malformed(_))));
    }
}

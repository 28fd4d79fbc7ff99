//! The proof that the frame binding a wallet holds its keys: both keys sign
//! `Vestibule embedded wallet\nframe: {frameId}\nuser: {userId}` (EVM: EIP-191 personal_sign,
//! 65-byte hex; Solana: ed25519 over the UTF-8 bytes, base58).

use std::str::FromStr;

use alloy_primitives::{Address, Signature};
use ed25519_dalek::{Signature as Ed25519Signature, VerifyingKey};

pub fn binding_message(frame_id: &str, user_id: &str) -> String {
    format!("Vestibule embedded wallet\nframe: {frame_id}\nuser: {user_id}")
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BindingError {
    #[error("eip155Address is not a 20-byte hex address")]
    BadEip155Address,
    #[error("solanaAddress is not a base58 ed25519 public key")]
    BadSolanaAddress,
    #[error("eip155Signature does not prove the key of eip155Address")]
    Eip155Signature,
    #[error("solanaSignature does not prove the key of solanaAddress")]
    SolanaSignature,
}

/// Checks both signatures; on success gives the addresses in canonical form (EIP-55 checksummed
/// EVM address, the base58 Solana address as given).
pub fn verify_binding(
    frame_id: &str,
    user_id: &str,
    eip155_address: &str,
    eip155_signature: &str,
    solana_address: &str,
    solana_signature: &str,
) -> Result<(String, String), BindingError> {
    let message = binding_message(frame_id, user_id);
    let address = Address::from_str(eip155_address).map_err(|_| BindingError::BadEip155Address)?;
    let signature_bytes = hex::decode(eip155_signature.trim_start_matches("0x")).map_err(|_| BindingError::Eip155Signature)?;
    if signature_bytes.len() != 65 {
        return Err(BindingError::Eip155Signature);
    }
    let signature = Signature::from_raw(&signature_bytes).map_err(|_| BindingError::Eip155Signature)?;
    let recovered = signature.recover_address_from_msg(message.as_bytes()).map_err(|_| BindingError::Eip155Signature)?;
    if recovered != address {
        return Err(BindingError::Eip155Signature);
    }

    let key_bytes: [u8; 32] =
        bs58::decode(solana_address).into_vec().ok().and_then(|bytes| bytes.try_into().ok()).ok_or(BindingError::BadSolanaAddress)?;
    let key = VerifyingKey::from_bytes(&key_bytes).map_err(|_| BindingError::BadSolanaAddress)?;
    let signature_bytes: [u8; 64] =
        bs58::decode(solana_signature).into_vec().ok().and_then(|bytes| bytes.try_into().ok()).ok_or(BindingError::SolanaSignature)?;
    key.verify_strict(message.as_bytes(), &Ed25519Signature::from_bytes(&signature_bytes)).map_err(|_| BindingError::SolanaSignature)?;
    Ok((address.to_checksum(None), solana_address.to_owned()))
}

/// Test keys that sign a binding proof as the frame does.
pub mod test_keys {
    use super::*;
    use alloy_primitives::eip191_hash_message;
    use ed25519_dalek::Signer as _;

    pub struct WalletKeys {
        pub evm: k256::ecdsa::SigningKey,
        pub solana: ed25519_dalek::SigningKey,
    }

    impl WalletKeys {
        pub fn from_seed(seed: u8) -> Self {
            Self {
                evm: k256::ecdsa::SigningKey::from_bytes(&[seed.max(1); 32].into()).expect("valid scalar"),
                solana: ed25519_dalek::SigningKey::from_bytes(&[seed; 32]),
            }
        }
        pub fn eip155_address(&self) -> String {
            Address::from_public_key(self.evm.verifying_key()).to_checksum(None)
        }
        pub fn solana_address(&self) -> String {
            bs58::encode(self.solana.verifying_key().as_bytes()).into_string()
        }
        /// (eip155Signature, solanaSignature) over the binding text.
        pub fn sign_binding(&self, frame_id: &str, user_id: &str) -> (String, String) {
            let message = binding_message(frame_id, user_id);
            let digest = eip191_hash_message(message.as_bytes());
            let (signature, recovery) = self.evm.sign_prehash_recoverable(digest.as_slice()).expect("signs");
            let mut bytes = signature.to_bytes().to_vec();
            bytes.push(27 + recovery.to_byte());
            let solana = self.solana.sign(message.as_bytes());
            (format!("0x{}", hex::encode(bytes)), bs58::encode(solana.to_bytes()).into_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_keys::WalletKeys;
    use super::*;

    #[test]
    fn given_signatures_by_both_keys_when_verified_then_the_addresses_come_back() {
        let keys = WalletKeys::from_seed(9);
        let (evm, sol) = keys.sign_binding("frame-1", "user-1");
        let lower = keys.eip155_address().to_lowercase();
        assert_eq!(
            verify_binding("frame-1", "user-1", &lower, &evm, &keys.solana_address(), &sol),
            Ok((keys.eip155_address(), keys.solana_address()))
        );
    }

    #[test]
    fn given_signatures_for_another_frame_or_key_when_verified_then_they_are_refused() {
        let keys = WalletKeys::from_seed(9);
        let other = WalletKeys::from_seed(10);
        let (evm, sol) = keys.sign_binding("frame-1", "user-1");
        assert_eq!(
            verify_binding("frame-2", "user-1", &keys.eip155_address(), &evm, &keys.solana_address(), &sol),
            Err(BindingError::Eip155Signature)
        );
        assert_eq!(
            verify_binding("frame-1", "user-1", &other.eip155_address(), &evm, &keys.solana_address(), &sol),
            Err(BindingError::Eip155Signature)
        );
        assert_eq!(
            verify_binding("frame-1", "user-1", &keys.eip155_address(), &evm, &other.solana_address(), &sol),
            Err(BindingError::SolanaSignature)
        );
        assert_eq!(verify_binding("frame-1", "user-1", "0x12", &evm, &keys.solana_address(), &sol), Err(BindingError::BadEip155Address));
    }
}

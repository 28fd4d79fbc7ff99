//! Nonces for sign-in messages, drawn from the operating system's CSPRNG.
//!
//! EIP-4361 asks for at least 8 alphanumeric characters; Vestibule issues [`NONCE_LEN`] characters
//! drawn uniformly from the 62 ASCII letters and digits: 24 × log2(62) ≈ 142.9 bits, above the 96
//! the project requires. Binding a nonce to one session and accepting it once is the flow's job:
//! it stores the issued [`Nonce`], passes it as `VerifyPolicy::expected_nonce`, and forgets it
//! whatever the verdict.

use rand::distr::{Alphanumeric, Distribution};
use rand::rngs::OsRng;
use rand::{CryptoRng, TryRngCore};

use super::message::Nonce;

/// Length of a generated nonce, in characters.
pub const NONCE_LEN: usize = 24;

/// Bits of entropy in a generated nonce (floor of `NONCE_LEN * log2(62)`).
pub const NONCE_BITS: u32 = 142;
const _: () = assert!(NONCE_BITS >= 96, "nonces must carry at least 96 bits");

/// A fresh nonce from the operating system's CSPRNG (`getrandom`).
///
/// # Panics
/// If the operating system cannot provide randomness (as `getrandom` would on no supported
/// platform); issuing a guessable nonce instead is not an option.
pub fn generate_nonce() -> Nonce {
    generate_nonce_with(&mut OsRng.unwrap_err())
}

/// A fresh nonce from the given cryptographically secure generator (tests pass a seeded one).
pub fn generate_nonce_with<R: CryptoRng + ?Sized>(rng: &mut R) -> Nonce {
    let s: String = (0..NONCE_LEN).map(|_| char::from(Alphanumeric.sample(rng))).collect();
    Nonce::new(s).expect("24 alphanumeric characters are a valid nonce")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_are_long_alphanumeric_and_distinct() {
        let a = generate_nonce();
        let b = generate_nonce();
        assert_eq!(a.as_str().len(), NONCE_LEN);
        assert!(a.as_str().bytes().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, b);
        assert!((NONCE_LEN as f64) * 62f64.log2() >= f64::from(NONCE_BITS));
    }
}

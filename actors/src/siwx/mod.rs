//! Sign-in messages and their server-side verification: EIP-4361 (Sign-In With Ethereum) and
//! CAIP-122 / Sign-In With Solana. Pure: no I/O and no clock (time is a parameter of
//! [`verify::VerifyPolicy`]); the only effect is [`nonce::generate_nonce`], which reads the OS
//! CSPRNG. Contract-account (EIP-1271) checks need chain state and live in the gateway.
//!
//! See `docs/siwx.md` for the formats, the address policy and the verification rules.

pub(crate) mod grammar;
pub mod message;
pub mod nonce;
pub mod verify;

pub use grammar::AuthorityParts;
pub use message::{
    Account, Domain, FieldError, MessageFields, Namespace, Nonce, ParseError, ParseErrorKind, RequestId, Scheme, SiwxMessage,
    SolanaAddress, SolanaChainRef, Statement, Timestamp, Uri,
};
pub use nonce::{generate_nonce, generate_nonce_with};
pub use verify::{Binding, SignatureMethod, Verified, VerifyError, VerifyPolicy, check_message, verify, verify_eoa, verify_solana};

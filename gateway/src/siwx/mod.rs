//! Sign-in message verification with effects: EIP-1271 contract accounts over JSON-RPC, and the
//! `vestibule siwx verify` command's logic. The messages, the pure checks and the EOA / ed25519
//! verifiers are `vestibule_actors::siwx`.

pub mod checker;
pub mod cli;
pub mod eip1271;
pub mod http;
pub mod token;
pub mod verify;

pub use cli::{SiwxVerifyArgs, run_verify};
pub use eip1271::{Eip1271Checker, MAGIC_VALUE};
pub use verify::{SiwxError, verify_message};

//! Effects the runtime performs for a session's state, outside the pure decision: checking a
//! contract account's sign-in signature on chain (EIP-1271). The decision records what to check
//! (`SiwxState::pending_contract_check`); the actor asks the checker and feeds the verdict back as
//! `Command::SiwxContractChecked`, so the outcome is an event in the log and replays exactly.

use std::future::Future;
use std::pin::Pin;

use crate::machines::siwx::ContractCheck;

pub type CheckFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// Asks a contract whether it accepts a signature. Implemented by the gateway with a JSON-RPC
/// provider per chain from the server's configuration: the RPC endpoint is never taken from the
/// browser, which could point it at a node that says yes to anything.
pub trait ContractSignatureChecker: Send + Sync + 'static {
    /// `Ok(())` when the contract at `check.address` on `check.chain` returns the EIP-1271 magic
    /// value for the EIP-191 hash of `check.message`; otherwise why not. Must resolve in bounded
    /// time (the session waits for it before another sign-in can start).
    fn check(&self, check: ContractCheck) -> CheckFuture;
}

/// Without a configured checker, contract accounts cannot sign in.
pub(crate) fn no_checker() -> CheckFuture {
    Box::pin(std::future::ready(Err("no RPC endpoint is configured for contract accounts".to_string())))
}

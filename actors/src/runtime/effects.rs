//! Effects the runtime performs for a session's state, outside the pure decision: checking a
//! contract account's sign-in signature on chain (EIP-1271), and the chain service's reads
//! (balances, activity, receipts, a host's safe reads). The decision records what to check
//! (`SiwxState::pending_contract_check`); the actor asks the checker and feeds the verdict back as
//! `Command::SiwxContractChecked`, so the outcome is an event in the log and replays exactly.

use std::future::Future;
use std::pin::Pin;

use crate::machines::activity::{ActivityFetch, ActivityPage};
use crate::machines::balances::{BalanceFetch, BalancesSnapshot};
use crate::machines::requests::WalletOutcome;
use crate::machines::send::{PreparedSolanaTransfer, SolanaSend, SolanaSubmitFailure, Transfer};
use crate::machines::siwx::ContractCheck;
use crate::model::caip::CaipNetworkId;
use crate::model::options::SocialProvider;
use crate::session::{Command, ReceiptOutcome};
use vestibule_store::SessionId;

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

/// A chain effect's future.
pub type ChainFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The gateway's chain service as sessions use it (docs/chain.md): every chain read a decision
/// asks for (`BalancesState::pending`, `ActivityState::pending`, `SendState::awaiting_receipts`) is
/// performed here by the actor, and its outcome comes back through the session's mailbox as a
/// command (`BalancesFetched`, `ActivityFetched`, `ReceiptObserved`), recorded as events, so a
/// replay shows exactly what the visitor saw without asking any node again. Each future must
/// resolve in bounded time (the service's timeouts and retry budget, spec §7 Chain RPC).
pub trait ChainEffects: Send + Sync + 'static {
    /// The networks the service has endpoints for: recorded in `SessionStarted`.
    fn served_networks(&self) -> Vec<CaipNetworkId>;
    /// `fetch.address`'s balances on `fetch.network` (past the 30 s cache when `fetch.fresh`).
    fn balances(&self, fetch: BalanceFetch) -> ChainFuture<Result<BalancesSnapshot, String>>;
    /// One page of `fetch.address`'s activity on `fetch.network`, from `fetch.cursor`.
    fn activity(&self, fetch: ActivityFetch) -> ChainFuture<Result<ActivityPage, String>>;
    /// Waits (bounded) for the receipt of `hash`, the wallet's answer to `transfer`, on the
    /// transfer's network. The hash is the wallet's word, not the server's: a mined transaction to
    /// another address than the transfer was built to ([`Transfer::sent_to`]), from another account
    /// than its sender, or with another value or calldata than it was built with, is not this
    /// transfer (a field the transfer does not record, in an older log, is not compared). `client`:
    /// as for [`ChainEffects::host_read`]; the waits one client address may have at once are bounded.
    fn receipt(&self, hash: String, transfer: Transfer, client: Option<std::net::IpAddr>) -> ChainFuture<ReceiptOutcome>;
    /// A host app's safe read (`HostRequestsState::chain_reads`; spec §6): `method` with `params`
    /// on `network`'s nodes. The node's result, or an EIP-1193 / JSON-RPC error (the node's own
    /// error as it answered; a node that cannot be reached is 4901, "chain disconnected").
    /// `client`: the address of the client the session asks for ([`super::ConnectionLink::client`]),
    /// whose share of the calls at the nodes at once the read counts towards.
    fn host_read(
        &self,
        network: CaipNetworkId,
        method: String,
        params: serde_json::Value,
        client: Option<std::net::IpAddr>,
    ) -> ChainFuture<WalletOutcome>;
    /// Builds the transaction of a Solana send (`SendState::solana` in its `preparing` step) with
    /// a recent blockhash; the outcome comes back as `SolanaSendPrepared`.
    fn prepare_solana_send(&self, send: SolanaSend) -> ChainFuture<Result<PreparedSolanaTransfer, String>>;
    /// Sends the transaction the wallet signed (`signed`, base64) after checking it carries
    /// `message` (base64) signed by `from`; its signature, or why not: the check's reason, or the
    /// node's message. Comes back as `SolanaSendSubmitted`.
    fn submit_solana_send(
        &self,
        network: CaipNetworkId,
        from: String,
        message: String,
        signed: String,
    ) -> ChainFuture<Result<String, SolanaSubmitFailure>>;
}

/// Without a chain service, sessions serve no network: every fetch fails at once.
pub(crate) struct NoChain;

impl ChainEffects for NoChain {
    fn served_networks(&self) -> Vec<CaipNetworkId> {
        Vec::new()
    }
    fn balances(&self, _: BalanceFetch) -> ChainFuture<Result<BalancesSnapshot, String>> {
        Box::pin(std::future::ready(Err("no chain service is configured".to_string())))
    }
    fn activity(&self, _: ActivityFetch) -> ChainFuture<Result<ActivityPage, String>> {
        Box::pin(std::future::ready(Err("no chain service is configured".to_string())))
    }
    fn receipt(&self, _: String, _: Transfer, _: Option<std::net::IpAddr>) -> ChainFuture<ReceiptOutcome> {
        Box::pin(std::future::ready(ReceiptOutcome::NotMined("no chain service is configured".to_string())))
    }
    fn host_read(
        &self,
        network: CaipNetworkId,
        _: String,
        _: serde_json::Value,
        _: Option<std::net::IpAddr>,
    ) -> ChainFuture<WalletOutcome> {
        let message = format!("no chain service is configured for {network}");
        Box::pin(std::future::ready(WalletOutcome::Error { code: 4901, message }))
    }
    fn prepare_solana_send(&self, _: SolanaSend) -> ChainFuture<Result<PreparedSolanaTransfer, String>> {
        Box::pin(std::future::ready(Err("no chain service is configured".to_string())))
    }
    fn submit_solana_send(&self, _: CaipNetworkId, _: String, _: String, _: String) -> ChainFuture<Result<String, SolanaSubmitFailure>> {
        Box::pin(std::future::ready(Err(SolanaSubmitFailure::Node("no chain service is configured".to_string()))))
    }
}

/// The embedded service as sessions use it (docs/embedded-wallet.md): what an embedded login or
/// email change asks of it (`EmbeddedState::pending_effects`) is performed here by the actor, once
/// per pending effect, and each future resolves to the runtime command the session is fed back
/// (recorded as events, so a replay asks nothing again). Each must resolve in bounded time (the
/// session's own 120 s deadline ends the login regardless). Implementations never put an OTP, a
/// share or a key into a command.
pub trait EmbeddedEffects: Send + Sync + 'static {
    /// Mails a login code to `email` for the frame `frame_id`: `EmbeddedOtpSent` or `EmbeddedOtpSendFailed`.
    fn send_login_otp(&self, session: SessionId, frame_id: String, email: String) -> ChainFuture<Command>;
    /// Starts an OAuth 2.0 / OIDC login with `provider` whose result page posts to `host_origin`:
    /// `EmbeddedSocialRedirect` or `EmbeddedSocialFailed`.
    fn start_social(&self, session: SessionId, frame_id: String, provider: SocialProvider, host_origin: String) -> ChainFuture<Command>;
    /// Starts a Sign In With Farcaster login (a relay channel) for the frame `frame_id`:
    /// `EmbeddedSocialRedirect { provider: farcaster, url }` or `EmbeddedSocialFailed`.
    fn start_farcaster(&self, session: SessionId, frame_id: String) -> ChainFuture<Command>;
    /// Starts changing the logged-in user's email to `new_email`: `EmbeddedEmailUpdateStep` or
    /// `EmbeddedEmailUpdateFailed`.
    fn start_email_update(&self, session: SessionId, frame_id: String, new_email: String) -> ChainFuture<Command>;
    /// Ends the frame's login (its server share is not released again).
    fn sign_out(&self, session: SessionId, frame_id: String) -> ChainFuture<()>;
    /// The session is gone for good (retention deleted it): its frames end with it, rather than
    /// at their own expiry.
    fn forget_session(&self, _session: SessionId) {}
}

/// Without an embedded service, every request fails at once (sessions of such a gateway have no
/// frame origin, so they never ask).
pub(crate) struct NoEmbedded;

const NO_EMBEDDED: &str = "no embedded wallet service is configured";

impl EmbeddedEffects for NoEmbedded {
    fn send_login_otp(&self, _: SessionId, _: String, _: String) -> ChainFuture<Command> {
        Box::pin(std::future::ready(Command::EmbeddedOtpSendFailed { message: NO_EMBEDDED.into() }))
    }
    fn start_social(&self, _: SessionId, _: String, _: SocialProvider, _: String) -> ChainFuture<Command> {
        Box::pin(std::future::ready(Command::EmbeddedSocialFailed { message: NO_EMBEDDED.into(), from_frame: None }))
    }
    fn start_farcaster(&self, _: SessionId, _: String) -> ChainFuture<Command> {
        Box::pin(std::future::ready(Command::EmbeddedSocialFailed { message: NO_EMBEDDED.into(), from_frame: None }))
    }
    fn start_email_update(&self, _: SessionId, _: String, _: String) -> ChainFuture<Command> {
        Box::pin(std::future::ready(Command::EmbeddedEmailUpdateFailed { message: NO_EMBEDDED.into() }))
    }
    fn sign_out(&self, _: SessionId, _: String) -> ChainFuture<()> {
        Box::pin(std::future::ready(()))
    }
}

/// Whether clients' commands may be written now: what one client address may write to the event
/// log across all its sessions (the gateway's `[limits] client_log_bytes_per_hour`), and whether
/// the log's disk has room (`[limits] min_free_disk_bytes`). A session's own budget
/// (`max_log_bytes`) bounds one session; without a share per address, one address could fill
/// session after session at the rate it may create them (an outside review wrote 15 MB/s to the
/// disk from one address, and retention keeps what it wrote for 30 days).
pub trait ClientWriteShares: Send + Sync + 'static {
    /// Why a command of `client`'s (when the session knows it) may not be written now, if so: it
    /// is then refused before it is decided, writing nothing.
    fn refusal(&self, client: Option<std::net::IpAddr>) -> Option<WriteRefusal>;
    /// A session written to on `client`'s behalf wrote `bytes` to its log.
    fn wrote(&self, client: std::net::IpAddr, bytes: u64);
}

/// Why a client's command is not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteRefusal {
    /// Its address has written its share for now (`rate_limited`).
    ClientShare,
    /// The disk the log is on is nearly full (`storage_unavailable`).
    DiskLow,
}

/// No share per address and no disk watch (the registry's default; the gateway sets its own).
pub(crate) struct UnlimitedWrites;

impl ClientWriteShares for UnlimitedWrites {
    fn refusal(&self, _: Option<std::net::IpAddr>) -> Option<WriteRefusal> {
        None
    }
    fn wrote(&self, _: std::net::IpAddr, _: u64) {}
}

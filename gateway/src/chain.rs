//! The sessions' chain effects over the gateway's one [`ChainService`] (docs/chain.md, "Sessions and
//! the chain service"; decision 0907). The runtime (`vestibule-actors`) knows only the
//! `ChainEffects` trait and its own display-ready types; this adapter asks the chain service and
//! turns its answers into those types. Errors become the service's messages (spec §7, §8): the
//! session's decisions show the spec's toast or message whatever the cause.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use alloy::primitives::{Address, B256, Bytes, U256};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use prometheus_client::metrics::gauge::Gauge;
use vestibule_actors::machines::activity::{
    ActivityFetch, ActivityPage, ActivityTransaction, ActivityTransfer, NftInfo, OperationType, Sign, TransactionStatus,
};
use vestibule_actors::machines::balances::{BalanceFetch, BalancesSnapshot, TokenBalance};
use vestibule_actors::machines::requests::WalletOutcome;
use vestibule_actors::machines::send::{PreparedSolanaTransfer, SolanaSend, SolanaSubmitFailure, Transfer};
use vestibule_actors::model::caip::CaipNetworkId;
use vestibule_actors::runtime::{ChainEffects, ChainFuture};
use vestibule_actors::session::ReceiptOutcome;
use vestibule_chain::activity::{self as chain_activity, TransferAsset};
use vestibule_chain::amount::Amount;
use vestibule_chain::balances::AssetBalance;
use vestibule_chain::prices::AssetId;
use vestibule_chain::rpc::RpcFailure;
use vestibule_chain::slots::ClientTurns;
use vestibule_chain::solana::parse_solana_address;
use vestibule_chain::solana::rpc::{SignatureOutcome, TransferRequest};
use vestibule_chain::{
    AccountAddress, ActivityCursor, ChainError, ChainService, ExpectedTransaction, NetworkId, SolanaSendError, TransactionError,
};

/// How long one receipt effect waits for a sent transaction to be mined before reporting
/// `NotMined` (the session records that; the chain service polls meanwhile, less often as it
/// waits: 31 polls in 2 minutes).
pub const RECEIPT_WAIT: Duration = Duration::from_secs(120);

/// How many receipt (or Solana signature) waits one client address may have at once across its
/// sessions, by default (`[limits] receipt_waits_per_client`). A session keeps at most 8 sends
/// waiting; without a bound per address, one client answering its wallet's sends with made-up
/// hashes in many sessions would have the gateway poll the nodes for each of them. One more waits
/// its turn (asking no node meanwhile); it is not refused, since a refusal would be final for a
/// send of someone else behind the same address.
pub const DEFAULT_RECEIPT_WAITS_PER_CLIENT: usize = 32;

// The chain service refuses a host read's answer past its bound while it arrives; the bound must
// leave room for every answer the session takes (64 KiB of JSON) and its JSON-RPC envelope.
const _: () = assert!(
    vestibule_chain::service::DEFAULT_HOST_READ_MAX_RESPONSE_BYTES >= vestibule_actors::machines::host_requests::MAX_JSON_BYTES + 512
);

/// One receipt wait counted in the queued gauge while it exists (a cancelled wait too).
struct QueuedWait(Gauge);

impl QueuedWait {
    fn new(gauge: Gauge) -> Self {
        gauge.inc();
        Self(gauge)
    }
}

impl Drop for QueuedWait {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// `ChainEffects` over a [`ChainService`]: what `Registry::with_chain` is given in `server.rs`.
#[derive(Clone)]
pub struct ServiceEffects {
    service: ChainService,
    receipt_wait: Duration,
    /// The receipt waits in flight per client address, the rest waiting their turn in order (no
    /// bound in all: each session's are).
    receipt_waits: Arc<ClientTurns>,
    /// Receipt waits waiting for their client address's turn (`vestibule_receipt_waits_queued`).
    queued: Gauge,
}

impl ServiceEffects {
    pub fn new(service: ChainService) -> Self {
        Self {
            service,
            receipt_wait: RECEIPT_WAIT,
            receipt_waits: ClientTurns::new(DEFAULT_RECEIPT_WAITS_PER_CLIENT),
            queued: Gauge::default(),
        }
    }

    /// How many receipt waits one client address may have at once (at least 1); one more waits
    /// for one of them to end, counted in `queued`, asking no node meanwhile.
    pub fn with_receipt_waits_per_client(mut self, waits: usize, queued: Gauge) -> Self {
        self.receipt_waits = ClientTurns::new(waits);
        self.queued = queued;
        self
    }

    pub fn with_receipt_wait(mut self, wait: Duration) -> Self {
        self.receipt_wait = wait;
        self
    }

    pub fn service(&self) -> &ChainService {
        &self.service
    }

    pub fn into_arc(self) -> Arc<dyn ChainEffects> {
        Arc::new(self)
    }
}

/// The chain service's id for a session's network; `None` outside eip155 (never served).
fn network_id(network: &CaipNetworkId) -> Option<NetworkId> {
    network.to_string().parse().ok()
}

fn parse_address(text: &str) -> Option<Address> {
    text.parse().ok()
}

/// What an EVM transfer's mined transaction must be: to the address it was built to, from its
/// sender, with its value and calldata. The sender, value and calldata are empty in a transfer
/// recorded before the session kept them, and are then not compared.
fn expected_transaction(transfer: &Transfer) -> Result<ExpectedTransaction, String> {
    let to = parse_address(transfer.sent_to()).ok_or_else(|| format!("not an address: {}", transfer.sent_to()))?;
    let from = parse_address(&transfer.from);
    let call = match (transfer.value.as_str(), transfer.data.as_str()) {
        ("", "") => None,
        (value, data) => {
            let value: U256 = value.parse().map_err(|_| format!("not a value: {value}"))?;
            let data: Bytes = data.parse().map_err(|_| format!("not calldata: {data}"))?;
            Some((value, data))
        }
    };
    Ok(ExpectedTransaction { to: Some(to), from, call })
}

impl ChainEffects for ServiceEffects {
    fn served_networks(&self) -> Vec<CaipNetworkId> {
        self.service.networks().iter().filter_map(|n| n.to_string().parse().ok()).collect()
    }

    fn balances(&self, fetch: BalanceFetch) -> ChainFuture<Result<BalancesSnapshot, String>> {
        let service = self.service.clone();
        Box::pin(async move {
            let network = network_id(&fetch.network).ok_or_else(|| format!("Unsupported chain: {}", fetch.network))?;
            let address = if network.is_solana() {
                AccountAddress::Solana(
                    parse_solana_address(&fetch.address).ok_or_else(|| format!("not a Solana address: {}", fetch.address))?,
                )
            } else {
                AccountAddress::Evm(parse_address(&fetch.address).ok_or_else(|| format!("not an EVM address: {}", fetch.address))?)
            };
            let result = service.account_balances(network, address, fetch.fresh).await;
            let balances = result.map_err(|e| {
                tracing::warn!(%network, error = %e, cause = ?std::error::Error::source(&e).map(|s| s.to_string()), "balances unavailable");
                e.to_string()
            })?;
            Ok(BalancesSnapshot {
                network: fetch.network.clone(),
                address: fetch.address.clone(),
                native: token_balance(&balances.native),
                tokens: balances.tokens.iter().map(token_balance).collect(),
            })
        })
    }

    fn activity(&self, fetch: ActivityFetch) -> ChainFuture<Result<ActivityPage, String>> {
        let service = self.service.clone();
        Box::pin(async move {
            let network = network_id(&fetch.network).ok_or_else(|| format!("Unsupported chain: {}", fetch.network))?;
            let address = parse_address(&fetch.address);
            let cursor = fetch.cursor.clone().map(ActivityCursor);
            let page = service.activity(network, address, cursor.as_ref()).await.map_err(|e| {
                tracing::warn!(%network, error = %e, "activity unavailable");
                e.to_string()
            })?;
            Ok(ActivityPage {
                transactions: page.transactions.iter().map(|t| transaction(&fetch.network, t)).collect(),
                next: page.next.map(|c| c.0),
            })
        })
    }

    fn receipt(&self, hash: String, transfer: Transfer, client: Option<IpAddr>) -> ChainFuture<ReceiptOutcome> {
        let service = self.service.clone();
        let wait = self.receipt_wait;
        let (turns, queued) = (self.receipt_waits.clone(), self.queued.clone());
        Box::pin(async move {
            // Held while the wait runs, and dropped with it when the session stops waiting.
            let _turn = match turns.try_take(client) {
                Some(turn) => turn,
                None => {
                    tracing::debug!(network = %transfer.network, "a receipt wait waits its turn: the client has as many as it may");
                    let _queued = QueuedWait::new(queued);
                    turns.take(client).await
                }
            };
            let network = &transfer.network;
            let Some(id) = network_id(network) else {
                return ReceiptOutcome::NotMined(format!("Unsupported chain: {network}"));
            };
            if id.is_solana() {
                // A Solana send's "receipt": its signature's status (`getSignatureStatuses`).
                return match service.signature_status(id, &hash, wait).await {
                    Ok(SignatureOutcome::Confirmed { slot, error }) => {
                        ReceiptOutcome::Mined { success: error.is_none(), block_number: slot }
                    }
                    Ok(SignatureOutcome::NotYetConfirmed) => ReceiptOutcome::NotMined(format!("not confirmed within {} s", wait.as_secs())),
                    Err(e) => ReceiptOutcome::NotMined(e.to_string()),
                };
            }
            let Ok(hash) = hash.parse::<B256>() else {
                return ReceiptOutcome::NotMined(format!("not a transaction hash: {hash}"));
            };
            let expected = match expected_transaction(&transfer) {
                Ok(expected) => expected,
                Err(message) => return ReceiptOutcome::NotMined(message),
            };
            match service.receipt(id, hash, wait, &expected).await {
                Ok(vestibule_chain::ReceiptOutcome::Mined(r)) => ReceiptOutcome::Mined {
                    success: r.status == chain_activity::TransactionStatus::Confirmed,
                    block_number: r.block_number,
                },
                Ok(vestibule_chain::ReceiptOutcome::SentElsewhere { to }) => ReceiptOutcome::NotMined(format!(
                    "the transaction mined is not this transfer: it was sent to {}",
                    to.map_or_else(|| "no address (a deployment)".to_string(), |to| to.to_checksum(None))
                )),
                Ok(vestibule_chain::ReceiptOutcome::SentByAnother { from }) => ReceiptOutcome::NotMined(format!(
                    "the transaction mined is not this transfer: it was sent by {}",
                    from.map_or_else(|| "an unknown account".to_string(), |from| from.to_checksum(None))
                )),
                Ok(vestibule_chain::ReceiptOutcome::OtherCall { .. }) => {
                    ReceiptOutcome::NotMined("the transaction mined is not this transfer: it carries another amount or call".to_string())
                }
                Ok(vestibule_chain::ReceiptOutcome::NotYetMined) => {
                    ReceiptOutcome::NotMined(format!("no receipt within {} s", wait.as_secs()))
                }
                Err(e) => ReceiptOutcome::NotMined(e.to_string()),
            }
        })
    }

    fn prepare_solana_send(&self, send: SolanaSend) -> ChainFuture<Result<PreparedSolanaTransfer, String>> {
        Box::pin(Self::prepare_solana(self.service.clone(), send))
    }

    fn submit_solana_send(
        &self,
        network: CaipNetworkId,
        from: String,
        message: String,
        signed: String,
    ) -> ChainFuture<Result<String, SolanaSubmitFailure>> {
        Box::pin(Self::submit_solana(self.service.clone(), network, from, message, signed))
    }

    fn host_read(
        &self,
        network: CaipNetworkId,
        method: String,
        params: serde_json::Value,
        client: Option<IpAddr>,
    ) -> ChainFuture<WalletOutcome> {
        let service = self.service.clone();
        Box::pin(async move {
            let Some(id) = network_id(&network) else {
                return WalletOutcome::Error { code: 4901, message: format!("Unsupported chain: {network}") };
            };
            // `host_read`: an answer over the session's 64 KiB is refused while it arrives, and the
            // client holds at most its share of the calls at the nodes (`[limits]
            // host_chain_calls_per_client`).
            match service.host_read(id, &method, params, client).await {
                Ok(result) => WalletOutcome::Ok { result },
                Err(e) => {
                    tracing::debug!(%network, %method, error = %e, "a host's read failed");
                    host_error(&e)
                }
            }
        })
    }
}

impl ServiceEffects {
    async fn prepare_solana(service: ChainService, send: SolanaSend) -> Result<PreparedSolanaTransfer, String> {
        let network =
            network_id(&send.network).filter(NetworkId::is_solana).ok_or_else(|| format!("Unsupported chain: {}", send.network))?;
        let from = parse_solana_address(&send.from).ok_or("the sender is not a Solana address")?;
        let to = parse_solana_address(&send.receiver).ok_or("Invalid receiver address")?;
        let amount: u64 = send.amount.parse().map_err(|_| "Invalid amount".to_string())?;
        let request = match &send.mint {
            None => TransferRequest::Native { lamports: amount },
            Some(mint) => TransferRequest::Spl { mint: parse_solana_address(mint).ok_or("not an SPL mint")?, amount },
        };
        let prepared = service.prepare_solana_transfer(network, from, to, request).await.map_err(|e| {
            tracing::warn!(%network, error = %e, "a Solana transfer could not be built");
            e.to_string()
        })?;
        Ok(PreparedSolanaTransfer {
            message: BASE64.encode(&prepared.message),
            transaction: prepared.transaction_base64(),
            blockhash: prepared.blockhash,
            creates_receiver_account: prepared.creates_receiver_account,
        })
    }

    async fn submit_solana(
        service: ChainService,
        network: CaipNetworkId,
        from: String,
        message: String,
        signed: String,
    ) -> Result<String, SolanaSubmitFailure> {
        let refused = |reason: &str| SolanaSubmitFailure::Refused(reason.to_string());
        let network = network_id(&network)
            .filter(NetworkId::is_solana)
            .ok_or_else(|| SolanaSubmitFailure::Node(format!("Unsupported chain: {network}")))?;
        let payer = parse_solana_address(&from).ok_or_else(|| refused("the sender is not a Solana address"))?;
        let message = BASE64.decode(message).map_err(|_| refused("the transaction's message is not base64"))?;
        let signed = BASE64.decode(signed).map_err(|_| refused("the wallet's answer is not a signed transaction"))?;
        service.send_solana_transaction(network, &message, &signed, payer).await.map_err(|e| {
            tracing::warn!(%network, error = %e, "a Solana transaction was not sent");
            solana_send_error(&e)
        })
    }
}

/// Why a signed Solana transaction was not sent: the check's reason (the wallet's answer never
/// reached a node), or the catalogue's words (spec §8) for what the node said.
fn solana_send_error(error: &SolanaSendError) -> SolanaSubmitFailure {
    let node_said = match error {
        SolanaSendError::Signed(e) => return SolanaSubmitFailure::Refused(e.to_string()),
        SolanaSendError::Chain(ChainError::Rpc { message, data, .. }) => {
            let said = format!("{message} {}", data.as_deref().unwrap_or(""));
            // System transfer (ResultWithNegativeLamports) and SPL Token (InsufficientFunds) are
            // both custom error 1; a fee the account cannot pay is InsufficientFundsForFee.
            if said.contains("InsufficientFunds") || said.contains(r#"{"Custom":1}"#) || said.contains("insufficient") {
                TransactionError::InsufficientFunds
            } else {
                TransactionError::classify(None, message)
            }
        }
        SolanaSendError::Chain(e) => TransactionError::from_chain_error(e),
    };
    SolanaSubmitFailure::Node(node_said.to_string())
}

/// A chain error as a provider rejects with it (the host's, and the embedded wallet's frame):
/// the node's own JSON-RPC error as it answered (an `eth_call` revert keeps its code and message),
/// 4901 "chain disconnected" when no node of the network could be reached, 4200 for a method outside
/// the safe list, -32603 for an answer that came but could not be used (too large, not JSON-RPC).
pub fn provider_error(error: &ChainError) -> (i64, String) {
    let code = match error {
        ChainError::Rpc { code, message, .. } => return (*code, message.clone()),
        ChainError::Transport(RpcFailure::BadResponse(_)) => -32603,
        ChainError::UnsupportedNetwork(_) | ChainError::Transport(_) => 4901,
        ChainError::MethodNotAllowed { .. } => 4200,
        ChainError::Decode(_) => -32603,
    };
    (code, error.to_string())
}

fn host_error(error: &ChainError) -> WalletOutcome {
    let (code, message) = provider_error(error);
    WalletOutcome::Error { code, message }
}

/// A balance as the session shows it: the amount floored to 3 decimals, fiat to the cent and only
/// with a price.
fn token_balance(b: &AssetBalance) -> TokenBalance {
    TokenBalance {
        asset: b.asset.to_string(),
        address: match b.asset {
            AssetId::Native(_) => None,
            AssetId::Erc20(_, address) => Some(address.to_checksum(None)),
            AssetId::Spl(_, mint) => Some(mint.to_string()),
        },
        name: b.name.clone(),
        symbol: b.symbol.clone(),
        decimals: b.amount.decimals,
        raw: b.amount.raw.to_string(),
        quantity: b.amount.to_exact_string(),
        display: b.display_amount(),
        usd_price: b.usd_price.map(|p| p.to_string()),
        usd_value: b.display_usd_value(),
        icon_url: b.icon_url.clone(),
    }
}

fn transaction(network: &CaipNetworkId, t: &chain_activity::Transaction) -> ActivityTransaction {
    let (year, month) = t.year_month();
    ActivityTransaction {
        id: format!("{:#x}", t.hash),
        network: network.clone(),
        mined_at: t.mined_at,
        year_month: format!("{year:04}-{month:02}"),
        operation_type: operation(t.operation),
        status: match t.status {
            chain_activity::TransactionStatus::Confirmed => TransactionStatus::Confirmed,
            chain_activity::TransactionStatus::Failed => TransactionStatus::Failed,
        },
        sent_from: t.from.to_checksum(None),
        sent_to: t.to.map(|a| a.to_checksum(None)),
        transfers: t.transfers.iter().map(transfer).collect(),
    }
}

fn transfer(t: &chain_activity::Transfer) -> ActivityTransfer {
    let sign = t.sign().map(|s| match s {
        chain_activity::Sign::Plus => Sign::Plus,
        chain_activity::Sign::Minus => Sign::Minus,
    });
    let (symbol, quantity, nft) = match &t.asset {
        TransferAsset::Native { symbol, decimals } => {
            (Some(symbol.clone()), Amount { raw: t.amount, decimals: *decimals }.to_exact_string(), None)
        }
        TransferAsset::Erc20 { symbol, decimals, .. } => (
            symbol.clone(),
            // Without the contract's decimals, base units (never a guessed scale).
            decimals.map_or_else(|| t.amount.to_string(), |d| Amount { raw: t.amount, decimals: d }.to_exact_string()),
            None,
        ),
        TransferAsset::Nft { name, preview_url, is_spam, .. } => {
            (None, t.amount.to_string(), Some(NftInfo { name: name.clone(), preview_url: preview_url.clone(), is_spam: *is_spam }))
        }
    };
    ActivityTransfer { symbol, quantity, sign, nft }
}

fn operation(o: chain_activity::OperationType) -> OperationType {
    use chain_activity::OperationType as C;
    match o {
        C::Send => OperationType::Send,
        C::Receive => OperationType::Receive,
        C::Trade => OperationType::Trade,
        C::Approve => OperationType::Approve,
        C::Deploy => OperationType::Deploy,
        C::Execute => OperationType::Execute,
        C::Burn => OperationType::Burn,
        C::Deposit => OperationType::Deposit,
        C::Withdraw => OperationType::Withdraw,
        C::Borrow => OperationType::Borrow,
        C::Repay => OperationType::Repay,
        C::Claim => OperationType::Claim,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vestibule_chain::ChainConfig;

    #[test]
    fn without_networks_nothing_is_served() {
        let effects = ServiceEffects::new(ChainService::new(&ChainConfig::default()).unwrap());
        assert!(effects.served_networks().is_empty());
    }

    #[test]
    fn a_configured_network_is_served_under_its_caip2_id() {
        let config: ChainConfig =
            serde_json::from_value(serde_json::json!({ "networks": { "eip155:31337": { "rpc_urls": ["http://127.0.0.1:9"] } } })).unwrap();
        let effects = ServiceEffects::new(ChainService::new(&config).unwrap());
        assert_eq!(effects.served_networks(), vec![CaipNetworkId::eip155(31337)]);
    }
}

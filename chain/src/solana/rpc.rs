//! The Solana JSON-RPC reads and writes of the chain service, over the same policy stack as EVM
//! (alloy's `RpcClient` is generic JSON-RPC): balances in one batch (`getBalance`, then
//! `getTokenAccountsByOwner` with `jsonParsed` for each configured mint, and the mints not yet
//! known), what a send needs (`getLatestBlockhash`, whether the receiver's token account exists),
//! sending a signed transaction, and waiting for its confirmation (`getSignatureStatuses`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use alloy::primitives::U256;
use alloy::rpc::client::RpcClient;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};

use super::tx::{SolanaTransfer, transfer_message, unsigned_transaction};
use super::{SolAddress, SolHash, associated_token_address, is_token_program};
use crate::amount::Amount;
use crate::balances::{AccountAddress, AssetBalance, Balances};
use crate::config::NetworkSettings;
use crate::prices::AssetId;
use crate::{ChainError, NetworkId};

/// What a mint says about itself that a send and a balance need (kept for good).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MintInfo {
    pub decimals: u8,
    /// SPL Token or Token-2022.
    pub program: SolAddress,
}

/// Mints by (network, mint).
#[derive(Debug, Default)]
pub struct MintCache {
    known: Mutex<HashMap<(NetworkId, SolAddress), MintInfo>>,
}

impl MintCache {
    pub fn get(&self, network: NetworkId, mint: SolAddress) -> Option<MintInfo> {
        self.known.lock().unwrap().get(&(network, mint)).copied()
    }

    pub fn insert(&self, network: NetworkId, mint: SolAddress, info: MintInfo) {
        self.known.lock().unwrap().insert((network, mint), info);
    }
}

fn decode<T: serde::de::DeserializeOwned>(value: Value, what: &str) -> Result<T, ChainError> {
    serde_json::from_value(value).map_err(|e| ChainError::Decode(format!("{what}: {e}")))
}

#[derive(Deserialize)]
struct Context<T> {
    value: T,
}

/// The parts of a `jsonParsed` token account or mint read here.
#[derive(Deserialize)]
struct ParsedAccount {
    owner: String,
    data: Value,
}

fn parsed_info(data: &Value, kind: &str) -> Option<Value> {
    (data.pointer("/parsed/type")?.as_str()? == kind).then(|| data.pointer("/parsed/info").cloned()).flatten()
}

/// A mint's decimals and program from its `jsonParsed` account; `None` when it is not a mint.
fn mint_info(account: Option<ParsedAccount>) -> Option<MintInfo> {
    let account = account?;
    let program = super::parse_solana_address(&account.owner).filter(is_token_program)?;
    let info = parsed_info(&account.data, "mint")?;
    let decimals = u8::try_from(info.get("decimals")?.as_u64()?).ok()?;
    Some(MintInfo { decimals, program })
}

/// `owner`'s SOL and configured SPL balances on `network`, in ONE JSON-RPC batch. A configured mint
/// whose account is not a mint is left out; a batch that gets no answer is an error.
pub async fn fetch_balances(
    client: &RpcClient,
    network: &NetworkSettings,
    mints: &MintCache,
    owner: SolAddress,
) -> Result<Balances, ChainError> {
    let owner_text = owner.to_string();
    let commitment = json!({ "commitment": "confirmed" });
    let parsed = json!({ "encoding": "jsonParsed", "commitment": "confirmed" });
    let mut batch = client.new_batch();
    let lamports = batch.add_call::<_, Value>("getBalance", &json!([owner_text, commitment]))?;
    // By configured mint, not by token program: the owner is whoever the visitor names, and an
    // owner of many token accounts (of any mints) would make a whole program's list the answer.
    let mut by_mint = Vec::new();
    for token in &network.spl_tokens {
        let params = json!([owner_text, { "mint": token.mint.to_string() }, parsed]);
        by_mint.push(batch.add_call::<_, Value>("getTokenAccountsByOwner", &params)?);
    }
    let mut unknown = Vec::new();
    for token in &network.spl_tokens {
        if mints.get(network.id, token.mint).is_none() {
            let waiter = batch.add_call::<_, Value>("getAccountInfo", &json!([token.mint.to_string(), parsed]))?;
            unknown.push((token.mint, waiter));
        }
    }
    batch.send().await?;

    let lamports: Context<u64> = decode(lamports.await?, "getBalance")?;
    // Sums of every token account of the owner, by mint (an owner may hold several per mint).
    let mut held: HashMap<String, u128> = HashMap::new();
    for waiter in by_mint {
        let accounts: Context<Vec<Value>> = decode(waiter.await?, "getTokenAccountsByOwner")?;
        for entry in accounts.value {
            let Some(info) = entry.pointer("/account/data").and_then(|d| parsed_info(d, "account")) else { continue };
            let (Some(mint), Some(amount)) = (
                info.get("mint").and_then(Value::as_str),
                info.pointer("/tokenAmount/amount").and_then(Value::as_str).and_then(|a| a.parse::<u64>().ok()),
            ) else {
                continue;
            };
            *held.entry(mint.to_string()).or_default() += u128::from(amount);
        }
    }
    for (mint, waiter) in unknown {
        let account: Context<Option<ParsedAccount>> = decode(waiter.await?, "getAccountInfo")?;
        match mint_info(account.value) {
            Some(info) => mints.insert(network.id, mint, info),
            None => tracing::debug!(network = %network.id, %mint, "configured mint is not an SPL mint; left out of balances"),
        }
    }

    let native = AssetBalance {
        asset: AssetId::Native(network.id),
        symbol: network.native_currency.symbol.clone(),
        name: Some(network.native_currency.name.clone()),
        icon_url: None,
        amount: Amount::new(U256::from(lamports.value), network.native_currency.decimals),
        usd_price: None,
        usd_value: None,
    };
    let mut tokens = Vec::new();
    for token in &network.spl_tokens {
        let Some(info) = mints.get(network.id, token.mint) else { continue };
        let decimals = token.decimals.unwrap_or(info.decimals);
        if decimals == 0 {
            continue;
        }
        let raw = held.get(&token.mint.to_string()).copied().unwrap_or(0);
        tokens.push(AssetBalance {
            asset: AssetId::Spl(network.id, token.mint),
            symbol: token.symbol.clone(),
            name: token.name.clone(),
            icon_url: token.icon_url.clone(),
            amount: Amount::new(U256::from(raw), decimals),
            usd_price: None,
            usd_value: None,
        });
    }
    Ok(Balances { network: network.id, address: AccountAddress::Solana(owner), native, tokens })
}

/// A send's transaction as built by the server, to be signed by the wallet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedTransaction {
    /// The message's bytes (what the fee payer signs).
    pub message: Vec<u8>,
    /// The unsigned wire transaction (empty signature slots, then the message), for the wallet.
    pub transaction: Vec<u8>,
    pub blockhash: String,
    pub last_valid_block_height: u64,
    /// Whether the receiver's associated token account is created by this transaction.
    pub creates_receiver_account: bool,
}

impl PreparedTransaction {
    pub fn transaction_base64(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.transaction)
    }
}

/// What the send asks for: SOL in lamports, or base units of an SPL mint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransferRequest {
    Native { lamports: u64 },
    Spl { mint: SolAddress, amount: u64 },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LatestBlockhash {
    blockhash: String,
    last_valid_block_height: u64,
}

/// Builds the transaction of a send with a recent blockhash, in one batch: `getLatestBlockhash`,
/// and for SPL whether the receiver's associated token account exists (and the mint, when not yet
/// known: its decimals for `TransferChecked`, its program for the accounts).
pub async fn prepare_transfer(
    client: &RpcClient,
    network: NetworkId,
    mints: &MintCache,
    from: SolAddress,
    to: SolAddress,
    request: TransferRequest,
) -> Result<PreparedTransaction, ChainError> {
    let commitment = json!({ "commitment": "confirmed" });
    let mint = match request {
        TransferRequest::Spl { mint, .. } => Some(match mints.get(network, mint) {
            Some(info) => (mint, info),
            None => {
                let params = json!([mint.to_string(), { "encoding": "jsonParsed", "commitment": "confirmed" }]);
                let account: Context<Option<ParsedAccount>> = decode(client.request("getAccountInfo", params).await?, "getAccountInfo")?;
                let info = mint_info(account.value).ok_or_else(|| ChainError::Decode(format!("{mint} is not an SPL mint")))?;
                mints.insert(network, mint, info);
                (mint, info)
            }
        }),
        TransferRequest::Native { .. } => None,
    };
    let mut batch = client.new_batch();
    let latest = batch.add_call::<_, Value>("getLatestBlockhash", &json!([commitment]))?;
    let receiver_account = mint
        .map(|(mint, info)| {
            let ata = associated_token_address(&to, &mint, &info.program);
            batch.add_call::<_, Value>("getAccountInfo", &json!([ata.to_string(), { "encoding": "base64", "commitment": "confirmed" }]))
        })
        .transpose()?;
    batch.send().await?;
    let latest: Context<LatestBlockhash> = decode(latest.await?, "getLatestBlockhash")?;
    let creates_receiver_account = match receiver_account {
        Some(waiter) => decode::<Context<Option<Value>>>(waiter.await?, "getAccountInfo")?.value.is_none(),
        None => false,
    };
    let blockhash: SolHash = latest.value.blockhash.parse().map_err(|_| ChainError::Decode("getLatestBlockhash: not a hash".into()))?;
    let transfer = match (request, mint) {
        (TransferRequest::Native { lamports }, _) => SolanaTransfer::Native { lamports },
        (TransferRequest::Spl { amount, .. }, Some((mint, info))) => {
            SolanaTransfer::Spl { mint, program: info.program, decimals: info.decimals, amount }
        }
        (TransferRequest::Spl { .. }, None) => unreachable!("the mint was read above"),
    };
    let message = transfer_message(&from, &to, &transfer, creates_receiver_account, &blockhash);
    Ok(PreparedTransaction {
        message: message.serialize(),
        transaction: unsigned_transaction(&message),
        blockhash: latest.value.blockhash,
        last_valid_block_height: latest.value.last_valid_block_height,
        creates_receiver_account,
    })
}

/// Sends a signed wire transaction (`sendTransaction`, base64, preflight at `confirmed`); gives the
/// signature the node reports. A failed preflight is the node's JSON-RPC error.
pub async fn send_transaction(client: &RpcClient, signed: &[u8]) -> Result<String, ChainError> {
    let wire = base64::engine::general_purpose::STANDARD.encode(signed);
    let params = json!([wire, { "encoding": "base64", "preflightCommitment": "confirmed" }]);
    decode(client.request("sendTransaction", params).await?, "sendTransaction")
}

/// What the node says of a signature when the wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureOutcome {
    /// Confirmed (or finalized) in `slot`; `error` when the transaction failed (its fee was paid).
    Confirmed {
        slot: u64,
        error: Option<String>,
    },
    NotYetConfirmed,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SignatureStatus {
    slot: u64,
    err: Option<Value>,
    confirmation_status: Option<String>,
}

/// Polls `getSignatureStatuses` every `poll_interval` until `signature` is confirmed or `max_wait`
/// has passed. A failed poll is tried again at the next one; its error is returned only if the
/// last poll failed too.
pub async fn wait_for_signature(
    client: &RpcClient,
    signature: &str,
    max_wait: Duration,
    poll_interval: Duration,
) -> Result<SignatureOutcome, ChainError> {
    let deadline = tokio::time::Instant::now() + max_wait;
    let params = json!([[signature], { "searchTransactionHistory": true }]);
    loop {
        let last = match client.request::<_, Value>("getSignatureStatuses", params.clone()).await {
            Ok(value) => {
                let statuses: Context<Vec<Option<SignatureStatus>>> = decode(value, "getSignatureStatuses")?;
                match statuses.value.into_iter().next().flatten() {
                    Some(s) if matches!(s.confirmation_status.as_deref(), Some("confirmed" | "finalized")) => {
                        return Ok(SignatureOutcome::Confirmed { slot: s.slot, error: s.err.map(|e| e.to_string()) });
                    }
                    _ => Ok(SignatureOutcome::NotYetConfirmed),
                }
            }
            Err(error) => Err(ChainError::from(error)),
        };
        if tokio::time::Instant::now() + poll_interval > deadline {
            return last;
        }
        tokio::time::sleep(poll_interval).await;
    }
}

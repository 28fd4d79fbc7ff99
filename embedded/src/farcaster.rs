//! Sign In With Farcaster (FIP-11) over a relay: the service opens a relay channel with a fresh
//! nonce (the visitor scans its URL with a Farcaster app), polls the channel until the app signed,
//! then checks the signed EIP-4361 message (actors' strict parser: domain, nonce, chain 10, times)
//! and that its signer is the custody address of the fid, read on chain from the IdRegistry, or one
//! of its auth addresses in the KeyRegistry (when one is configured).
//!
//! The pending channels are pure (time in); the relay and the chain are behind [`RelayClient`] and
//! [`CustodyLookup`] so tests run without either.

use std::collections::HashMap;
use std::time::Duration;

use alloy_primitives::{Address, U256};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use vestibule_actors::siwx::{Account, VerifyPolicy, verify_eoa};

use crate::config::FarcasterConfig;

/// A pending channel lives this long (the relay's message expires then too).
pub const PENDING_TTL_MS: u64 = 10 * 60 * 1000;
/// The catalogue's error for every failure of a Farcaster login.
pub const FARCASTER_FAILED: &str = "Failed to connect to farcaster";
/// Relay and RPC answers are small JSON documents.
const MAX_ANSWER: usize = 64 * 1024;
/// FIP-11 messages are signed for OP mainnet.
const FARCASTER_CHAIN: &str = "eip155:10";
/// The longest channel URL shown to the visitor (as a link and a QR code). The relay's are under
/// a hundred characters.
pub const MAX_CHANNEL_URL: usize = 512;
/// The longest channel token sent back to the relay.
pub const MAX_CHANNEL_TOKEN: usize = 256;
/// The longest relay username shown; Farcaster's fnames are at most 16 characters, ENS names longer.
pub const MAX_FARCASTER_USERNAME: usize = 64;

#[derive(Debug, thiserror::Error)]
pub enum FarcasterError {
    #[error("Farcaster login is not configured")]
    NotConfigured,
    #[error("too many Farcaster logins are pending")]
    Full,
    #[error("no pending Farcaster login for this frame")]
    NoPending,
    #[error("the relay failed: {0}")]
    Relay(String),
    #[error("the relay's answer is unusable: {0}")]
    BadAnswer(String),
    #[error("the Farcaster app did not sign in time")]
    TimedOut,
    #[error("the signed message is invalid: {0}")]
    Message(String),
    #[error("the signer is neither the fid's custody address nor one of its auth addresses")]
    NotCustody,
    #[error("the custody lookup failed: {0}")]
    Chain(String),
}

/// `POST /v1/channel`'s answer. The relay is not trusted with what the visitor is shown:
/// [`check_channel`] holds its URL and token to what can be shown and sent back.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Channel {
    pub channel_token: String,
    pub url: String,
    pub nonce: String,
}

/// `GET /v1/channel/status`'s answer (the fields this service reads: the relay's `displayName`,
/// `pfpUrl`, `bio` and `custody` are not read, so never shown; the username is checked by
/// [`check_completed`]).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ChannelStatus {
    pub state: String,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub signature: Option<String>,
    #[serde(default)]
    pub fid: Option<u64>,
    #[serde(default)]
    pub username: Option<String>,
}

/// `POST /v1/channel`'s body.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ChannelRequest {
    pub siwe_uri: String,
    pub domain: String,
    pub nonce: String,
    pub not_before: String,
    pub expiration_time: String,
}

#[async_trait::async_trait]
pub trait RelayClient: Send + Sync + 'static {
    /// Opens a channel. What it answers reaches the visitor: the service holds it to
    /// [`check_channel`] whatever the implementation.
    async fn create_channel(&self, request: &ChannelRequest) -> Result<Channel, FarcasterError>;
    async fn status(&self, channel_token: &str) -> Result<ChannelStatus, FarcasterError>;
}

/// Reads who may sign in for a fid: its custody address (the IdRegistry's `custodyOf(uint256)`)
/// and, when a KeyRegistry is configured, its auth addresses.
#[async_trait::async_trait]
pub trait CustodyLookup: Send + Sync + 'static {
    async fn custody_of(&self, fid: u64) -> Result<Address, FarcasterError>;
    /// Whether `address` is an auth address of `fid` (a key of type 2, "auth", in the state added,
    /// in the KeyRegistry). Without a KeyRegistry, none is.
    async fn is_auth_address(&self, _fid: u64, _address: Address) -> Result<bool, FarcasterError> {
        Ok(false)
    }
}

/// The KeyRegistry's key type of auth addresses, and the state of a key that is in force.
pub const AUTH_KEY_TYPE: u64 = 2;
pub const KEY_STATE_ADDED: u64 = 1;

/// The call data of `keyDataOf(fid, abi.encodePacked(address))` (the KeyRegistry's record of a
/// key: its state and type).
pub fn key_data_of_call(fid: u64, address: Address) -> String {
    let selector = &alloy_primitives::keccak256(b"keyDataOf(uint256,bytes)")[..4];
    let mut data = selector.to_vec();
    data.extend_from_slice(&U256::from(fid).to_be_bytes::<32>());
    // The bytes argument: its offset (two words in), its length, its 20 bytes padded to a word.
    data.extend_from_slice(&U256::from(64u64).to_be_bytes::<32>());
    data.extend_from_slice(&U256::from(20u64).to_be_bytes::<32>());
    let mut key = address.as_slice().to_vec();
    key.resize(32, 0);
    data.extend_from_slice(&key);
    format!("0x{}", hex::encode(data))
}

/// `(state, keyType)` from `keyDataOf`'s answer (two words).
pub fn parse_key_data(result: &str) -> Result<(u64, u64), FarcasterError> {
    let bytes = hex::decode(result.trim_start_matches("0x")).map_err(|_| FarcasterError::Chain("the key data is not hex".into()))?;
    if bytes.len() != 64 {
        return Err(FarcasterError::Chain("the key data is not two words".into()));
    }
    let word = |w: &[u8]| -> Result<u64, FarcasterError> {
        if w[..24].iter().any(|b| *b != 0) {
            return Err(FarcasterError::Chain("the key data is out of range".into()));
        }
        Ok(u64::from_be_bytes(w[24..].try_into().expect("8 bytes")))
    };
    Ok((word(&bytes[..32])?, word(&bytes[32..])?))
}

async fn read_capped(response: reqwest::Response) -> Result<(u16, Vec<u8>), FarcasterError> {
    let status = response.status().as_u16();
    let mut response = response;
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|error| FarcasterError::Relay(error.to_string()))? {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(FarcasterError::BadAnswer("answer too large".into()));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((status, body))
}

/// The relay over HTTP.
pub struct HttpRelay {
    pub http: reqwest::Client,
    pub relay_url: String,
}

#[async_trait::async_trait]
impl RelayClient for HttpRelay {
    async fn create_channel(&self, request: &ChannelRequest) -> Result<Channel, FarcasterError> {
        let url = format!("{}/v1/channel", self.relay_url.trim_end_matches('/'));
        let response = self.http.post(url).json(request).send().await.map_err(|error| FarcasterError::Relay(error.to_string()))?;
        let (status, body) = read_capped(response).await?;
        if !(200..300).contains(&status) {
            return Err(FarcasterError::Relay(format!("HTTP {status}")));
        }
        serde_json::from_slice(&body).map_err(|error| FarcasterError::BadAnswer(error.to_string()))
    }

    async fn status(&self, channel_token: &str) -> Result<ChannelStatus, FarcasterError> {
        let url = format!("{}/v1/channel/status", self.relay_url.trim_end_matches('/'));
        let response =
            self.http.get(url).bearer_auth(channel_token).send().await.map_err(|error| FarcasterError::Relay(error.to_string()))?;
        // The relay answers 202 while pending and 200 once completed.
        let (status, body) = read_capped(response).await?;
        if !(200..300).contains(&status) {
            return Err(FarcasterError::Relay(format!("HTTP {status}")));
        }
        serde_json::from_slice(&body).map_err(|error| FarcasterError::BadAnswer(error.to_string()))
    }
}

/// `custodyOf(uint256)` by a raw `eth_call` to the IdRegistry (and `keyDataOf` to the KeyRegistry).
pub struct RpcCustody {
    pub http: reqwest::Client,
    pub rpc_url: String,
    pub id_registry: Address,
    pub key_registry: Option<Address>,
}

impl RpcCustody {
    /// One `eth_call`'s hex result.
    async fn call(&self, to: Address, data: String) -> Result<String, FarcasterError> {
        let request = serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "eth_call",
            "params": [{ "to": to.to_string(), "data": data }, "latest"],
        });
        let response =
            self.http.post(&self.rpc_url).json(&request).send().await.map_err(|error| FarcasterError::Chain(error.to_string()))?;
        let (status, body) = read_capped(response).await?;
        if !(200..300).contains(&status) {
            return Err(FarcasterError::Chain(format!("HTTP {status}")));
        }
        let answer: serde_json::Value = serde_json::from_slice(&body).map_err(|error| FarcasterError::Chain(error.to_string()))?;
        answer
            .get("result")
            .and_then(|r| r.as_str())
            .map(str::to_string)
            .ok_or_else(|| FarcasterError::Chain(format!("no result: {}", answer.get("error").cloned().unwrap_or_default())))
    }
}

/// The call data of `custodyOf(fid)`.
pub fn custody_of_call(fid: u64) -> String {
    let selector = &alloy_primitives::keccak256(b"custodyOf(uint256)")[..4];
    let mut data = selector.to_vec();
    data.extend_from_slice(&U256::from(fid).to_be_bytes::<32>());
    format!("0x{}", hex::encode(data))
}

#[async_trait::async_trait]
impl CustodyLookup for RpcCustody {
    async fn custody_of(&self, fid: u64) -> Result<Address, FarcasterError> {
        let result = self.call(self.id_registry, custody_of_call(fid)).await?;
        let bytes = hex::decode(result.trim_start_matches("0x")).map_err(|_| FarcasterError::Chain("the result is not hex".into()))?;
        if bytes.len() != 32 || bytes[..12].iter().any(|b| *b != 0) {
            return Err(FarcasterError::Chain("the result is not an address".into()));
        }
        let custody = Address::from_slice(&bytes[12..]);
        if custody == Address::ZERO {
            return Err(FarcasterError::Chain("the fid has no custody address".into()));
        }
        Ok(custody)
    }

    async fn is_auth_address(&self, fid: u64, address: Address) -> Result<bool, FarcasterError> {
        let Some(key_registry) = self.key_registry else { return Ok(false) };
        let result = self.call(key_registry, key_data_of_call(fid, address)).await?;
        let (state, key_type) = parse_key_data(&result)?;
        Ok(state == KEY_STATE_ADDED && key_type == AUTH_KEY_TYPE)
    }
}

/// Refuses a relay's channel whose URL could not safely be shown to the visitor as a link and a QR
/// code: not `https:`, over [`MAX_CHANNEL_URL`] characters, anything but visible ASCII (no white
/// space or control character, which a URL parser would silently drop), or with a user name or
/// password in it (`https://warpcast.com@evil.example/` reads as warpcast.com), or not written as
/// a browser would read it (the parser's own serialization). Its token must be
/// 1 to [`MAX_CHANNEL_TOKEN`] visible ASCII characters (it goes back to the relay in a header).
pub fn check_channel(channel: &Channel) -> Result<(), FarcasterError> {
    let bad = |why: &str| FarcasterError::BadAnswer(why.to_owned());
    let visible = |text: &str| text.bytes().all(|b| b.is_ascii_graphic());
    if channel.url.is_empty() || channel.url.len() > MAX_CHANNEL_URL || !visible(&channel.url) {
        return Err(bad("the channel URL is empty, too long or not visible ASCII"));
    }
    let url = url::Url::parse(&channel.url).map_err(|_| bad("the channel URL is not a URL"))?;
    if url.scheme() != "https" || url.host_str().is_none_or(str::is_empty) {
        return Err(bad("the channel URL is not https"));
    }
    // What is shown is what a browser opens: nothing the parser would rewrite (`https:///x`,
    // `https:\\x`, an upper-case scheme or host, dot segments).
    if url.as_str() != channel.url {
        return Err(bad("the channel URL is not in its canonical form"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("the channel URL carries credentials"));
    }
    if channel.channel_token.is_empty() || channel.channel_token.len() > MAX_CHANNEL_TOKEN || !visible(&channel.channel_token) {
        return Err(bad("the channel token is empty, too long or not visible ASCII"));
    }
    Ok(())
}

/// A channel the service opened for a frame.
#[derive(Clone, Debug)]
pub struct PendingFarcaster {
    pub session_id: String,
    pub channel_token: String,
    pub nonce: String,
    pub domain: String,
    pub siwe_uri: String,
    pub expires_ms: u64,
}

/// The pending channels, one per frame, bounded.
pub struct PendingChannels {
    by_frame: HashMap<String, PendingFarcaster>,
    capacity: usize,
}

impl PendingChannels {
    pub fn new(capacity: usize) -> Self {
        Self { by_frame: HashMap::new(), capacity }
    }

    /// Room for one more channel (expired ones are dropped first); a frame's new channel replaces its old.
    pub fn has_room(&mut self, frame_id: &str, now_ms: u64) -> bool {
        self.by_frame.retain(|_, pending| pending.expires_ms > now_ms);
        self.by_frame.contains_key(frame_id) || self.by_frame.len() < self.capacity
    }

    pub fn insert(&mut self, frame_id: &str, pending: PendingFarcaster) {
        self.by_frame.insert(frame_id.to_owned(), pending);
    }

    /// Takes the frame's live channel (once).
    pub fn take(&mut self, frame_id: &str, session_id: &str, now_ms: u64) -> Result<PendingFarcaster, FarcasterError> {
        match self.by_frame.remove(frame_id) {
            Some(pending) if pending.session_id == session_id && pending.expires_ms > now_ms => Ok(pending),
            _ => Err(FarcasterError::NoPending),
        }
    }

    pub fn forget(&mut self, frame_id: &str) {
        self.by_frame.remove(frame_id);
    }
}

pub fn rfc3339(ms: u64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// The channel request for a new login.
pub fn channel_request(config: &FarcasterConfig, frame_origin: &str, nonce: &str, now_ms: u64) -> ChannelRequest {
    ChannelRequest {
        siwe_uri: config.siwe_uri(frame_origin),
        domain: config.domain(frame_origin),
        nonce: nonce.to_owned(),
        not_before: rfc3339(now_ms),
        expiration_time: rfc3339(now_ms + PENDING_TTL_MS),
    }
}

/// Who signed in: the fid and the address that signed (still to be checked against custody).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedIn {
    pub fid: u64,
    pub signer: Address,
    pub username: Option<String>,
}

/// Checks a completed channel's message: EIP-4361, the channel's domain and nonce, chain 10, not
/// expired (at `now_ms`), a `farcaster://fid/<fid>` resource agreeing with the relay's fid, and an
/// EIP-191 signature by the message's address. The relay's username is not signed: it is kept
/// only when it can be shown (at most [`MAX_FARCASTER_USERNAME`] characters, none of them a
/// control or bidirectional character: `social::display_text`), else dropped and the login stands
/// without one (the signature, not the name, proves the fid).
pub fn check_completed(status: &ChannelStatus, pending: &PendingFarcaster, now_ms: u64) -> Result<SignedIn, FarcasterError> {
    let bad = |why: &str| FarcasterError::Message(why.to_owned());
    let message = status.message.as_deref().ok_or_else(|| bad("no message"))?;
    let signature = status.signature.as_deref().ok_or_else(|| bad("no signature"))?;
    let signature = hex::decode(signature.trim_start_matches("0x")).map_err(|_| bad("the signature is not hex"))?;
    let now = OffsetDateTime::from_unix_timestamp_nanos(now_ms as i128 * 1_000_000).map_err(|_| bad("clock out of range"))?;
    let mut policy = VerifyPolicy::new(now);
    policy.expected_domain = Some(pending.domain.clone());
    policy.expected_nonce = Some(pending.nonce.clone());
    policy.allowed_chains = Some(vec![FARCASTER_CHAIN.to_owned()]);
    let verified = verify_eoa(message, &signature, &policy).map_err(|error| FarcasterError::Message(error.to_string()))?;
    let Account::Eip155 { address, .. } = verified.message.account else {
        return Err(bad("not an Ethereum account"));
    };
    if verified.message.uri.to_string() != pending.siwe_uri {
        return Err(bad("the URI is not the one the channel asked for"));
    }
    let fids: Vec<u64> = verified
        .message
        .resources
        .iter()
        .flatten()
        .filter_map(|resource| resource.to_string().strip_prefix("farcaster://fid/").map(str::to_owned))
        .map(|fid| fid.parse::<u64>().map_err(|_| bad("the fid resource is not a number")))
        .collect::<Result<_, _>>()?;
    let [fid] = fids[..] else {
        return Err(bad("exactly one farcaster://fid/ resource is required"));
    };
    if status.fid.is_some_and(|relay_fid| relay_fid != fid) {
        return Err(bad("the relay's fid is not the message's"));
    }
    let username = status.username.as_deref().and_then(|name| crate::social::display_text(name, MAX_FARCASTER_USERNAME));
    Ok(SignedIn { fid, signer: address, username })
}

/// Polls the channel every `interval` until it completes, at most `max_polls` times and no new
/// poll once `give_up_after` has passed since the first. The count keeps tests independent of the
/// machine's speed; the time bounds a relay that answers slowly (each poll may take the HTTP
/// client's 10 s), which would otherwise hold the frame's request for `max_polls` slow answers:
/// about 20 minutes with the defaults.
pub async fn poll_until_completed(
    relay: &dyn RelayClient,
    channel_token: &str,
    interval: Duration,
    max_polls: u32,
    give_up_after: Duration,
) -> Result<ChannelStatus, FarcasterError> {
    let started = tokio::time::Instant::now();
    for attempt in 0..max_polls {
        if attempt > 0 {
            if started.elapsed() >= give_up_after {
                break;
            }
            tokio::time::sleep(interval).await;
        }
        let status = relay.status(channel_token).await?;
        if status.state == "completed" {
            return Ok(status);
        }
    }
    Err(FarcasterError::TimedOut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_data_call_encodes_the_fid_and_the_packed_address_and_its_answer_reads_back() {
        let address: Address = "0x00000000000000000000000000000000000000aa".parse().unwrap();
        let data = key_data_of_call(7, address);
        let bytes = hex::decode(&data[2..]).unwrap();
        assert_eq!(&bytes[..4], &alloy_primitives::keccak256(b"keyDataOf(uint256,bytes)")[..4]);
        assert_eq!(bytes.len(), 4 + 4 * 32);
        assert_eq!(bytes[4 + 31], 7, "the fid");
        assert_eq!(bytes[4 + 63], 64, "the offset of the bytes");
        assert_eq!(bytes[4 + 95], 20, "20 bytes of key");
        assert_eq!(&bytes[4 + 96..4 + 116], address.as_slice());
        assert!(bytes[4 + 116..].iter().all(|b| *b == 0), "padded");
        let answer = format!("0x{}{}", format!("{:064x}", 1), format!("{:064x}", 2));
        assert_eq!(parse_key_data(&answer).unwrap(), (KEY_STATE_ADDED, AUTH_KEY_TYPE));
        assert!(parse_key_data("0x01").is_err());
    }

    #[test]
    fn given_relay_channels_when_checked_then_only_https_urls_without_credentials_that_can_be_shown_pass() {
        let channel = |url: &str| Channel { channel_token: "210f1718-427e".into(), url: url.into(), nonce: "n".into() };
        // Given the relay's usual answer, then it passes
        assert!(check_channel(&channel("https://warpcast.com/~/siwf?channelToken=210f1718-427e")).is_ok());
        assert!(check_channel(&channel(&format!("https://warpcast.com/?t={}", "a".repeat(MAX_CHANNEL_URL - 24)))).is_ok());
        // Given URLs that are not https, carry credentials, hide characters or are too long, then they are refused
        for url in [
            "http://warpcast.com/~/siwf?channelToken=t",
            "javascript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "farcaster://connect?channelToken=t",
            "https://warpcast.com@evil.example/~/siwf",
            "https://user:pass@warpcast.com/~/siwf",
            "https://warpcast.com/~/siwf?channelToken=t\nhttps://evil.example",
            " https://warpcast.com/~/siwf",
            "https://warp\tcast.com/",
            "https://wärpcast.com/",
            "https:///~/siwf",
            "https://warpcast.com\\@evil.example/",
            "HTTPS://warpcast.com/~/siwf",
            "https://warpcast.com/a/../~/siwf",
            "",
            &format!("https://warpcast.com/?t={}", "a".repeat(MAX_CHANNEL_URL - 23)),
        ] {
            assert!(matches!(check_channel(&channel(url)), Err(FarcasterError::BadAnswer(_))), "{url:?}");
        }
        // And tokens that are empty, too long or hold a line break are refused
        for token in ["".to_owned(), "t".repeat(MAX_CHANNEL_TOKEN + 1), "t\r\nx: y".to_owned()] {
            let channel = Channel { channel_token: token.clone(), url: "https://warpcast.com/~/siwf".into(), nonce: "n".into() };
            assert!(check_channel(&channel).is_err(), "{token:?}");
        }
    }

    #[test]
    fn the_custody_call_is_the_selector_and_the_fid_as_a_word() {
        let data = custody_of_call(3);
        assert_eq!(data.len(), 2 + 8 + 64);
        // keccak256("custodyOf(uint256)")[..4]
        assert!(data.starts_with("0x65269e47"), "{data}");
        assert!(data.ends_with("03"));
    }

    #[test]
    fn a_frame_has_one_pending_channel_taken_once_by_its_session_while_alive() {
        let mut pending = PendingChannels::new(1);
        let channel = |session: &str| PendingFarcaster {
            session_id: session.into(),
            channel_token: "t".into(),
            nonce: "n".into(),
            domain: "d".into(),
            siwe_uri: "u".into(),
            expires_ms: 100,
        };
        assert!(pending.has_room("f1", 0));
        pending.insert("f1", channel("s1"));
        assert!(pending.has_room("f1", 0), "a frame's new channel replaces its old");
        assert!(!pending.has_room("f2", 0), "bounded");
        assert!(pending.has_room("f2", 100), "expired channels make room");
        pending.insert("f1", channel("s1"));
        assert!(matches!(pending.take("f1", "s2", 1), Err(FarcasterError::NoPending)));
        pending.insert("f1", channel("s1"));
        assert!(matches!(pending.take("f1", "s1", 100), Err(FarcasterError::NoPending)));
        pending.insert("f1", channel("s1"));
        assert!(pending.take("f1", "s1", 99).is_ok());
        assert!(pending.take("f1", "s1", 99).is_err());
    }
}

//! The configured network checked against each endpoint (decisions 0914 and 0915): when the
//! service starts, each endpoint is asked in the background which chain it serves: `eth_chainId`
//! for an eip155 network, `getGenesisHash` for a Solana one (whose CAIP-2 reference is the first 32
//! characters of the cluster's genesis hash). One that answers another chain (or cluster) is logged
//! as an ERROR (network, endpoint without its path, the reference it serves and the expected one)
//! and is not used for calls (the policy moves on to the next endpoint at once) until it answers
//! the network's, which is asked again every [`RECHECK_EVERY`]. An endpoint that has not answered
//! yet (down, slow, or refusing the question with a JSON-RPC error) is used as usual: a node that
//! is down does not hold up the gateway, and its calls fail as they would anyway.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use alloy::primitives::U256;
use alloy::rpc::json_rpc::{Id, Request, RequestPacket, ResponsePacket, ResponsePayload};
use serde_json::value::RawValue;
use tower::ServiceExt;

use super::http::HttpEndpoint;
use crate::NetworkId;
use crate::network::{ChainKind, SOLANA_REFERENCE_LEN};
use crate::solana::SolHash;

/// How often an endpoint that serves another chain, or has not answered, is asked again.
pub const RECHECK_EVERY: Duration = Duration::from_secs(60);

/// What is known of the chain an endpoint serves; shared by every client over the endpoint.
#[derive(Debug)]
pub struct ChainIdGate {
    /// The network the endpoint is configured for: what it must serve.
    expected: NetworkId,
    /// The reference of the chain the endpoint answered (or its unreadable answer), when it is not
    /// the expected one.
    wrong: Mutex<Option<String>>,
}

impl ChainIdGate {
    pub fn new(expected: NetworkId) -> Arc<Self> {
        Arc::new(Self { expected, wrong: Mutex::new(None) })
    }

    /// Why the endpoint must not be used, if it answered another chain: "the endpoint serves chain
    /// 1, not 5", "the endpoint serves cluster 5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp, not
    /// EtWTRABZaYq6iMfeYKouRu166VU2xqa1".
    pub fn refusal(&self) -> Option<String> {
        let wrong = self.wrong.lock().unwrap();
        wrong
            .as_ref()
            .map(|actual| format!("the endpoint serves {} {actual}, not {}", chain_word(&self.expected), self.expected.reference()))
    }

    fn set(&self, wrong: Option<String>) {
        *self.wrong.lock().unwrap() = wrong;
    }
}

/// What a network's chain is called in messages.
fn chain_word(network: &NetworkId) -> &'static str {
    match network.kind() {
        ChainKind::Evm => "chain",
        ChainKind::Solana => "cluster",
    }
}

/// The JSON-RPC method (without params) whose answer tells which chain an endpoint of `network`
/// serves.
pub fn question(network: &NetworkId) -> &'static str {
    match network.kind() {
        ChainKind::Evm => "eth_chainId",
        ChainKind::Solana => "getGenesisHash",
    }
}

/// The CAIP-2 reference named by an answer to [`question`] of `network`'s kind: an eip155 chain id
/// in decimal, a Solana genesis hash's first 32 characters. `Err` with the answer's text (at most
/// 80 characters of its JSON) when it names no chain (on Solana: is not a hash, 32 bytes in
/// base58).
pub fn answered_reference(network: &NetworkId, answer: &RawValue) -> Result<String, String> {
    let unreadable = || answer.get().chars().take(80).collect::<String>();
    match network.kind() {
        ChainKind::Evm => serde_json::from_str::<U256>(answer.get()).map(|id| id.to_string()).map_err(|_| unreadable()),
        // A hash: 32 bytes in base58 (32 to 44 characters).
        ChainKind::Solana => serde_json::from_str::<String>(answer.get())
            .ok()
            .filter(|hash| hash.parse::<SolHash>().is_ok())
            .and_then(|hash| hash.get(..SOLANA_REFERENCE_LEN).map(str::to_owned))
            .ok_or_else(unreadable),
    }
}

/// What an endpoint answered to `network`'s [`question`]: the reference of the chain it serves,
/// `Err` with its text when it names no chain, `None` without an answer (no connection, a timeout,
/// a JSON-RPC error).
async fn ask_reference(endpoint: &HttpEndpoint, network: &NetworkId, timeout: Duration) -> Option<Result<String, String>> {
    let request = Request::new(question(network), Id::Number(0), ()).serialize().ok()?;
    let answer = tokio::time::timeout(timeout, endpoint.clone().oneshot(RequestPacket::Single(request))).await.ok()?.ok()?;
    let ResponsePacket::Single(response) = answer else { return None };
    match response.payload {
        ResponsePayload::Success(raw) => Some(answered_reference(network, &raw)),
        ResponsePayload::Failure(_) => None,
    }
}

/// Watches one endpoint of `network` until it answers the network's chain id (EVM) or genesis hash
/// (Solana). Ends then, or when the gate is gone (the service was dropped).
pub async fn watch(network: NetworkId, endpoint: HttpEndpoint, gate: Weak<ChainIdGate>, timeout: Duration) {
    let expected = network.reference();
    loop {
        let answer = ask_reference(&endpoint, &network, timeout).await;
        let Some(gate) = gate.upgrade() else { return };
        match answer {
            Some(Ok(actual)) if actual == expected => {
                if gate.refusal().is_some() {
                    tracing::info!(%network, endpoint = endpoint.endpoint().redacted(), "the RPC endpoint now serves the network's chain; it is used again");
                }
                gate.set(None);
                return;
            }
            Some(Ok(actual) | Err(actual)) => report(&network, &endpoint, &gate, actual),
            None => tracing::debug!(
                %network,
                endpoint = endpoint.endpoint().redacted(),
                "no answer to {}; asked again later",
                question(&network)
            ),
        }
        drop(gate);
        tokio::time::sleep(RECHECK_EVERY).await;
    }
}

fn report(network: &NetworkId, endpoint: &HttpEndpoint, gate: &ChainIdGate, actual: String) {
    if gate.refusal().is_none() {
        let expected = network.reference();
        tracing::error!(
            %network,
            endpoint = endpoint.endpoint().redacted(),
            serves = %actual,
            expected = %expected,
            "the RPC endpoint serves another chain than the network's; it is not used until it serves {} {expected}",
            chain_word(network),
        );
    }
    gate.set(Some(actual));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(network: &str, answer: &str) -> Result<String, String> {
        answered_reference(&network.parse().unwrap(), &RawValue::from_string(answer.to_string()).unwrap())
    }

    #[test]
    fn an_evm_answer_names_its_chain_id_in_decimal() {
        assert_eq!(reference("eip155:5", r#""0x5""#), Ok("5".into()));
        assert_eq!(reference("eip155:5", r#""0x1""#), Ok("1".into()));
        assert_eq!(reference("eip155:5", r#""five""#), Err(r#""five""#.into()));
    }

    #[test]
    fn a_solana_answer_names_its_genesis_hashs_first_32_characters() {
        let devnet = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
        assert_eq!(reference(devnet, r#""EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG""#), Ok("EtWTRABZaYq6iMfeYKouRu166VU2xqa1".into()));
        assert_eq!(reference(devnet, r#""5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d""#), Ok("5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp".into()));
        // Not a genesis hash: too short, not base58, not 32 bytes, not a string.
        let not_hashes = [
            r#""devnet""#,
            r#""0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OI""#,
            r#""EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBGEtWT""#,
            r#""EtWTRABZaYq6iMfeYKouRu166VU2xqa€€€""#,
            "12",
            "null",
        ];
        for answer in not_hashes {
            assert_eq!(reference(devnet, answer), Err(answer.chars().take(80).collect()), "{answer}");
        }
        let long = format!("\"{}\"", "x".repeat(200));
        assert_eq!(reference(devnet, &long).unwrap_err().chars().count(), 80, "bounded");
    }

    #[test]
    fn the_refusal_names_both_references() {
        let gate = ChainIdGate::new("solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1".parse().unwrap());
        assert_eq!(gate.refusal(), None);
        gate.set(Some("5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp".into()));
        assert_eq!(
            gate.refusal().unwrap(),
            "the endpoint serves cluster 5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp, not EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
        );
        let gate = ChainIdGate::new(NetworkId::eip155(5));
        gate.set(Some("1".into()));
        assert_eq!(gate.refusal().unwrap(), "the endpoint serves chain 1, not 5");
    }
}

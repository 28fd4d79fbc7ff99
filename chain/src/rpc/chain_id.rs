//! The configured chain id checked against each EVM endpoint (decision 0914): when the service
//! starts, each endpoint is asked `eth_chainId` in the background. One that answers another chain
//! is logged as an ERROR (network, endpoint without its path) and is not used for calls (the
//! policy moves on to the next endpoint at once) until it answers the network's chain id, which
//! is asked again every [`RECHECK_EVERY`]. An endpoint that has not answered yet is used as usual:
//! a node that is down does not hold up the gateway, and its calls fail as they would anyway.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use alloy::primitives::U256;
use alloy::rpc::json_rpc::{Id, Request, RequestPacket, ResponsePacket, ResponsePayload};
use tower::ServiceExt;

use super::http::HttpEndpoint;
use crate::NetworkId;

/// How often an endpoint that serves another chain, or has not answered, is asked again.
pub const RECHECK_EVERY: Duration = Duration::from_secs(60);

/// What is known of the chain an endpoint serves; shared by every client over the endpoint.
#[derive(Debug)]
pub struct ChainIdGate {
    expected: u64,
    /// The chain id the endpoint answered, when it is not the expected one.
    wrong: Mutex<Option<String>>,
}

impl ChainIdGate {
    pub fn new(expected: u64) -> Arc<Self> {
        Arc::new(Self { expected, wrong: Mutex::new(None) })
    }

    /// Why the endpoint must not be used, if it answered another chain id.
    pub fn refusal(&self) -> Option<String> {
        let wrong = self.wrong.lock().unwrap();
        wrong.as_ref().map(|actual| format!("the endpoint serves chain {actual}, not {}", self.expected))
    }

    fn set(&self, wrong: Option<String>) {
        *self.wrong.lock().unwrap() = wrong;
    }
}

/// What an endpoint answered to `eth_chainId`: the chain id, `Err` with its text when it is not a
/// chain id, `None` without an answer.
async fn ask_chain_id(endpoint: &HttpEndpoint, timeout: Duration) -> Option<Result<u64, String>> {
    let request = Request::new("eth_chainId", Id::Number(0), ()).serialize().ok()?;
    let answer = tokio::time::timeout(timeout, endpoint.clone().oneshot(RequestPacket::Single(request))).await.ok()?.ok()?;
    let ResponsePacket::Single(response) = answer else { return None };
    match response.payload {
        ResponsePayload::Success(raw) => Some(match serde_json::from_str::<U256>(raw.get()) {
            Ok(id) => u64::try_from(id).map_err(|_| id.to_string()),
            Err(_) => Err(raw.get().chars().take(80).collect()),
        }),
        ResponsePayload::Failure(_) => None,
    }
}

/// Watches one endpoint of `network` until it answers the network's chain id. Ends then, or when
/// the gate is gone (the service was dropped).
pub async fn watch(network: NetworkId, endpoint: HttpEndpoint, gate: Weak<ChainIdGate>, timeout: Duration) {
    loop {
        let answer = ask_chain_id(&endpoint, timeout).await;
        let Some(gate) = gate.upgrade() else { return };
        match answer {
            Some(Ok(id)) if id == gate.expected => {
                if gate.refusal().is_some() {
                    tracing::info!(%network, endpoint = endpoint.endpoint().redacted(), "the RPC endpoint now serves the network's chain; it is used again");
                }
                gate.set(None);
                return;
            }
            Some(Ok(id)) => report(&network, &endpoint, &gate, id.to_string()),
            Some(Err(text)) => report(&network, &endpoint, &gate, text),
            None => tracing::debug!(%network, endpoint = endpoint.endpoint().redacted(), "no answer to eth_chainId; asked again later"),
        }
        drop(gate);
        tokio::time::sleep(RECHECK_EVERY).await;
    }
}

fn report(network: &NetworkId, endpoint: &HttpEndpoint, gate: &ChainIdGate, actual: String) {
    if gate.refusal().is_none() {
        tracing::error!(
            %network,
            endpoint = endpoint.endpoint().redacted(),
            serves = %actual,
            "the RPC endpoint serves another chain than the network's; it is not used until it serves chain {}",
            gate.expected
        );
    }
    gate.set(Some(actual));
}

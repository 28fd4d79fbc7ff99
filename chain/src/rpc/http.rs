//! One JSON-RPC endpoint over HTTP: a tower service that posts a request packet and reports what
//! came back with everything the policy needs (status, `Retry-After`), unlike alloy's stock HTTP
//! transport, which keeps only a delay-seconds `Retry-After`.

use std::sync::Arc;
use std::task::{Context, Poll};

use alloy::rpc::json_rpc::{RequestPacket, ResponsePacket};
use alloy::transports::http::reqwest::{self, Url, header};
use futures_util::future::BoxFuture;
use tower::Service;

use super::chain_id::ChainIdGate;

/// How an attempt on one endpoint failed, before the policy judges it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttemptError {
    #[error("HTTP status {status}")]
    Status {
        status: u16,
        /// The raw `Retry-After` header, if any (parsed by the policy, which knows the time).
        retry_after: Option<String>,
    },
    /// Refused, reset or otherwise failed connection: no status.
    #[error("{0}")]
    Network(String),
    /// A success status whose body is not a JSON-RPC response.
    #[error("the answer is not JSON-RPC: {0}")]
    BadResponse(String),
    /// A body longer than the policy's `max_response_bytes` (announced or as it arrived).
    #[error("the answer is larger than {limit} bytes")]
    TooLarge { limit: usize },
    /// Not sent: the endpoint answered `eth_chainId` (or, on Solana, `getGenesisHash`) with another
    /// chain than the network's.
    #[error("{0}")]
    WrongChain(String),
}

/// An endpoint, printable without its path or query (providers put API keys there).
#[derive(Debug, Clone)]
pub struct Endpoint {
    url: Url,
    redacted: Arc<str>,
}

impl Endpoint {
    pub fn new(url: Url) -> Self {
        let redacted = redact(&url).into();
        Self { url, redacted }
    }

    pub fn url(&self) -> &Url {
        &self.url
    }

    /// `scheme://host[:port]`: safe to log.
    pub fn redacted(&self) -> &str {
        &self.redacted
    }
}

/// `scheme://host[:port]` of a URL: what can be logged or shown about an RPC endpoint.
pub fn redact(url: &Url) -> String {
    let host = url.host_str().unwrap_or("?");
    match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    }
}

/// Posts JSON-RPC packets to one endpoint. Clones share the connection pool.
#[derive(Debug, Clone)]
pub struct HttpEndpoint {
    client: reqwest::Client,
    endpoint: Endpoint,
    max_response_bytes: usize,
    /// When set, calls are refused while the endpoint is known to serve another chain.
    chain_id: Option<Arc<ChainIdGate>>,
}

impl HttpEndpoint {
    pub fn new(client: reqwest::Client, url: Url, max_response_bytes: usize) -> Self {
        Self { client, endpoint: Endpoint::new(url), max_response_bytes, chain_id: None }
    }

    /// This endpoint, refusing calls while `gate` says it serves another chain.
    pub fn with_chain_id_gate(mut self, gate: Arc<ChainIdGate>) -> Self {
        self.chain_id = Some(gate);
        self
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    async fn post(self, packet: RequestPacket) -> Result<ResponsePacket, AttemptError> {
        if let Some(refusal) = self.chain_id.as_ref().and_then(|gate| gate.refusal()) {
            return Err(AttemptError::WrongChain(refusal));
        }
        let body = serde_json::to_vec(&packet).map_err(|e| AttemptError::BadResponse(format!("request not serializable: {e}")))?;
        let response = self
            .client
            .post(self.endpoint.url.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            // reqwest's message names the URL, which may hold an API key.
            .map_err(|e| AttemptError::Network(e.without_url().to_string()))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = response.headers().get(header::RETRY_AFTER).and_then(|v| v.to_str().ok()).map(str::to_owned);
            return Err(AttemptError::Status { status: status.as_u16(), retry_after });
        }
        let bytes = self.read_bounded(response).await?;
        serde_json::from_slice(&bytes).map_err(|e| AttemptError::BadResponse(e.to_string()))
    }

    /// The body, refused as soon as it is known to be over the bound: from `Content-Length`
    /// before any of it is read, else as the chunks arrive. An endpoint (or whoever answers in its
    /// name) cannot make the gateway hold more than the bound per call.
    async fn read_bounded(&self, mut response: reqwest::Response) -> Result<Vec<u8>, AttemptError> {
        let limit = self.max_response_bytes;
        let announced = response.content_length().unwrap_or(0);
        if announced > limit as u64 {
            return Err(AttemptError::TooLarge { limit });
        }
        let mut body = Vec::with_capacity(announced as usize);
        while let Some(chunk) = response.chunk().await.map_err(|e| AttemptError::Network(e.without_url().to_string()))? {
            if body.len() + chunk.len() > limit {
                return Err(AttemptError::TooLarge { limit });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

impl Service<RequestPacket> for HttpEndpoint {
    type Response = ResponsePacket;
    type Error = AttemptError;
    type Future = BoxFuture<'static, Result<ResponsePacket, AttemptError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, packet: RequestPacket) -> Self::Future {
        Box::pin(self.clone().post(packet))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_keeps_only_scheme_host_and_port() {
        let url: Url = "https://user:pw@eth.example.com/v3/SECRETKEY?apikey=SECRET".parse().unwrap();
        assert_eq!(redact(&url), "https://eth.example.com");
        let url: Url = "http://127.0.0.1:8545/".parse().unwrap();
        assert_eq!(redact(&url), "http://127.0.0.1:8545");
    }
}

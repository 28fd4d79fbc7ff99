//! JSON-RPC to a network's nodes with the spec's policy (§7 Chain RPC), as tower layers under
//! alloy's `RpcClient`:
//!
//! ```text
//! alloy RpcClient (ids, (de)serialization, batches)
//!   └ DedupLayer        identical in-flight calls share one upstream call (≤ 8192 at once)
//!     └ BatchLimitLayer  batches of at most 1000 requests
//!       └ RpcPolicyLayer 10 s per attempt, 3 retries from 150 ms doubling, Retry-After,
//!         │              then the next endpoint; metrics
//!         └ [HttpEndpoint, …] one per configured URL, in order
//! ```

pub mod batch;
pub mod chain_id;
pub mod dedup;
pub mod failure;
pub mod http;
pub mod policy;
pub mod retry;

use alloy::rpc::client::RpcClient;
use alloy::transports::http::reqwest::{self, Url};
use tower::ServiceBuilder;

pub use batch::{BatchLimitLayer, BatchLimitService};
pub use dedup::{DedupLayer, DedupService};
pub use failure::RpcFailure;
pub use http::{AttemptError, Endpoint, HttpEndpoint};
pub use policy::RpcPolicy;
pub use retry::{RpcPolicyLayer, RpcPolicyService};

use crate::metrics::NetworkMetrics;

/// The whole stack for one network.
pub type NetworkTransport = DedupService<BatchLimitService<RpcPolicyService<HttpEndpoint>>>;

/// The stack for a network whose endpoints are `urls`, in order of preference.
pub fn network_transport(http: &reqwest::Client, urls: &[Url], policy: &RpcPolicy, metrics: NetworkMetrics) -> NetworkTransport {
    let endpoints = urls.iter().map(|url| HttpEndpoint::new(http.clone(), url.clone(), policy.max_response_bytes)).collect::<Vec<_>>();
    endpoints_transport(endpoints, policy, metrics)
}

/// The stack over `endpoints`, in order of preference (each with its own answer bound and chain
/// id gate).
pub fn endpoints_transport(endpoints: Vec<HttpEndpoint>, policy: &RpcPolicy, metrics: NetworkMetrics) -> NetworkTransport {
    ServiceBuilder::new()
        .layer(DedupLayer::new(policy.dedup_capacity, metrics.clone()))
        .layer(BatchLimitLayer::new(policy.max_batch_size))
        .layer(RpcPolicyLayer::new(policy.clone(), metrics))
        .service(endpoints)
}

/// alloy's JSON-RPC client over [`network_transport`].
pub fn network_client(http: &reqwest::Client, urls: &[Url], policy: &RpcPolicy, metrics: NetworkMetrics) -> RpcClient {
    RpcClient::new(network_transport(http, urls, policy, metrics), is_local(urls))
}

/// alloy's JSON-RPC client over [`endpoints_transport`].
pub fn endpoints_client(endpoints: Vec<HttpEndpoint>, policy: &RpcPolicy, metrics: NetworkMetrics) -> RpcClient {
    let local = is_local(&endpoints.iter().map(|e| e.endpoint().url().clone()).collect::<Vec<_>>());
    RpcClient::new(endpoints_transport(endpoints, policy, metrics), local)
}

fn is_local(urls: &[Url]) -> bool {
    urls.iter().all(|u| matches!(u.host_str(), Some("127.0.0.1" | "localhost" | "[::1]")))
}

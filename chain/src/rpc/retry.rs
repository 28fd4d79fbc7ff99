//! The policy's shell: a tower layer over a network's endpoints that times each attempt, retries
//! with the waits [`super::policy::next_step`] decides, falls back to the next endpoint, and
//! records metrics. In a batch only the requests that got a retryable error are sent again.

use std::collections::HashMap;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::SystemTime;

use alloy::rpc::json_rpc::{Id, RequestPacket, Response, ResponsePacket, ResponsePayload, SerializedRequest};
use alloy::transports::{TransportError, TransportFut};
use tokio::time::Instant;
use tower::{Layer, Service, ServiceExt};

use super::failure::RpcFailure;
use super::http::AttemptError;
use super::policy::{AttemptFailure, NextStep, RpcPolicy, is_retryable_rpc_error, next_step, parse_retry_after};
use crate::metrics::NetworkMetrics;

/// Wraps a network's endpoints (in order of preference) in the spec's RPC policy.
#[derive(Debug, Clone)]
pub struct RpcPolicyLayer {
    policy: Arc<RpcPolicy>,
    metrics: NetworkMetrics,
}

impl RpcPolicyLayer {
    pub fn new(policy: RpcPolicy, metrics: NetworkMetrics) -> Self {
        Self { policy: Arc::new(policy), metrics }
    }
}

impl<S> Layer<Vec<S>> for RpcPolicyLayer {
    type Service = RpcPolicyService<S>;

    fn layer(&self, endpoints: Vec<S>) -> Self::Service {
        RpcPolicyService { endpoints: endpoints.into(), policy: self.policy.clone(), metrics: self.metrics.clone() }
    }
}

/// See [`RpcPolicyLayer`]. Its errors are [`RpcFailure`]s inside alloy's `TransportError`.
#[derive(Debug)]
pub struct RpcPolicyService<S> {
    endpoints: Arc<[S]>,
    policy: Arc<RpcPolicy>,
    metrics: NetworkMetrics,
}

impl<S> Clone for RpcPolicyService<S> {
    fn clone(&self) -> Self {
        Self { endpoints: self.endpoints.clone(), policy: self.policy.clone(), metrics: self.metrics.clone() }
    }
}

impl<S> Service<RequestPacket> for RpcPolicyService<S>
where
    S: Service<RequestPacket, Response = ResponsePacket, Error = AttemptError> + Clone + Send + Sync + 'static,
    S::Future: Send,
{
    type Response = ResponsePacket;
    type Error = TransportError;
    type Future = TransportFut<'static>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, packet: RequestPacket) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { this.run(packet).await.map_err(RpcFailure::into_transport_error) })
    }
}

impl<S> RpcPolicyService<S>
where
    S: Service<RequestPacket, Response = ResponsePacket, Error = AttemptError> + Clone + Send + Sync + 'static,
    S::Future: Send,
{
    async fn run(self, packet: RequestPacket) -> Result<ResponsePacket, RpcFailure> {
        let deadline = self.policy.call_timeout.map(|t| Instant::now() + t);
        let remaining = || deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let mut call = CallState::new(packet);
        let mut last_failure = RpcFailure::Network("the network has no RPC endpoint".into());

        'endpoints: for (index, endpoint) in self.endpoints.iter().enumerate() {
            if index > 0 {
                self.metrics.fallback();
                tracing::debug!(endpoint = index, "falling back to the next RPC endpoint");
            }
            let mut retries = 0;
            loop {
                let attempt_timeout = remaining().map_or(self.policy.attempt_timeout, |r| r.min(self.policy.attempt_timeout));
                if attempt_timeout.is_zero() {
                    return Err(RpcFailure::Timeout);
                }
                let packet = call.packet();
                self.metrics.request(packet.len());
                let started = Instant::now();
                let outcome = tokio::time::timeout(attempt_timeout, endpoint.clone().oneshot(packet)).await;
                self.metrics.latency(started.elapsed());
                let (failure, reported) = match outcome {
                    Ok(Ok(response)) => match call.absorb(response) {
                        None => return Ok(call.finish()),
                        Some(failure) => failure,
                    },
                    Ok(Err(error)) => judge_error(error),
                    Err(_elapsed) => (AttemptFailure::TimedOut, RpcFailure::Timeout),
                };
                self.metrics.error(match failure {
                    AttemptFailure::Rpc { .. } => "rpc_error",
                    _ => reported.kind(),
                });
                last_failure = reported;
                match next_step(&self.policy, &failure, retries, remaining(), index + 1 < self.endpoints.len()) {
                    NextStep::RetryAfter(delay) => {
                        tracing::debug!(endpoint = index, retry = retries + 1, ?delay, ?failure, "retrying a JSON-RPC call");
                        self.metrics.retry();
                        tokio::time::sleep(delay).await;
                        retries += 1;
                    }
                    NextStep::NextEndpoint => continue 'endpoints,
                    NextStep::GiveUp => break 'endpoints,
                }
            }
        }
        // Every endpoint gave up. Retryable JSON-RPC errors are still the node's answers: the
        // caller gets them rather than a transport failure, if every request has one.
        if call.every_pending_request_has_an_error_answer() {
            return Ok(call.finish());
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(RpcFailure::Timeout);
        }
        Err(last_failure)
    }
}

/// The policy's view of a failed HTTP attempt, and what the caller is told if it was the last.
fn judge_error(error: AttemptError) -> (AttemptFailure, RpcFailure) {
    match error {
        AttemptError::Status { status, retry_after } => {
            let retry_after = retry_after.and_then(|v| parse_retry_after(&v, SystemTime::now()));
            (AttemptFailure::Status { status, retry_after }, RpcFailure::HttpStatus { status })
        }
        AttemptError::Network(message) => (AttemptFailure::NoStatus, RpcFailure::Network(message)),
        AttemptError::BadResponse(message) => (AttemptFailure::NoStatus, RpcFailure::BadResponse(message)),
        AttemptError::WrongChain(message) => (AttemptFailure::WrongChain, RpcFailure::Network(message)),
        AttemptError::TooLarge { limit } => {
            (AttemptFailure::TooLarge, RpcFailure::BadResponse(format!("the answer is larger than {limit} bytes")))
        }
    }
}

/// One call's progress across attempts: which requests are answered, which are still to send.
struct CallState {
    single: bool,
    order: Vec<Id>,
    pending: Vec<SerializedRequest>,
    answered: HashMap<Id, Response>,
    /// Retryable error answers to pending requests, kept in case no attempt does better.
    error_answers: HashMap<Id, Response>,
}

impl CallState {
    fn new(packet: RequestPacket) -> Self {
        let (single, pending) = match packet {
            RequestPacket::Single(request) => (true, vec![request]),
            RequestPacket::Batch(requests) => (false, requests),
        };
        let order = pending.iter().map(|r| r.id().clone()).collect();
        Self { single, order, pending, answered: HashMap::new(), error_answers: HashMap::new() }
    }

    fn packet(&self) -> RequestPacket {
        if self.single { RequestPacket::Single(self.pending[0].clone()) } else { RequestPacket::Batch(self.pending.clone()) }
    }

    /// Takes the answers in `response`; `None` when every request is now answered, else why not.
    fn absorb(&mut self, response: ResponsePacket) -> Option<(AttemptFailure, RpcFailure)> {
        let responses = match response {
            ResponsePacket::Single(mut one) => {
                // A single answer is the answer to the single request, whatever id the node put.
                if self.single {
                    one.id = self.pending[0].id().clone();
                }
                vec![one]
            }
            ResponsePacket::Batch(many) => many,
        };
        let mut retryable: Option<(i64, String)> = None;
        let mut unattributed: Option<(i64, String)> = None;
        for response in responses {
            let is_pending = self.pending.iter().any(|p| p.id() == &response.id);
            match &response.payload {
                ResponsePayload::Failure(e) if !is_pending => {
                    unattributed.get_or_insert((e.code, e.message.to_string()));
                }
                _ if !is_pending => {}
                ResponsePayload::Failure(e) if is_retryable_rpc_error(e.code, &e.message) => {
                    retryable.get_or_insert((e.code, e.message.to_string()));
                    self.error_answers.insert(response.id.clone(), response);
                }
                _ => {
                    self.pending.retain(|p| p.id() != &response.id);
                    self.error_answers.remove(&response.id);
                    self.answered.insert(response.id.clone(), response);
                }
            }
        }
        if self.pending.is_empty() {
            return None;
        }
        match retryable.or(unattributed) {
            Some((code, message)) => {
                let reported = RpcFailure::BadResponse(format!("JSON-RPC error {code}: {message}"));
                Some((AttemptFailure::Rpc { code, message }, reported))
            }
            None => {
                let reported = RpcFailure::BadResponse(format!("no answer to {} of the requests", self.pending.len()));
                Some((AttemptFailure::NoStatus, reported))
            }
        }
    }

    fn every_pending_request_has_an_error_answer(&self) -> bool {
        self.pending.iter().all(|p| self.error_answers.contains_key(p.id()))
    }

    /// The answers, in request order.
    fn finish(mut self) -> ResponsePacket {
        let mut responses: Vec<Response> =
            self.order.iter().filter_map(|id| self.answered.remove(id).or_else(|| self.error_answers.remove(id))).collect();
        if self.single { ResponsePacket::Single(responses.remove(0)) } else { ResponsePacket::Batch(responses) }
    }
}

//! De-duplication of identical in-flight JSON-RPC calls across callers: while a call is in flight,
//! an identical one (same methods and params in the same order, whatever the ids) waits for its
//! answer instead of going upstream. At most `capacity` distinct calls are shared at once; past
//! that, calls go upstream on their own. Answers are not kept once the call completes: caching
//! results is the callers' business (balances keep theirs for 30 s).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use alloy::rpc::json_rpc::{Id, RequestPacket, ResponsePacket};
use alloy::transports::{TransportError, TransportFut};
use futures_util::FutureExt;
use futures_util::future::Shared;
use tokio::sync::oneshot;
use tower::{Layer, Service, ServiceExt};

use super::failure::RpcFailure;
use crate::metrics::NetworkMetrics;

/// What makes two calls the same: single or batch, and each request's method and params.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallKey {
    single: bool,
    requests: Vec<(String, String)>,
}

impl CallKey {
    pub fn of(packet: &RequestPacket) -> Self {
        let requests =
            packet.requests().iter().map(|r| (r.method().to_owned(), r.params().map(|p| p.get().to_owned()).unwrap_or_default())).collect();
        Self { single: packet.as_single().is_some(), requests }
    }
}

fn ids(packet: &RequestPacket) -> Vec<Id> {
    packet.requests().iter().map(|r| r.id().clone()).collect()
}

/// The leader's answer with the follower's ids: answers are matched to requests by id, and the
/// two calls differ only in ids.
pub fn readdress(answer: ResponsePacket, leader_ids: &[Id], own_ids: &[Id]) -> ResponsePacket {
    let own_id = |id: &Id| leader_ids.iter().position(|l| l == id).map(|i| own_ids[i].clone()).unwrap_or_else(|| id.clone());
    match answer {
        ResponsePacket::Single(mut one) => {
            one.id = own_id(&one.id);
            ResponsePacket::Single(one)
        }
        ResponsePacket::Batch(mut many) => {
            for one in &mut many {
                one.id = own_id(&one.id);
            }
            ResponsePacket::Batch(many)
        }
    }
}

type SharedAnswer = Shared<oneshot::Receiver<Result<ResponsePacket, RpcFailure>>>;

struct InFlight {
    leader_ids: Vec<Id>,
    answer: SharedAnswer,
}

#[derive(Debug, Clone)]
pub struct DedupLayer {
    capacity: usize,
    metrics: NetworkMetrics,
}

impl DedupLayer {
    pub fn new(capacity: usize, metrics: NetworkMetrics) -> Self {
        Self { capacity, metrics }
    }
}

impl<S> Layer<S> for DedupLayer {
    type Service = DedupService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        DedupService { inner, capacity: self.capacity, metrics: self.metrics.clone(), in_flight: Default::default() }
    }
}

#[derive(Clone)]
pub struct DedupService<S> {
    inner: S,
    capacity: usize,
    metrics: NetworkMetrics,
    in_flight: Arc<Mutex<HashMap<CallKey, InFlight>>>,
}

impl<S> DedupService<S> {
    /// Distinct calls in flight now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.lock().unwrap().len()
    }
}

impl<S> Service<RequestPacket> for DedupService<S>
where
    S: Service<RequestPacket, Response = ResponsePacket, Error = TransportError, Future = TransportFut<'static>> + Clone + Send + 'static,
{
    type Response = ResponsePacket;
    type Error = TransportError;
    type Future = TransportFut<'static>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, packet: RequestPacket) -> Self::Future {
        let key = CallKey::of(&packet);
        let own_ids = ids(&packet);
        let mut in_flight = self.in_flight.lock().unwrap();
        if let Some(existing) = in_flight.get(&key) {
            self.metrics.deduplicated();
            return follow(existing.answer.clone(), existing.leader_ids.clone(), own_ids);
        }
        if in_flight.len() >= self.capacity {
            drop(in_flight);
            return self.inner.clone().oneshot(packet).boxed();
        }
        // The upstream call runs as its own task, so it completes (and leaves the table) even if
        // the caller that started it goes away while others wait for it.
        let (answer_tx, answer_rx) = oneshot::channel();
        let answer = answer_rx.shared();
        in_flight.insert(key.clone(), InFlight { leader_ids: own_ids.clone(), answer: answer.clone() });
        drop(in_flight);
        let upstream = self.inner.clone();
        let table = self.in_flight.clone();
        tokio::spawn(async move {
            let result = upstream
                .oneshot(packet)
                .await
                .map_err(|e| RpcFailure::from_transport_error(&e).unwrap_or_else(|| RpcFailure::BadResponse(e.to_string())));
            table.lock().unwrap().remove(&key);
            let _ = answer_tx.send(result);
        });
        follow(answer, own_ids.clone(), own_ids)
    }
}

fn follow(answer: SharedAnswer, leader_ids: Vec<Id>, own_ids: Vec<Id>) -> TransportFut<'static> {
    Box::pin(async move {
        match answer.await {
            Ok(Ok(packet)) => Ok(readdress(packet, &leader_ids, &own_ids)),
            Ok(Err(failure)) => Err(failure.into_transport_error()),
            Err(_) => Err(RpcFailure::BadResponse("the upstream call was dropped".into()).into_transport_error()),
        }
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use alloy::rpc::json_rpc::{Request, Response, ResponsePayload};
    use serde_json::value::RawValue;
    use tokio::sync::Semaphore;

    use super::*;
    use crate::metrics::ChainMetrics;

    /// An upstream that counts calls and answers each request with its method name once released.
    #[derive(Clone)]
    struct Upstream {
        calls: Arc<AtomicUsize>,
        gate: Arc<Semaphore>,
    }

    impl Service<RequestPacket> for Upstream {
        type Response = ResponsePacket;
        type Error = TransportError;
        type Future = TransportFut<'static>;

        fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, packet: RequestPacket) -> Self::Future {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let gate = self.gate.clone();
            Box::pin(async move {
                let _open = gate.acquire().await.unwrap();
                let request = packet.as_single().unwrap();
                let result = RawValue::from_string(format!("{:?}", request.method())).unwrap();
                Ok(ResponsePacket::Single(Response { id: request.id().clone(), payload: ResponsePayload::Success(result) }))
            })
        }
    }

    fn request(method: &'static str, id: u64) -> RequestPacket {
        RequestPacket::Single(Request::new(method, Id::Number(id), ()).serialize().unwrap())
    }

    #[tokio::test]
    async fn past_its_capacity_calls_go_upstream_unshared_and_answers_keep_their_ids() {
        let metrics = Arc::new(ChainMetrics::default()).for_network(&crate::NetworkId::eip155(1));
        let upstream = Upstream { calls: Arc::default(), gate: Arc::new(Semaphore::new(0)) };
        let service = DedupLayer::new(1, metrics.clone()).layer(upstream.clone());

        let first = service.clone().oneshot(request("eth_blockNumber", 1));
        let same = service.clone().oneshot(request("eth_blockNumber", 2));
        let other = service.clone().oneshot(request("eth_chainId", 3));
        let (first, same, other) = (tokio::spawn(first), tokio::spawn(same), tokio::spawn(other));
        tokio::task::yield_now().await;
        while upstream.calls.load(Ordering::SeqCst) < 2 {
            tokio::task::yield_now().await;
        }
        assert_eq!(service.in_flight(), 1, "the table holds one call: its capacity");
        upstream.gate.add_permits(10);

        let id_of = |packet: ResponsePacket| packet.as_single().unwrap().id.clone();
        assert_eq!(id_of(first.await.unwrap().unwrap()), Id::Number(1));
        assert_eq!(id_of(same.await.unwrap().unwrap()), Id::Number(2), "the shared answer, with the follower's id");
        assert_eq!(id_of(other.await.unwrap().unwrap()), Id::Number(3));
        assert_eq!(upstream.calls.load(Ordering::SeqCst), 2, "the identical call was shared, the other went on its own");
        assert_eq!(metrics.deduplicated_calls(), 1);
        assert_eq!(service.in_flight(), 0, "completed calls leave the table");
    }
}

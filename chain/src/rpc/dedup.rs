//! De-duplication of identical in-flight JSON-RPC calls across callers: while a call is in flight,
//! an identical one (same methods and params in the same order, whatever the ids) waits for its
//! answer instead of going upstream. At most `capacity` distinct calls are shared at once; past
//! that, calls go upstream on their own. Answers are not kept once the call completes: caching
//! results is the callers' business (balances keep theirs for 30 s).
//!
//! A shared call runs as a task of its own, stopped once no caller waits for it
//! ([`crate::shared_task`]): callers bound what they may have at the nodes by what they hold
//! (`ChainService`'s forwarded-call slots), and a call that went on after its last caller let go of
//! its slot would be a call no bound counts.

use std::sync::Arc;
use std::task::{Context, Poll};

use alloy::rpc::json_rpc::{Id, RequestPacket, ResponsePacket};
use alloy::transports::{TransportError, TransportFut};
use futures_util::FutureExt;
use tower::{Layer, Service, ServiceExt};

use super::failure::RpcFailure;
use crate::metrics::NetworkMetrics;
use crate::shared_task::{Joined, SharedTasks};

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

/// A shared call's outcome, with the ids of the call that went upstream (each caller's answer
/// carries its own ids).
type Outcome = (Vec<Id>, Result<ResponsePacket, RpcFailure>);

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
        DedupService { inner, capacity: self.capacity, metrics: self.metrics.clone(), in_flight: Arc::default() }
    }
}

#[derive(Clone)]
pub struct DedupService<S> {
    inner: S,
    capacity: usize,
    metrics: NetworkMetrics,
    in_flight: Arc<SharedTasks<CallKey, Outcome>>,
}

impl<S> DedupService<S> {
    /// Distinct calls in flight now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
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
        let own_ids = ids(&packet);
        let upstream = self.inner.clone();
        let leader_ids = own_ids.clone();
        let joined = self.in_flight.join_or_spawn(CallKey::of(&packet), self.capacity, packet, move |packet| async move {
            let result = upstream
                .oneshot(packet)
                .await
                .map_err(|e| RpcFailure::from_transport_error(&e).unwrap_or_else(|| RpcFailure::BadResponse(e.to_string())));
            (leader_ids, result)
        });
        let waiting = match joined {
            Joined::Shared(waiting) => {
                self.metrics.deduplicated();
                waiting
            }
            Joined::Started(waiting) => waiting,
            // Past its capacity, a call goes upstream on its own.
            Joined::Full(packet) => return self.inner.clone().oneshot(packet).boxed(),
        };
        Box::pin(async move {
            match waiting.await {
                Some((leader_ids, Ok(packet))) => Ok(readdress(packet, &leader_ids, &own_ids)),
                Some((_, Err(failure))) => Err(failure.into_transport_error()),
                None => Err(RpcFailure::BadResponse("the upstream call was dropped".into()).into_transport_error()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use alloy::rpc::json_rpc::{Request, Response, ResponsePayload};
    use serde_json::value::RawValue;
    use tokio::sync::Semaphore;

    use super::*;
    use crate::metrics::ChainMetrics;

    /// An upstream that counts calls and answers each request with its method name once released;
    /// `stopped` counts the calls dropped before they answered.
    #[derive(Clone)]
    struct Upstream {
        calls: Arc<AtomicUsize>,
        gate: Arc<Semaphore>,
        stopped: Arc<AtomicUsize>,
    }

    /// Counts a call as stopped unless it answered.
    struct Unanswered(Arc<AtomicUsize>, bool);
    impl Drop for Unanswered {
        fn drop(&mut self) {
            if !self.1 {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
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
            let unanswered = Unanswered(self.stopped.clone(), false);
            Box::pin(async move {
                let mut unanswered = unanswered;
                gate.acquire().await.unwrap().forget(); // one permit, one answer
                unanswered.1 = true;
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
        let upstream = Upstream { calls: Arc::default(), gate: Arc::new(Semaphore::new(0)), stopped: Arc::default() };
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

    #[tokio::test]
    async fn a_shared_call_goes_on_while_anyone_waits_and_stops_when_no_one_does() {
        let metrics = Arc::new(ChainMetrics::default()).for_network(&crate::NetworkId::eip155(1));
        let upstream = Upstream { calls: Arc::default(), gate: Arc::new(Semaphore::new(0)), stopped: Arc::default() };
        let service = DedupLayer::new(8, metrics).layer(upstream.clone());
        let until = |what: &'static str, done: Box<dyn Fn() -> bool>| async move {
            for _ in 0..100_000 {
                if done() {
                    return;
                }
                tokio::task::yield_now().await;
            }
            panic!("{what} never happened");
        };

        // The caller that started a call goes; another waits for the same call: it goes on.
        let leader = tokio::spawn(service.clone().oneshot(request("eth_call", 1)));
        let calls = upstream.calls.clone();
        until("the call upstream", Box::new(move || calls.load(Ordering::SeqCst) == 1)).await;
        let follower = tokio::spawn(service.clone().oneshot(request("eth_call", 2)));
        until(
            "the follower's wait",
            Box::new({
                let metrics = service.metrics.clone();
                move || metrics.deduplicated_calls() == 1
            }),
        )
        .await;
        leader.abort();
        assert!(leader.await.unwrap_err().is_cancelled());
        upstream.gate.add_permits(1);
        let answer = follower.await.unwrap().unwrap();
        assert_eq!(answer.as_single().unwrap().id, Id::Number(2), "the follower has the answer of the call the leader started");
        assert_eq!(upstream.stopped.load(Ordering::SeqCst), 0);

        // Every caller goes (an outside review: 352 calls at a node after their callers had let go
        // of their slots): the call upstream is stopped and leaves the table.
        let alone = tokio::spawn(service.clone().oneshot(request("eth_getBalance", 3)));
        let calls = upstream.calls.clone();
        until("the second call upstream", Box::new(move || calls.load(Ordering::SeqCst) == 2)).await;
        alone.abort();
        let stopped = upstream.stopped.clone();
        until("the call stopped", Box::new(move || stopped.load(Ordering::SeqCst) == 1)).await;
        assert_eq!(service.in_flight(), 0, "a stopped call leaves the table");

        // The same call again is a new one, answered.
        let again = tokio::spawn(service.clone().oneshot(request("eth_getBalance", 4)));
        upstream.gate.add_permits(1);
        assert_eq!(again.await.unwrap().unwrap().as_single().unwrap().id, Id::Number(4));
        assert_eq!(upstream.calls.load(Ordering::SeqCst), 3);
    }
}

//! JSON-RPC batches of at most `max` requests: a larger batch is sent as several, at most
//! [`CHUNKS_IN_FLIGHT`] at a time, and their answers are joined into one, in order.

use std::task::{Context, Poll};

use alloy::rpc::json_rpc::{RequestPacket, ResponsePacket};
use alloy::transports::{TransportError, TransportFut};
use futures_util::{StreamExt, TryStreamExt};
use tower::{Layer, Service, ServiceExt};

/// The most chunks of one batch sent at once: a batch the node would take as many HTTP requests
/// does not reach it as that many at the same moment.
pub const CHUNKS_IN_FLIGHT: usize = 4;

#[derive(Debug, Clone, Copy)]
pub struct BatchLimitLayer {
    max: usize,
}

impl BatchLimitLayer {
    pub fn new(max: usize) -> Self {
        Self { max: max.max(1) }
    }
}

impl<S> Layer<S> for BatchLimitLayer {
    type Service = BatchLimitService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        BatchLimitService { inner, max: self.max }
    }
}

#[derive(Debug, Clone)]
pub struct BatchLimitService<S> {
    inner: S,
    max: usize,
}

/// `requests` cut into batches of at most `max`, in order.
pub fn chunk_sizes(requests: usize, max: usize) -> Vec<usize> {
    let max = max.max(1);
    (0..requests.div_ceil(max)).map(|i| max.min(requests - i * max)).collect()
}

impl<S> Service<RequestPacket> for BatchLimitService<S>
where
    S: Service<RequestPacket, Response = ResponsePacket, Error = TransportError, Future = TransportFut<'static>> + Clone + Send + 'static,
{
    type Response = ResponsePacket;
    type Error = TransportError;
    type Future = TransportFut<'static>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, packet: RequestPacket) -> Self::Future {
        let requests = match packet {
            RequestPacket::Batch(requests) if requests.len() > self.max => requests,
            small => return self.inner.call(small),
        };
        let mut rest = requests.into_iter();
        let chunks: Vec<RequestPacket> =
            chunk_sizes(rest.len(), self.max).into_iter().map(|n| RequestPacket::Batch(rest.by_ref().take(n).collect())).collect();
        // Each chunk's future sends nothing until polled, so `buffered` keeps at most
        // CHUNKS_IN_FLIGHT of them on the wire.
        let sends: Vec<_> = chunks.into_iter().map(|chunk| self.inner.clone().oneshot(chunk)).collect();
        Box::pin(async move {
            let answers: Vec<ResponsePacket> = futures_util::stream::iter(sends).buffered(CHUNKS_IN_FLIGHT).try_collect().await?;
            let mut all = Vec::new();
            for answer in answers {
                match answer {
                    ResponsePacket::Single(one) => all.push(one),
                    ResponsePacket::Batch(many) => all.extend(many),
                }
            }
            Ok(ResponsePacket::Batch(all))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_at_most_max_and_cover_everything() {
        assert_eq!(chunk_sizes(0, 1000), Vec::<usize>::new());
        assert_eq!(chunk_sizes(1000, 1000), [1000]);
        assert_eq!(chunk_sizes(1001, 1000), [1000, 1]);
        assert_eq!(chunk_sizes(2500, 1000), [1000, 1000, 500]);
        assert_eq!(chunk_sizes(3, 0), [1, 1, 1]);
    }
}

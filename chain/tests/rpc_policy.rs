//! The RPC policy of spec §7 against a stub JSON-RPC node: every retried status and code,
//! Retry-After, the doubling waits, timeouts, fallback, batch chunking and de-duplication. Time is
//! tokio's paused clock: waits are measured exactly and no test waits for real.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::stub::{Reply, StubNode, answer, ok, refused_url};
use vestibule_chain::config::NetworkConfig;
use vestibule_chain::rpc::{RpcFailure, RpcPolicy};
use vestibule_chain::{ChainConfig, ChainError, ChainService, ExpectedTransaction, NetworkId};

const NET: NetworkId = NetworkId::eip155(1);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn service(urls: &[String]) -> ChainService {
    let network = NetworkConfig { rpc_urls: urls.to_vec(), ..Default::default() };
    let config = ChainConfig { networks: [(NET.to_string(), network)].into(), ..Default::default() };
    // The reads these tests make (the gateway gives the session's whole list). No chain id check:
    // these tests count every request the stub receives.
    ChainService::builder(&config).host_reads(&["eth_blockNumber", "eth_call", "eth_getBalance"]).check_chain_ids(false).build().unwrap()
}

async fn block_number(service: &ChainService) -> Result<Value, ChainError> {
    service.request(NET, "eth_blockNumber", json!([])).await
}

/// Fails the first `failures` requests with `reply`, then answers.
fn fail_then_answer(failures: usize, reply: impl Fn() -> Reply + Send + Sync + 'static) -> impl Fn(usize, &Value) -> Reply {
    move |n, body| if n < failures { reply() } else { ok(body) }
}

#[tokio::test(start_paused = true)]
async fn each_listed_http_status_is_retried_three_times_with_doubling_waits() {
    for status in [403, 408, 413, 429, 500, 502, 503, 504] {
        let node = StubNode::start(fail_then_answer(3, move || Reply::Status { status, retry_after: None })).await;
        let service = service(&[node.url()]);
        assert_eq!(block_number(&service).await, Ok(json!("0x1")), "status {status}");
        assert_eq!(node.received().len(), 4, "status {status}: the first attempt and 3 retries");
        assert_eq!(node.gaps(), [ms(150), ms(300), ms(600)], "status {status}");
        let metrics = service.network_metrics(NET).unwrap();
        assert_eq!((metrics.requests_sent(), metrics.retries_made(), metrics.errors_of("http_status")), (4, 3, 3));
    }
}

#[tokio::test(start_paused = true)]
async fn after_three_retries_the_call_fails_with_the_status() {
    let node = StubNode::start(|_, _| Reply::Status { status: 503, retry_after: None }).await;
    let service = service(&[node.url()]);
    assert_eq!(block_number(&service).await, Err(ChainError::Transport(RpcFailure::HttpStatus { status: 503 })));
    assert_eq!(node.received().len(), 4);
    assert_eq!(block_number(&service).await.unwrap_err().to_string(), "HTTP request failed: status 503");
}

#[tokio::test(start_paused = true)]
async fn other_statuses_are_not_retried() {
    for status in [400, 401, 404, 405, 501] {
        let node = StubNode::start(move |_, _| Reply::Status { status, retry_after: None }).await;
        let service = service(&[node.url()]);
        assert_eq!(block_number(&service).await, Err(ChainError::Transport(RpcFailure::HttpStatus { status })));
        assert_eq!(node.received().len(), 1, "status {status}");
    }
}

#[tokio::test(start_paused = true)]
async fn unknown_limit_exceeded_and_internal_rpc_errors_are_retried() {
    let retried: [(i64, &str); 4] =
        [(-1, "unknown error"), (-32005, "request limit"), (-32000, "daily limit exceeded"), (-32603, "internal error")];
    for (code, message) in retried {
        let node = StubNode::start(move |n, body| {
            Reply::Json(answer(body, |_| if n < 2 { Err((code, message.to_string())) } else { Ok(json!("0x7")) }))
        })
        .await;
        let service = service(&[node.url()]);
        assert_eq!(block_number(&service).await, Ok(json!("0x7")), "{code} {message}");
        assert_eq!(node.gaps(), [ms(150), ms(300)], "{code} {message}");
        assert_eq!(service.network_metrics(NET).unwrap().errors_of("rpc_error"), 2);
    }
}

#[tokio::test(start_paused = true)]
async fn other_rpc_errors_are_answers_not_retried() {
    let node = StubNode::start(|_, body| Reply::Json(answer(body, |_| Err((3, "execution reverted: no".into()))))).await;
    let service = service(&[node.url()]);
    let error = service.request(NET, "eth_call", json!([{ "to": "0x0000000000000000000000000000000000000001" }, "latest"])).await;
    assert_eq!(error, Err(ChainError::Rpc { code: 3, message: "execution reverted: no".into(), data: None }));
    assert_eq!(node.received().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_revert_is_an_answer_whatever_its_code_or_reason_says() {
    // The reason is the caller's to choose (init code can revert with any text), so a reason that
    // reads like a rate limit, under any code nodes use for reverts, must not buy retries.
    let reverts: [(i64, &str); 4] = [
        (3, "execution reverted: limit exceeded"),
        (-32000, "execution reverted: daily limit exceeded"),
        (-32603, "Error: VM Exception while processing transaction: reverted with reason string 'limit exceeded'"),
        (-32015, "Reverted 0x6c696d6974206578636565646564"),
    ];
    for (code, message) in reverts {
        let node = StubNode::start(move |_, body| Reply::Json(answer(body, |_| Err((code, message.to_string()))))).await;
        let service = service(&[node.url()]);
        let error = service.request(NET, "eth_call", json!([{ "to": "0x0000000000000000000000000000000000000001" }, "latest"])).await;
        assert_eq!(error, Err(ChainError::Rpc { code, message: message.into(), data: None }), "{code} {message}");
        assert_eq!(node.received().len(), 1, "{code} {message}: one execution on the node");
    }
}

/// A service whose answers may be at most `max_response_bytes` long.
fn service_bounded(urls: &[String], max_response_bytes: usize) -> ChainService {
    let network = NetworkConfig { rpc_urls: urls.to_vec(), ..Default::default() };
    let rpc = RpcPolicy { max_response_bytes, ..Default::default() };
    let config = ChainConfig { networks: [(NET.to_string(), network)].into(), rpc, ..Default::default() };
    ChainService::builder(&config).host_reads(&["eth_blockNumber"]).check_chain_ids(false).build().unwrap()
}

fn too_large(limit: usize) -> Result<Value, ChainError> {
    Err(ChainError::Transport(RpcFailure::BadResponse(format!("the answer is larger than {limit} bytes"))))
}

#[tokio::test(start_paused = true)]
async fn an_answer_announced_over_the_bound_is_refused_before_its_body_and_not_asked_again() {
    // The body never comes: only the refusal at the header ends the call at once.
    let node = StubNode::start(|_, _| Reply::Announced { bytes: 1 << 40 }).await;
    let fallback = StubNode::start(|_, body| ok(body)).await;
    let service = service_bounded(&[node.url(), fallback.url()], 4096);
    assert_eq!(block_number(&service).await, too_large(4096));
    assert_eq!((node.received().len(), fallback.received().len()), (1, 0), "neither retried nor sent elsewhere");
    // Under the bound, the same service answers.
    let small = StubNode::start(|_, body| ok(body)).await;
    assert_eq!(block_number(&service_bounded(&[small.url()], 4096)).await, Ok(json!("0x1")));
}

#[tokio::test]
async fn a_streamed_answer_is_refused_once_it_passes_the_bound() {
    // An answer behind 64 MiB of whitespace, without a length: refused after about 4 KiB, not
    // read whole.
    let answer_after = |padding| {
        move |_: usize, body: &Value| Reply::Chunked { padding, json: json!({ "jsonrpc": "2.0", "id": body["id"], "result": "0x1" }) }
    };
    let node = StubNode::start(answer_after(64 << 20)).await;
    let service = service_bounded(&[node.url()], 4096);
    assert_eq!(block_number(&service).await, too_large(4096));
    assert_eq!(node.received().len(), 1);
    // The same answer streamed under the bound is read.
    let under = StubNode::start(answer_after(2048)).await;
    assert_eq!(block_number(&service_bounded(&[under.url()], 4096)).await, Ok(json!("0x1")));
}

#[tokio::test(start_paused = true)]
async fn a_redirect_is_not_followed() {
    let elsewhere = StubNode::start(|_, body| ok(body)).await;
    let location = elsewhere.url();
    let node = StubNode::start(move |_, _| Reply::Redirect { status: 307, location: location.clone() }).await;
    let service = service(&[node.url()]);
    assert_eq!(block_number(&service).await, Err(ChainError::Transport(RpcFailure::HttpStatus { status: 307 })));
    assert_eq!((node.received().len(), elsewhere.received().len()), (1, 0));
}

#[tokio::test(start_paused = true)]
async fn a_retryable_rpc_error_that_persists_is_returned_as_the_nodes_answer() {
    let node = StubNode::start(|_, body| Reply::Json(answer(body, |_| Err((-32603, "internal error".into()))))).await;
    let service = service(&[node.url()]);
    assert_eq!(block_number(&service).await, Err(ChainError::Rpc { code: -32603, message: "internal error".into(), data: None }));
    assert_eq!(node.received().len(), 4);
}

#[tokio::test(start_paused = true)]
async fn a_dropped_connection_without_a_status_is_retried() {
    let node = StubNode::start(fail_then_answer(2, || Reply::Close)).await;
    let service = service(&[node.url()]);
    assert_eq!(block_number(&service).await, Ok(json!("0x1")));
    assert_eq!(node.gaps(), [ms(150), ms(300)]);
    assert_eq!(service.network_metrics(NET).unwrap().errors_of("network"), 2);
}

#[tokio::test(start_paused = true)]
async fn a_node_that_is_down_fails_quickly_with_a_typed_error() {
    let service = service(&[refused_url()]);
    let started = tokio::time::Instant::now();
    let error = block_number(&service).await.unwrap_err();
    assert!(matches!(error, ChainError::Transport(RpcFailure::Network(_))), "{error:?}");
    assert!(error.to_string().starts_with("HTTP request failed"), "{error}");
    // Four refused connections and the three waits between them, nothing more.
    assert_eq!(started.elapsed(), ms(150 + 300 + 600));
    assert_eq!(service.network_metrics(NET).unwrap().requests_sent(), 4);
}

#[tokio::test(start_paused = true)]
async fn retry_after_in_seconds_is_honoured() {
    let node = StubNode::start(fail_then_answer(1, || Reply::Status { status: 429, retry_after: Some("2".into()) })).await;
    let service = service(&[node.url()]);
    assert_eq!(block_number(&service).await, Ok(json!("0x1")));
    assert_eq!(node.gaps(), [Duration::from_secs(2)]);
}

#[tokio::test(start_paused = true)]
async fn retry_after_as_an_http_date_is_honoured() {
    // The date is wall-clock time (the policy reads SystemTime), with whole-second resolution:
    // five seconds ahead asks for between four and five seconds.
    let node = StubNode::start(fail_then_answer(1, || {
        let when = std::time::SystemTime::now() + Duration::from_secs(5);
        Reply::Status { status: 503, retry_after: Some(httpdate::fmt_http_date(when)) }
    }))
    .await;
    let service = service(&[node.url()]);
    assert_eq!(block_number(&service).await, Ok(json!("0x1")));
    let gap = node.gaps()[0];
    assert!(gap > ms(3_900) && gap <= ms(5_000), "{gap:?}");
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_beyond_the_cap_moves_on_to_the_next_endpoint_at_once() {
    let busy = StubNode::start(|_, _| Reply::Status { status: 429, retry_after: Some("3600".into()) }).await;
    let spare = StubNode::start(|_, body| ok(body)).await;
    let service = service(&[busy.url(), spare.url()]);
    let started = tokio::time::Instant::now();
    assert_eq!(block_number(&service).await, Ok(json!("0x1")));
    assert_eq!((busy.received().len(), spare.received().len()), (1, 1));
    assert_eq!(started.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn an_exhausted_endpoint_falls_back_to_the_next() {
    let failing = StubNode::start(|_, _| Reply::Status { status: 502, retry_after: None }).await;
    let spare = StubNode::start(|_, body| ok(body)).await;
    let service = service(&[failing.url(), spare.url()]);
    assert_eq!(block_number(&service).await, Ok(json!("0x1")));
    assert_eq!((failing.received().len(), spare.received().len()), (4, 1));
}

#[tokio::test(start_paused = true)]
async fn a_down_endpoint_falls_back_to_the_next() {
    let spare = StubNode::start(|_, body| ok(body)).await;
    let service = service(&[refused_url(), spare.url()]);
    assert_eq!(block_number(&service).await, Ok(json!("0x1")));
    assert_eq!(spare.received().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_attempt_times_out_after_ten_seconds_and_is_retried() {
    let node = StubNode::start(fail_then_answer(1, || Reply::Hang)).await;
    let service = service(&[node.url()]);
    assert_eq!(block_number(&service).await, Ok(json!("0x1")));
    assert_eq!(node.gaps(), [Duration::from_secs(10) + ms(150)]);
    assert_eq!(service.network_metrics(NET).unwrap().errors_of("timeout"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_hung_endpoint_falls_back_to_the_next_after_one_attempt() {
    let hung = StubNode::start(|_, _| Reply::Hang).await;
    let spare = StubNode::start(|_, body| ok(body)).await;
    let service = service(&[hung.url(), spare.url()]);
    let started = tokio::time::Instant::now();
    assert_eq!(block_number(&service).await, Ok(json!("0x1")));
    assert_eq!(started.elapsed(), Duration::from_secs(10), "one attempt's timeout, then the spare");
    assert_eq!((hung.received().len(), spare.received().len()), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_hung_node_gives_a_timeout_when_the_call_time_is_up() {
    let node = StubNode::start(|_, _| Reply::Hang).await;
    let service = service(&[node.url()]);
    let started = tokio::time::Instant::now();
    assert_eq!(block_number(&service).await, Err(ChainError::Transport(RpcFailure::Timeout)));
    assert_eq!(started.elapsed(), Duration::from_secs(30), "the default call timeout");
    // 10 s, 150 ms, 10 s, 300 ms, then the third attempt gets what is left of the 30 s.
    assert_eq!(node.gaps(), [Duration::from_secs(10) + ms(150), Duration::from_secs(10) + ms(300)]);
    assert_eq!(block_number(&service).await.unwrap_err().to_string(), "request timed out");
}

#[tokio::test(start_paused = true)]
async fn batches_larger_than_1000_are_sent_in_chunks() {
    let node = StubNode::start(|_, body| Reply::Json(answer(body, |request| Ok(request["params"][0].clone())))).await;
    let service = service(&[node.url()]);
    let client = service.client(NET).unwrap();
    let mut batch = client.new_batch();
    let waiters: Vec<_> = (0..2500u64).map(|i| batch.add_call::<_, u64>("eth_getBlockTransactionCountByNumber", &(i,)).unwrap()).collect();
    batch.send().await.unwrap();
    for (i, waiter) in waiters.into_iter().enumerate() {
        assert_eq!(waiter.await.unwrap(), i as u64);
    }
    let mut sizes: Vec<_> = node.received().iter().map(|r| r.batch_len().unwrap()).collect();
    sizes.sort();
    assert_eq!(sizes, [500, 1000, 1000]);
}

#[tokio::test(start_paused = true)]
async fn a_receipt_that_never_comes_is_asked_for_31_times_in_two_minutes_not_120() {
    // Review finding: a wallet can answer a send with any hash, and one that never mines was
    // polled every second for the whole 2 minutes.
    let node = StubNode::start(|_, body| Reply::Json(answer(body, |_| Ok(Value::Null)))).await;
    let service = service(&[node.url()]);
    let hash = alloy::primitives::B256::repeat_byte(0x42);
    let started = tokio::time::Instant::now();
    let outcome = service.receipt(NET, hash, Duration::from_secs(120), &ExpectedTransaction::default()).await;
    assert_eq!(outcome, Ok(vestibule_chain::ReceiptOutcome::NotYetMined));
    assert_eq!(started.elapsed(), Duration::from_secs(120));
    assert_eq!(node.received().len(), 31);
    let gaps: Vec<u64> = node.gaps().iter().map(|g| g.as_secs()).collect();
    assert_eq!(gaps[..12], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2], "every second at first");
    assert_eq!(gaps.last(), Some(&8));
}

#[tokio::test(start_paused = true)]
async fn a_batch_of_many_chunks_has_at_most_four_of_them_at_the_node_at_once() {
    // Review finding: every chunk of a batch was sent at the same moment (20 HTTP batches of 1,000
    // calls in flight for one activity page).
    let node = StubNode::start(|_, body| {
        Reply::Delayed(Duration::from_secs(1), Box::new(Reply::Json(answer(body, |request| Ok(request["params"][0].clone())))))
    })
    .await;
    let service = service(&[node.url()]);
    let client = service.client(NET).unwrap();
    let mut batch = client.new_batch();
    let waiters: Vec<_> = (0..9500u64).map(|i| batch.add_call::<_, u64>("eth_getBlockTransactionCountByNumber", &(i,)).unwrap()).collect();
    batch.send().await.unwrap();
    for (i, waiter) in waiters.into_iter().enumerate() {
        assert_eq!(waiter.await.unwrap(), i as u64, "answers in order");
    }
    // Each answer takes 1 s: the chunks arrive in waves, one wave a second.
    let received = node.received();
    let start = received[0].at;
    let mut per_second = std::collections::BTreeMap::<u64, usize>::new();
    for r in &received {
        *per_second.entry((r.at - start).as_secs()).or_default() += 1;
    }
    assert_eq!(per_second.into_values().collect::<Vec<_>>(), [4, 4, 2], "10 chunks, 4 at a time");
    assert_eq!(service.network_metrics(NET).unwrap().calls_sent(), 9500, "every call of every chunk counted");
}

#[tokio::test(start_paused = true)]
async fn in_a_batch_only_the_requests_with_retryable_errors_are_sent_again() {
    let node = StubNode::start(|n, body| {
        Reply::Json(answer(body, |request| match (n, request["params"][0].as_u64()) {
            (0, Some(1)) => Err((-32005, "limit exceeded".into())),
            (_, Some(i)) => Ok(json!(i * 10)),
            _ => Err((-32602, "bad".into())),
        }))
    })
    .await;
    let service = service(&[node.url()]);
    let client = service.client(NET).unwrap();
    let mut batch = client.new_batch();
    let waiters: Vec<_> = (0..3u64).map(|i| batch.add_call::<_, u64>("eth_getBlockTransactionCountByNumber", &(i,)).unwrap()).collect();
    batch.send().await.unwrap();
    let mut answers = vec![];
    for waiter in waiters {
        answers.push(waiter.await.unwrap());
    }
    assert_eq!(answers, [0, 10, 20]);
    let received = node.received();
    assert_eq!(received.iter().map(|r| r.batch_len()).collect::<Vec<_>>(), [Some(3), Some(1)]);
    assert_eq!(received[1].body[0]["params"][0], 1);
}

#[tokio::test(start_paused = true)]
async fn identical_concurrent_calls_make_one_upstream_call() {
    let node = StubNode::start(|_, body| Reply::Delayed(ms(50), Box::new(ok(body)))).await;
    let service = service(&[node.url()]);
    let params = json!(["0x70997970C51812dc3A010C7d01b50e0d17dc79C8", "latest"]);
    let calls = (0..100).map(|_| {
        let service = service.clone();
        let params = params.clone();
        tokio::spawn(async move { service.request(NET, "eth_getBalance", params).await })
    });
    for result in futures_util::future::join_all(calls).await {
        assert_eq!(result.unwrap(), Ok(json!("0x1")));
    }
    assert_eq!(node.received().len(), 1);
    assert_eq!(service.network_metrics(NET).unwrap().deduplicated_calls(), 99);

    // Different params are different calls; a call after completion goes upstream again.
    let other = json!(["0x0000000000000000000000000000000000000001", "latest"]);
    let (a, b) = tokio::join!(service.request(NET, "eth_getBalance", params.clone()), service.request(NET, "eth_getBalance", other));
    assert!(a.is_ok() && b.is_ok());
    assert_eq!(node.received().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_shared_failure_reaches_every_caller() {
    let node = StubNode::start(|_, _| Reply::Delayed(ms(10), Box::new(Reply::Status { status: 404, retry_after: None }))).await;
    let service = service(&[node.url()]);
    let (a, b) = tokio::join!(block_number(&service), block_number(&service));
    assert_eq!(a, Err(ChainError::Transport(RpcFailure::HttpStatus { status: 404 })));
    assert_eq!(a, b);
    assert_eq!(node.received().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn methods_outside_the_safe_list_never_reach_the_node() {
    let node = StubNode::start(|_, body| ok(body)).await;
    let service = service(&[node.url()]);
    let refused = service.request(NET, "eth_sendTransaction", json!([{}])).await.unwrap_err();
    assert_eq!(refused.to_string(), "Requested RPC call is not allowed");
    assert_eq!(
        service.request(NetworkId::eip155(5), "eth_blockNumber", json!([])).await,
        Err(ChainError::UnsupportedNetwork(NetworkId::eip155(5)))
    );
    assert!(node.received().is_empty());
}

#[tokio::test(start_paused = true)]
async fn metrics_are_registered_per_network() {
    let node = StubNode::start(fail_then_answer(1, || Reply::Status { status: 500, retry_after: None })).await;
    let service = service(&[node.url()]);
    block_number(&service).await.unwrap();
    let mut registry = prometheus_client::registry::Registry::default();
    service.metrics().register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for line in [
        r#"vestibule_chain_rpc_requests_total{network="eip155:1"} 2"#,
        r#"vestibule_chain_rpc_retries_total{network="eip155:1"} 1"#,
        r#"vestibule_chain_rpc_errors_total{network="eip155:1",kind="http_status"} 1"#,
        r#"vestibule_chain_rpc_latency_seconds_count{network="eip155:1"} 2"#,
    ] {
        assert!(text.contains(line), "missing {line} in\n{text}");
    }
}

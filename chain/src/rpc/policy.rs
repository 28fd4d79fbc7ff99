//! The JSON-RPC policy of the spec (§7 Chain RPC) as pure decisions: which failures are worth
//! another attempt, how long to wait before it, and when to give up on an endpoint and fall back to
//! the next. The service in `retry.rs` is the shell that performs them.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

/// The numbers of the policy. [`RpcPolicy::default`] is the spec's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RpcPolicy {
    /// How long one HTTP attempt may take, body included.
    #[serde(with = "humantime_serde")]
    pub attempt_timeout: Duration,
    /// Retries after the first attempt, per endpoint.
    pub max_retries: u32,
    /// The wait before the first retry; each further retry waits twice as long.
    #[serde(with = "humantime_serde")]
    pub base_delay: Duration,
    /// The longest `Retry-After` that is honoured by waiting. An endpoint that asks for more is
    /// given up for this call, and the next endpoint is tried.
    #[serde(with = "humantime_serde")]
    pub max_retry_after: Duration,
    /// A bound on one call over every attempt, wait and endpoint, so a session is never left
    /// waiting on hung nodes for longer than this. `None`: bounded only by the numbers above.
    #[serde(with = "humantime_serde")]
    pub call_timeout: Option<Duration>,
    /// The most requests sent in one JSON-RPC batch; larger batches are sent in chunks.
    pub max_batch_size: usize,
    /// The most distinct requests that can be in flight and shared at once; beyond it requests are
    /// sent without de-duplication.
    pub dedup_capacity: usize,
    /// The largest answer read from an endpoint, in bytes. A larger one is refused as it arrives
    /// (not read whole first) and not asked for again: it would be as large from any endpoint.
    pub max_response_bytes: usize,
}

impl Default for RpcPolicy {
    fn default() -> Self {
        Self {
            attempt_timeout: Duration::from_secs(10),
            max_retries: 3,
            base_delay: Duration::from_millis(150),
            max_retry_after: Duration::from_secs(10),
            call_timeout: Some(Duration::from_secs(30)),
            max_batch_size: 1000,
            dedup_capacity: 8192,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }
}

/// 16 MiB: a full block with its transactions, or a provider's largest page of logs, fits.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// HTTP statuses that say "try again" (spec §7).
pub const RETRYABLE_STATUSES: [u16; 8] = [403, 408, 413, 429, 500, 502, 503, 504];

/// JSON-RPC error codes that say "try again": -1 (unknown), -32005 (limit exceeded) and -32603
/// (internal error).
pub const RETRYABLE_RPC_CODES: [i64; 3] = [-1, -32005, -32603];

pub fn is_retryable_status(status: u16) -> bool {
    RETRYABLE_STATUSES.contains(&status)
}

/// The JSON-RPC code of a revert (EIP-1474's "execution error", as geth and anvil report reverts).
pub const EXECUTION_REVERTED_CODE: i64 = 3;

/// What an execution's own failure says, in the words of geth, anvil (revm), hardhat and
/// nethermind: deterministic, so never worth another attempt.
/// (revm's names, as anvil writes them in "EVM error …", run together: `OutOfGas`,
/// `InvalidFEOpcode`, `OpcodeNotFound`, `StackUnderflow`, `InvalidJump`; not "EVM error" alone,
/// which also covers its database's failures, transient in a forked node.)
const EXECUTION_FAILURES: &[&str] = &[
    "revert",
    "out of gas",
    "outofgas",
    "invalid opcode",
    "invalidfeopcode",
    "opcodenotfound",
    "stack underflow",
    "stackunderflow",
    "stack overflow",
    "stackoverflow",
    "invalid jump",
    "invalidjump",
];

/// Whether a JSON-RPC error is transient. Nodes and providers report rate limits under several
/// codes, so "limit exceeded" in the message counts as much as the code. An execution's own
/// failure never does, whatever its code: a revert is the contract's answer, and its text is
/// whatever the caller's transaction or init code chose ("execution reverted: limit exceeded"
/// would otherwise buy four full executions on the node per call); running out of gas or an
/// invalid opcode (anvil's -32603 "EVM error OutOfGas") is as deterministic (an outside attack
/// bought four 30M-gas executions per call with them).
pub fn is_retryable_rpc_error(code: i64, message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    // Reverts: code 3 (geth, anvil), -32000 "execution reverted" (geth without data), -32603
    // "…reverted with reason string…" (hardhat), "Reverted 0x…" (nethermind).
    if code == EXECUTION_REVERTED_CODE || EXECUTION_FAILURES.iter().any(|failure| message.contains(failure)) {
        return false;
    }
    RETRYABLE_RPC_CODES.contains(&code) || message.contains("limit exceeded")
}

/// The wait before retry number `retry` (0 for the first retry): `base × 2^retry`.
pub fn backoff_delay(base: Duration, retry: u32) -> Duration {
    base.saturating_mul(1u32.checked_shl(retry).unwrap_or(u32::MAX))
}

/// The wait a `Retry-After` header asks for: delay-seconds or an HTTP date (RFC 9110 §10.2.3),
/// measured from `now`. A date in the past asks for no wait. Anything else is ignored.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Saturate absurd values; the cap is applied where the wait is decided.
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// What went wrong with one attempt on one endpoint, as far as the policy cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptFailure {
    /// The endpoint answered with a non-success HTTP status.
    Status { status: u16, retry_after: Option<Duration> },
    /// The endpoint answered, but with a JSON-RPC error for (some of) the requests.
    Rpc { code: i64, message: String },
    /// No answer with a status: refused or reset connection, unreadable body.
    NoStatus,
    /// No answer within the attempt's time.
    TimedOut,
    /// The answer was larger than `max_response_bytes`.
    TooLarge,
    /// Not sent: the endpoint serves another chain than the network's (decisions 0914, 0915).
    WrongChain,
}

impl AttemptFailure {
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Status { status, .. } => is_retryable_status(*status),
            Self::Rpc { code, message } => is_retryable_rpc_error(*code, message),
            Self::NoStatus | Self::TimedOut => true,
            Self::TooLarge | Self::WrongChain => false,
        }
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    /// Wait this long, then try the same endpoint again.
    RetryAfter(Duration),
    /// Give this endpoint up for this call; try the next one, if any.
    NextEndpoint,
    /// The call's time is up.
    GiveUp,
}

/// The decision after `failure`, when `retries_done` retries have already been made on this
/// endpoint, `remaining` is what is left of the call's time (if it is bounded), and
/// `another_endpoint` says whether the network has an endpoint after this one.
///
/// - A failure the spec does not retry moves on to the next endpoint at once, except an answer
///   over the size bound, which gives up: another endpoint's answer would be as large.
/// - A timed-out attempt moves on to the next endpoint when there is one: a hung node would
///   otherwise spend the call's whole time on its retries, and fallback would never happen. The
///   last endpoint is retried as usual.
/// - After `max_retries` retries, the next endpoint.
/// - The wait is the doubling backoff, or the server's `Retry-After` when it asks for longer;
///   one that asks for more than `max_retry_after` moves on instead of stalling the call.
/// - A wait that would outlast the call's time gives up.
pub fn next_step(
    policy: &RpcPolicy,
    failure: &AttemptFailure,
    retries_done: u32,
    remaining: Option<Duration>,
    another_endpoint: bool,
) -> NextStep {
    if remaining.is_some_and(|r| r.is_zero()) || *failure == AttemptFailure::TooLarge {
        return NextStep::GiveUp;
    }
    if !failure.is_retryable() || retries_done >= policy.max_retries {
        return NextStep::NextEndpoint;
    }
    if *failure == AttemptFailure::TimedOut && another_endpoint {
        return NextStep::NextEndpoint;
    }
    let backoff = backoff_delay(policy.base_delay, retries_done);
    let delay = match failure {
        AttemptFailure::Status { retry_after: Some(asked), .. } if *asked > policy.max_retry_after => {
            return NextStep::NextEndpoint;
        }
        AttemptFailure::Status { retry_after: Some(asked), .. } => backoff.max(*asked),
        _ => backoff,
    };
    match remaining {
        Some(remaining) if delay >= remaining => NextStep::GiveUp,
        _ => NextStep::RetryAfter(delay),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn status(status: u16) -> AttemptFailure {
        AttemptFailure::Status { status, retry_after: None }
    }

    #[test]
    fn the_spec_defaults() {
        let p = RpcPolicy::default();
        assert_eq!(p.attempt_timeout, Duration::from_secs(10));
        assert_eq!(p.max_retries, 3);
        assert_eq!(p.base_delay, MS(150));
        assert_eq!(p.max_batch_size, 1000);
        assert_eq!(p.dedup_capacity, 8192);
    }

    #[test]
    fn retries_exactly_the_listed_statuses() {
        for s in 100..600u16 {
            assert_eq!(is_retryable_status(s), [403, 408, 413, 429, 500, 502, 503, 504].contains(&s), "status {s}");
        }
    }

    #[test]
    fn retries_unknown_limit_exceeded_and_internal_rpc_errors() {
        assert!(is_retryable_rpc_error(-1, "unknown"));
        assert!(is_retryable_rpc_error(-32005, "whatever"));
        assert!(is_retryable_rpc_error(-32000, "daily request Limit Exceeded"));
        assert!(is_retryable_rpc_error(-32603, "internal error"));
        assert!(!is_retryable_rpc_error(-32000, "execution reverted"));
        assert!(!is_retryable_rpc_error(-32601, "method not found"));
        assert!(!is_retryable_rpc_error(-32602, "invalid params"));
        assert!(!is_retryable_rpc_error(3, "execution reverted: no"));
        // An execution's own failure is as deterministic as a revert.
        assert!(!is_retryable_rpc_error(-32603, "EVM error OutOfGas"));
        assert!(!is_retryable_rpc_error(-32603, "EVM error InvalidFEOpcode"));
        assert!(!is_retryable_rpc_error(-32000, "out of gas"));
        assert!(!is_retryable_rpc_error(-32000, "invalid opcode: INVALID"));
        assert!(is_retryable_rpc_error(-32603, "EVM error Database(fetch failed)"), "a forked node's database: transient");
    }

    #[test]
    fn network_failures_without_a_status_are_retried() {
        assert!(AttemptFailure::NoStatus.is_retryable());
        assert!(AttemptFailure::TimedOut.is_retryable());
    }

    #[test]
    fn a_timeout_moves_on_when_there_is_another_endpoint_and_is_retried_on_the_last() {
        let p = RpcPolicy::default();
        assert_eq!(next_step(&p, &AttemptFailure::TimedOut, 0, None, true), NextStep::NextEndpoint);
        assert_eq!(next_step(&p, &AttemptFailure::TimedOut, 0, None, false), NextStep::RetryAfter(MS(150)));
        // Other failures without a status are retried on the same endpoint either way.
        assert_eq!(next_step(&p, &AttemptFailure::NoStatus, 0, None, true), NextStep::RetryAfter(MS(150)));
    }

    #[test]
    fn backoff_doubles_from_the_base() {
        let base = MS(150);
        assert_eq!([0, 1, 2, 3].map(|r| backoff_delay(base, r)), [MS(150), MS(300), MS(600), MS(1200)]);
        // Far retries saturate instead of overflowing (the policy never gets there: max_retries).
        assert!(backoff_delay(base, 40) > Duration::from_secs(1_000_000));
    }

    #[test]
    fn three_retries_with_doubling_waits_then_the_next_endpoint() {
        let p = RpcPolicy::default();
        let steps: Vec<_> = (0..5).map(|r| next_step(&p, &status(503), r, None, false)).collect();
        assert_eq!(
            steps,
            [
                NextStep::RetryAfter(MS(150)),
                NextStep::RetryAfter(MS(300)),
                NextStep::RetryAfter(MS(600)),
                NextStep::NextEndpoint,
                NextStep::NextEndpoint
            ]
        );
    }

    #[test]
    fn a_failure_that_is_not_retried_moves_on_at_once() {
        let p = RpcPolicy::default();
        assert_eq!(next_step(&p, &status(404), 0, None, false), NextStep::NextEndpoint);
        let reverted = AttemptFailure::Rpc { code: 3, message: "execution reverted".into() };
        assert_eq!(next_step(&p, &reverted, 0, None, false), NextStep::NextEndpoint);
    }

    #[test]
    fn retry_after_is_honoured_when_longer_than_the_backoff() {
        let p = RpcPolicy::default();
        let asked = |secs| AttemptFailure::Status { status: 429, retry_after: Some(Duration::from_secs(secs)) };
        assert_eq!(next_step(&p, &asked(2), 0, None, false), NextStep::RetryAfter(Duration::from_secs(2)));
        // Zero asks for nothing more than the backoff.
        assert_eq!(next_step(&p, &asked(0), 1, None, false), NextStep::RetryAfter(MS(300)));
        // Up to the cap, the server's word; beyond it, the next endpoint rather than a stalled call.
        assert_eq!(next_step(&p, &asked(10), 0, None, false), NextStep::RetryAfter(Duration::from_secs(10)));
        assert_eq!(next_step(&p, &asked(11), 0, None, false), NextStep::NextEndpoint);
    }

    #[test]
    fn a_wait_past_the_call_deadline_gives_up() {
        let p = RpcPolicy::default();
        assert_eq!(next_step(&p, &status(503), 0, Some(MS(151)), false), NextStep::RetryAfter(MS(150)));
        assert_eq!(next_step(&p, &status(503), 0, Some(MS(150)), false), NextStep::GiveUp);
        assert_eq!(next_step(&p, &status(503), 0, Some(Duration::ZERO), false), NextStep::GiveUp);
    }

    #[test]
    fn retry_after_in_seconds_or_as_an_http_date() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after(" 3 ", now), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:49:40 GMT", now), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("99999999999999999999999", now), Some(Duration::from_secs(u64::MAX)));
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(parse_retry_after("1.5", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("", now), None);
    }
}

//! Property tests of the log's core promises, on a real (durable) sled log.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::{new_session, temp_log};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};
use vestibule_store::{Envelope, EventLog, NewEvent, SessionId, StoreError};

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        ".{0,20}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn arb_event() -> impl Strategy<Value = NewEvent> {
    (any::<u64>(), "[a-z]{1,8}(\\.[a-z]{1,8})?", 0u32..5, proptest::option::of(".{0,12}"), arb_json()).prop_map(
        |(time_ms, event_type, schema_version, correlation_id, payload)| NewEvent {
            time_ms,
            event_type,
            schema_version,
            correlation_id,
            checksum: None,
            payload: payload.into(),
        },
    )
}

/// One step: append `events` to session `session % 3`, with the right expected seq, or (when
/// `skew` is non-zero) a wrong one.
#[derive(Debug, Clone)]
struct Step {
    session: usize,
    skew: i8,
    events: Vec<NewEvent>,
}

fn arb_steps() -> impl Strategy<Value = Vec<Step>> {
    let step = (0usize..3, prop_oneof![6 => Just(0i8), 1 => -2i8..=2], prop::collection::vec(arb_event(), 1..5))
        .prop_map(|(session, skew, events)| Step { session, skew, events });
    prop::collection::vec(step, 1..16)
}

#[test]
fn seqs_are_contiguous_and_reads_return_exactly_what_was_appended() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (_dir, log) = temp_log();
    let mut runner = TestRunner::new(Config { cases: 64, ..Config::default() });
    runner
        .run(&arb_steps(), |steps| {
            rt.block_on(async {
                let sessions: Vec<SessionId> = (0..3).map(|_| SessionId::random()).collect();
                let mut model: HashMap<SessionId, Vec<Envelope>> = HashMap::new();
                for s in &sessions {
                    log.create_session(*s, new_session("prop")).await.unwrap();
                    model.insert(*s, Vec::new());
                }
                for step in steps {
                    let s = sessions[step.session];
                    let len = model[&s].len() as u64;
                    let expected = len.saturating_add_signed(step.skew.into());
                    let result = log.append(s, expected, step.events.clone()).await;
                    if expected == len {
                        let outcome = result.map_err(|e| TestCaseError::fail(format!("append failed: {e}")))?;
                        let want: Vec<Envelope> =
                            step.events.into_iter().enumerate().map(|(i, e)| Envelope::from_new(s, len + 1 + i as u64, e)).collect();
                        prop_assert_eq!(outcome.seqs(), len + 1..=len + want.len() as u64);
                        model.get_mut(&s).unwrap().extend(want);
                    } else {
                        match result {
                            Err(StoreError::Conflict { expected: e, actual, .. }) => {
                                prop_assert_eq!((e, actual), (expected, len));
                            }
                            other => prop_assert!(false, "expected a conflict, got {:?}", other),
                        }
                    }
                }
                for s in &sessions {
                    let stored = log.read(*s, 1, None).await.unwrap();
                    let seqs: Vec<u64> = stored.iter().map(|e| e.seq).collect();
                    prop_assert_eq!(seqs, (1..=model[s].len() as u64).collect::<Vec<_>>());
                    prop_assert_eq!(&stored, &model[s]);
                    prop_assert_eq!(log.latest_seq(*s).await.unwrap(), model[s].len() as u64);
                    let meta = log.session_meta(*s).await.unwrap().unwrap();
                    prop_assert_eq!(meta.latest_seq, model[s].len() as u64);
                    let newest = model[s].last().map_or(meta.created_ms, |e| e.time_ms.max(meta.created_ms));
                    prop_assert_eq!(meta.last_activity_ms, newest);
                }
                Ok(())
            })
        })
        .unwrap();
}

#[test]
fn of_concurrent_appenders_with_the_same_expected_seq_exactly_one_wins() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (_dir, log) = temp_log();
    let strategy = (0u64..5, prop::collection::vec(1usize..4, 2..9));
    let mut runner = TestRunner::new(Config { cases: 48, ..Config::default() });
    runner
        .run(&strategy, |(prior, batch_sizes)| {
            rt.block_on(async {
                let s = SessionId::random();
                log.create_session(s, new_session("prop")).await.unwrap();
                if prior > 0 {
                    let events = (1..=prior).map(common::event).collect();
                    log.append(s, 0, events).await.unwrap();
                }
                let barrier = Arc::new(tokio::sync::Barrier::new(batch_sizes.len()));
                let tasks: Vec<_> = batch_sizes
                    .iter()
                    .enumerate()
                    .map(|(who, &n)| {
                        let (log, barrier) = (log.clone(), barrier.clone());
                        let events: Vec<NewEvent> =
                            (0..n).map(|i| NewEvent { payload: json!({ "who": who, "i": i }).into(), ..common::event(0) }).collect();
                        tokio::spawn(async move {
                            barrier.wait().await;
                            (who, events.clone(), log.append(s, prior, events).await)
                        })
                    })
                    .collect();
                let mut winners = Vec::new();
                let mut losers = Vec::new();
                for t in tasks {
                    let (who, events, result) = t.await.unwrap();
                    match result {
                        Ok(outcome) => winners.push((who, events, outcome)),
                        Err(StoreError::Conflict { expected, actual, .. }) => losers.push((expected, actual)),
                        Err(e) => prop_assert!(false, "unexpected error {e}"),
                    }
                }
                prop_assert_eq!(winners.len(), 1, "exactly one append wins");
                let (_, events, outcome) = winners.pop().unwrap();
                let last = prior + events.len() as u64;
                prop_assert_eq!(outcome.last_seq, last);
                for (expected, actual) in losers {
                    prop_assert_eq!((expected, actual), (prior, last), "losers see the winner's seq");
                }
                let stored = log.read(s, prior + 1, None).await.unwrap();
                let want: Vec<Envelope> = outcome.seqs().zip(events).map(|(seq, e)| Envelope::from_new(s, seq, e)).collect();
                prop_assert_eq!(stored, want);
                prop_assert_eq!(log.latest_seq(s).await.unwrap(), last);
                Ok(())
            })
        })
        .unwrap();
}

//! Regions: which parts of the state an event may change is decided by its type
//! (`Event::regions`), and the runtime serializes, hashes and diffs only those. Over random command
//! sequences (with ticks and contract-check verdicts) this proves, for every event:
//! - every region outside `event.regions()` is byte for byte the same before and after (and is the
//!   same allocation: copy-on-write did not copy it);
//! - the state a decision reaches (`decide_evolved`, which the runtime commits) is the fold of
//!   `evolve` over its events;
//! - the region-aware `evolve` gives exactly the state of running every machine and every
//!   derivation on every event (`evolve_every_machine`, the old `evolve`);
//! - the canonical JSON assembled from per-region bytes, updated only for the touched regions, is
//!   the whole state's canonical JSON, so the hash is the same one clients and replay check;
//! - the region patch applied to the state before gives the state after, and a client mirror
//!   that re-serializes only the regions a patch names computes the server's hash.

use std::sync::Arc;

use proptest::prelude::*;
use rand::SeedableRng;
use vestibule_actors::decider::Ctx;
use vestibule_actors::model::options::{SessionOptions, SocialProvider};
use vestibule_actors::session::wire::{self, CanonicalState, StateMirror};
use vestibule_actors::session::{self, Event, Region, Regions, SessionState};
use vestibule_actors::testing::{
    T0, embedded_options, multichain_options, random_step, sign_in_options, started, started_embedded, started_serving, started_with,
};

/// Whether two states hold the same allocation for `region` (untouched by copy-on-write).
fn same_allocation(a: &SessionState, b: &SessionState, region: Region) -> bool {
    match region {
        Region::ConnectView => Arc::ptr_eq(&a.connect_view, &b.connect_view),
        Region::Connection => Arc::ptr_eq(&a.connection, &b.connection),
        Region::Modal => Arc::ptr_eq(&a.modal, &b.modal),
        Region::Networks => Arc::ptr_eq(&a.networks, &b.networks),
        Region::Options => Arc::ptr_eq(&a.options, &b.options),
        Region::Requests => Arc::ptr_eq(&a.requests, &b.requests),
        Region::Router => Arc::ptr_eq(&a.router, &b.router),
        Region::Siwx => Arc::ptr_eq(&a.siwx, &b.siwx),
        Region::Toasts => Arc::ptr_eq(&a.toasts, &b.toasts),
        Region::Activity => Arc::ptr_eq(&a.activity, &b.activity),
        Region::Balances => Arc::ptr_eq(&a.balances, &b.balances),
        Region::ChainService => Arc::ptr_eq(&a.chain_service, &b.chain_service),
        Region::NetworkSwitch => Arc::ptr_eq(&a.network_switch, &b.network_switch),
        Region::Send => Arc::ptr_eq(&a.send, &b.send),
        Region::HostRequests => Arc::ptr_eq(&a.host_requests, &b.host_requests),
        Region::Embedded => Arc::ptr_eq(&a.embedded, &b.embedded),
        // Plain values: compared by their bytes only.
        Region::Origin | Region::Project | Region::Started => true,
    }
}

fn check_run(seed: u64, steps: usize) -> Result<usize, String> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let start = match seed % 5 {
        4 => started_embedded(embedded_options(vec![SocialProvider::Google, SocialProvider::Discord])),
        0 => started(),
        2 => started_serving(SessionOptions::default()),
        1 => started_with(sign_in_options(false)),
        _ => started_with(sign_in_options(true)),
    };
    let mut state = start.iter().fold(SessionState::default(), session::evolve);
    let mut reference = start.iter().fold(SessionState::default(), session::evolve_every_machine);
    let mut canonical = CanonicalState::of(&state);
    let mut mirror = StateMirror::new(wire::to_value(&state));
    let mut now = T0;
    let mut events_checked = 0;
    for _ in 0..steps {
        let (command, at) = random_step(&mut rng, &state, now);
        now = at;
        let nonce = format!("RegionNonce{now}");
        let ctx = Ctx { now_ms: now, options: &state.options, nonce: &nonce };
        let Ok(session::Evolved { events, state: decided }) = session::decide_evolved(&state, command.clone(), &ctx) else { continue };
        let before_decision = state.clone();
        let mut touched = Regions::NONE;
        for event in &events {
            // What the log stores and the diff carries: the payload written once, as text.
            if event.payload_json().to_value() != event.payload() {
                return Err(format!("{}: the payload's text is not its value", event.type_name()));
            }
            let before = state.clone();
            let before_bytes = CanonicalState::of(&before);
            state = session::evolve(state, event);
            reference = session::evolve_every_machine(reference, event);
            if state != reference {
                return Err(format!("{} after {command:?}: the region-aware evolve differs from every machine's", event.type_name()));
            }
            let after_bytes = CanonicalState::of(&state);
            for region in Region::ALL {
                if event.regions().contains(region) {
                    continue;
                }
                if before_bytes.region(region) != after_bytes.region(region) {
                    return Err(format!("{} changed the {} region, which it does not declare", event.type_name(), region.key()));
                }
                if !same_allocation(&before, &state, region) {
                    return Err(format!("{} copied the untouched {} region", event.type_name(), region.key()));
                }
            }
            touched = touched.union(event.regions());
            events_checked += 1;
        }
        // The runtime takes the state the decision reached instead of folding its events again.
        if decided != state {
            return Err(format!("after {command:?}: the state the decision reached is not the fold of its events"));
        }
        // What the runtime does per decision: update the touched regions, hash, diff.
        let changed = canonical.update(&state, touched);
        let whole = wire::canonical_json(&wire::to_value(&state));
        if canonical.to_json() != whole.as_bytes() {
            return Err(format!("after {command:?}: the assembled canonical JSON differs from the whole state's"));
        }
        let hash = canonical.hash();
        if hash != wire::state_hash(&wire::to_value(&state)) {
            return Err(format!("after {command:?}: the hash differs from the whole state's"));
        }
        let patch: json_patch::Patch = serde_json::from_slice(&wire::patch_regions(&changed, &canonical).to_json())
            .map_err(|e| format!("after {command:?}: the patch is not a JSON Patch: {e}"))?;
        let mut patched = wire::to_value(&before_decision);
        json_patch::patch(&mut patched, &patch).map_err(|e| format!("after {command:?}: the patch does not apply: {e}"))?;
        if patched != wire::to_value(&state) {
            return Err(format!("after {command:?}: the region patch does not lead to the state"));
        }
        mirror.apply(patch).map_err(|e| format!("the mirror refused the patch: {e}"))?;
        if mirror.hash() != hash {
            return Err(format!("after {command:?}: the mirror's hash differs"));
        }
    }
    Ok(events_checked)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn events_change_only_the_regions_their_type_declares(seed in any::<u64>(), steps in 1usize..120) {
        if let Err(e) = check_run(seed, steps) {
            prop_assert!(false, "seed {}: {}", seed, e);
        }
    }
}

/// The random runs above reach every event type, so no declaration goes untested.
#[test]
fn the_random_runs_reach_every_event_type() {
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..460u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let start = if seed >= 400 {
            started_embedded(embedded_options(vec![SocialProvider::Google, SocialProvider::Discord]))
        } else if seed % 16 == 8 || seed % 8 == 4 {
            started_serving(multichain_options(None))
        } else if seed % 4 == 2 {
            started_serving(SessionOptions::default())
        } else if seed % 4 == 0 && seed % 8 != 0 {
            started_serving(SessionOptions::default())
        } else if seed % 2 == 0 {
            started()
        } else {
            started_with(sign_in_options(seed % 4 == 1))
        };
        seen.extend(start.iter().map(Event::type_name));
        let mut state = start.iter().fold(SessionState::default(), session::evolve);
        let mut now = T0;
        for _ in 0..200 {
            let (command, at) = random_step(&mut rng, &state, now);
            now = at;
            let nonce = format!("RegionNonce{now}");
            let ctx = Ctx { now_ms: now, options: &state.options, nonce: &nonce };
            if let Ok(events) = session::decide(&state, command, &ctx) {
                for e in &events {
                    seen.insert(e.type_name());
                    state = session::evolve(state, e);
                }
            }
        }
    }
    let missing: Vec<&str> = Event::type_names().iter().copied().filter(|t| !seen.contains(t)).collect();
    assert!(missing.is_empty(), "event types no random run produced: {missing:?}");
}

#[test]
fn a_state_started_with_the_same_options_hashes_like_its_canonical_json() {
    let state = started().iter().fold(SessionState::default(), session::evolve);
    let canonical = CanonicalState::of(&state);
    assert_eq!(canonical.len(), canonical.to_json().len());
    assert_eq!(canonical.hash(), wire::state_hash(&wire::to_value(&state)));
}

#[test]
fn a_mirror_that_moves_a_value_between_regions_hashes_both_again() {
    // Given a mirror of a started session
    let state = started().iter().fold(SessionState::default(), session::evolve);
    let mut mirror = StateMirror::new(wire::to_value(&state));
    assert_eq!(mirror.hash(), wire::state_hash(mirror.state()));
    // When a patch moves a value out of one region into another (the gateway's diffs never do;
    // a mirror must still follow RFC 6902)
    let key = mirror.state()["router"].as_object().unwrap().keys().next().unwrap().clone();
    let patch: json_patch::Patch =
        serde_json::from_value(serde_json::json!([{ "op": "move", "from": format!("/router/{key}"), "path": "/modal/moved" }])).unwrap();
    mirror.apply(patch).unwrap();
    // Then the hash covers both regions as they now are
    assert!(mirror.state()["router"].get(&key).is_none() && mirror.state()["modal"].get("moved").is_some());
    assert_eq!(mirror.hash(), wire::state_hash(mirror.state()));
}

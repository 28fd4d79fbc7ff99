//! Random command sequences through the session decider, steered by the fuzzer: the input bytes are
//! the random choices of the state-aware command generator the property tests use
//! (`testing::random_step`), so coverage guidance explores the flows, not the byte encoding.
//! Checked on every step: no panic; a decision is deterministic; the state survives the wire (its
//! JSON reads back as the same state, as a client's welcome would); every machine is in a state its
//! chart declares.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rand::RngCore;
use serde::Deserialize;
use vestibule_actors::chart::Statechart;
use vestibule_actors::decider::Ctx;
use vestibule_actors::machines;
use vestibule_actors::session::{self, SessionState, wire};
use vestibule_actors::testing::{T0, multichain_options, random_step, sign_in_options, started, started_with};

// Each step builds and drops a few JSON trees of the whole state: with glibc's malloc, allocation
// was a fifth of the run (docs/fuzzing.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The fuzzer's bytes as a source of randomness (zeros once they run out).
struct Choices<'a>(&'a [u8]);

impl RngCore for Choices<'_> {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.fill_bytes(&mut b);
        u32::from_le_bytes(b)
    }

    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill_bytes(&mut b);
        u64::from_le_bytes(b)
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        let n = dest.len().min(self.0.len());
        dest[..n].copy_from_slice(&self.0[..n]);
        dest[n..].fill(0);
        self.0 = &self.0[n..];
    }
}

/// Every machine's chart, built once (not per input).
static CHARTS: std::sync::LazyLock<Vec<(&'static str, Statechart)>> =
    std::sync::LazyLock::new(|| machines::ALL.iter().map(|m| (m.id, (m.chart)())).collect());

/// At most this many steps per input: long enough for connect, sign in, toasts and timers.
const MAX_STEPS: usize = 128;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let start = match mode % 5 {
        0 => started(),
        1 => started_with(sign_in_options(false)),
        2 => started_with(sign_in_options(true)),
        // Multichain sessions (Ethereum and Solana Devnet): Solana wallets, namespace switches.
        3 => started_with(multichain_options(None)),
        _ => started_with(multichain_options(Some(true))),
    };
    let mut state = start.iter().fold(SessionState::default(), session::evolve);
    let charts = &*CHARTS;
    let mut choices = Choices(rest);
    let mut now = T0;
    for step in 0..MAX_STEPS {
        if choices.0.is_empty() {
            break;
        }
        let (command, at) = random_step(&mut choices, &state, now);
        now = at;
        let nonce = format!("FuzzNonce{step:08}");
        let ctx = Ctx { now_ms: now, options: &state.options, nonce: &nonce };
        let decided = session::decide(&state, command.clone(), &ctx);
        assert_eq!(decided, session::decide(&state, command, &ctx), "a decision is deterministic");
        let Ok(events) = decided else { continue };
        state = events.iter().fold(state, session::evolve);
        let json = wire::to_value(&state);
        // Read from the borrowed value (no copy of it) and compared as typed states: equal states
        // serialize equally, and a field the JSON lost would show here too.
        let read_back = SessionState::deserialize(&json).expect("the state reads back from its JSON");
        assert_eq!(read_back, state, "the state survives the wire");
        for (id, chart) in charts {
            for (region, current) in chart.states_in(&json) {
                let declared = &chart.regions.iter().find(|r| r.id == region).expect("a chart region").states;
                assert!(declared.contains(&current), "{id}/{region}: {current:?} is not in the chart");
            }
        }
    }
});

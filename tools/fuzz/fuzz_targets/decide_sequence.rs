//! Random command sequences through the session decider, steered by the fuzzer: the input bytes are
//! the random choices of the state-aware command generator the property tests use
//! (`testing::random_step`), so coverage guidance explores the flows, not the byte encoding.
//! Checked on every step: no panic; a decision is deterministic; the regions the events did not
//! claim to touch are unchanged (what the gateway's per-region diff and hash rely on); every region
//! that changed survives the wire (its canonical JSON, as the gateway caches and diffs it, reads back
//! as the same value) and its machines are in states their charts declare. At the start and the end
//! of an input, the whole state: its canonical JSON is the region cache's and reads back as the
//! state. (A region is checked when it changes; one that did not change was checked before.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use rand::RngCore;
use vestibule_actors::decider::Ctx;
use vestibule_actors::machines;
use vestibule_actors::session::wire::{CanonicalState, to_canonical_vec};
use vestibule_actors::session::{self, Region, Regions, SessionState};
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

/// Where a chart region's state name is: the session region holding it, the JSON pointer inside
/// that region, and the names the chart declares.
struct ChartRegion {
    name: String,
    region: Region,
    pointer: String,
    declared: Vec<String>,
}

/// Every machine's chart regions, built once (not per input).
static CHART_REGIONS: std::sync::LazyLock<Vec<ChartRegion>> = std::sync::LazyLock::new(|| {
    machines::ALL
        .iter()
        .flat_map(|m| {
            (m.chart)().regions.into_iter().map(move |r| {
                let rest = r.state_path.strip_prefix('/').expect("a state path is a JSON pointer");
                let (key, pointer) = rest.split_once('/').map_or((rest, String::new()), |(k, p)| (k, format!("/{p}")));
                let region = Region::from_key(key).unwrap_or_else(|| panic!("{}: {} is in no session region", m.id, r.state_path));
                ChartRegion { name: format!("{}/{}", m.id, r.id), region, pointer, declared: r.states }
            })
        })
        .collect()
});

/// Every machine whose state is in one of `regions` is in a state its chart declares.
fn assert_in_charts(canonical: &CanonicalState, regions: Regions) {
    for region in regions.iter() {
        let mut value = None;
        for chart in CHART_REGIONS.iter().filter(|c| c.region == region) {
            let value: &serde_json::Value =
                value.get_or_insert_with(|| serde_json::from_slice(canonical.region(region)).expect("a region's JSON parses"));
            let current = value.pointer(&chart.pointer).and_then(|v| v.as_str()).unwrap_or("");
            assert!(chart.declared.iter().any(|s| s == current), "{}: {current:?} is not in the chart", chart.name);
        }
    }
}

/// Whether `region` of two states is equal (compared typed; a region the events did not touch is
/// usually the same allocation).
fn region_unchanged(a: &SessionState, b: &SessionState, region: Region) -> bool {
    fn same<T: PartialEq>(a: &std::sync::Arc<T>, b: &std::sync::Arc<T>) -> bool {
        std::sync::Arc::ptr_eq(a, b) || a == b
    }
    match region {
        Region::Activity => same(&a.activity, &b.activity),
        Region::Balances => same(&a.balances, &b.balances),
        Region::ChainService => same(&a.chain_service, &b.chain_service),
        Region::ConnectView => same(&a.connect_view, &b.connect_view),
        Region::Connection => same(&a.connection, &b.connection),
        Region::Embedded => same(&a.embedded, &b.embedded),
        Region::HostRequests => same(&a.host_requests, &b.host_requests),
        Region::Modal => same(&a.modal, &b.modal),
        Region::NetworkSwitch => same(&a.network_switch, &b.network_switch),
        Region::Networks => same(&a.networks, &b.networks),
        Region::Options => same(&a.options, &b.options),
        Region::Origin => a.origin == b.origin,
        Region::Project => a.project == b.project,
        Region::Requests => same(&a.requests, &b.requests),
        Region::Router => same(&a.router, &b.router),
        Region::Send => same(&a.send, &b.send),
        Region::Siwx => same(&a.siwx, &b.siwx),
        Region::Started => a.started == b.started,
        Region::Toasts => same(&a.toasts, &b.toasts),
    }
}

/// `region` of `state` reads back from its canonical JSON `bytes` as the same value.
fn assert_reads_back(bytes: &[u8], state: &SessionState, region: Region) {
    fn check<T: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(bytes: &[u8], value: &T, region: Region) {
        let read_back: T = serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("{region:?} does not read back from its JSON: {e}"));
        assert_eq!(&read_back, value, "{region:?} does not survive the wire");
    }
    match region {
        Region::Activity => check(bytes, &*state.activity, region),
        Region::Balances => check(bytes, &*state.balances, region),
        Region::ChainService => check(bytes, &*state.chain_service, region),
        Region::ConnectView => check(bytes, &*state.connect_view, region),
        Region::Connection => check(bytes, &*state.connection, region),
        Region::Embedded => check(bytes, &*state.embedded, region),
        Region::HostRequests => check(bytes, &*state.host_requests, region),
        Region::Modal => check(bytes, &*state.modal, region),
        Region::NetworkSwitch => check(bytes, &*state.network_switch, region),
        Region::Networks => check(bytes, &*state.networks, region),
        Region::Options => check(bytes, &*state.options, region),
        Region::Origin => check(bytes, &state.origin, region),
        Region::Project => check(bytes, &state.project, region),
        Region::Requests => check(bytes, &*state.requests, region),
        Region::Router => check(bytes, &*state.router, region),
        Region::Send => check(bytes, &*state.send, region),
        Region::Siwx => check(bytes, &*state.siwx, region),
        Region::Started => check(bytes, &state.started, region),
        Region::Toasts => check(bytes, &*state.toasts, region),
    }
}

/// The whole state: the region cache is its canonical JSON, which reads back as the state.
fn assert_whole_state(canonical: &CanonicalState, state: &SessionState) {
    let json = canonical.to_json();
    assert!(json == to_canonical_vec(state).expect("the state serializes"), "the region cache is the state's canonical JSON");
    let read_back: SessionState = serde_json::from_slice(&json).expect("the state reads back from its canonical JSON");
    assert_eq!(&read_back, state, "the state survives the wire");
}

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
    let mut canonical = CanonicalState::of(&state);
    assert_whole_state(&canonical, &state);
    assert_in_charts(&canonical, Regions::ALL);
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
        let touched = events.iter().fold(Regions::NONE, |r, e| r.union(e.regions()));
        let before = state.clone(); // the regions are shared, not copied
        state = events.iter().fold(state, session::evolve);
        let mut changed = Regions::NONE;
        for region in Region::ALL {
            let unchanged = region_unchanged(&before, &state, region);
            assert!(unchanged || touched.contains(region), "{region:?} changed, but no event claimed to touch it");
            if !unchanged {
                changed = changed.union(Regions::of(&[region]));
            }
        }
        canonical.update(&state, touched);
        for region in changed.iter() {
            assert_reads_back(canonical.region(region), &state, region);
        }
        assert_in_charts(&canonical, changed);
    }
    assert_whole_state(&canonical, &state);
});

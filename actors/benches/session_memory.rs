//! `cargo bench -p vestibule-actors --bench session_memory`: heap bytes held per idle session actor
//! (not a timed test; the figures go to docs/performance.md with this command).
//!
//! Starts `VESTIBULE_BENCH_SESSIONS` sessions (default 10,000; 50 when `cargo test` runs it, a check
//! that it still runs, not a measurement) on a real sled log, as the gateway
//! does (`Registry::create`: the session's first event, durable), stops them all, and measures the
//! live heap (a counting allocator) and the resident set while they are started again, each
//! attached to one connection link (the bounded frame channel the gateway's connection reads, with
//! the gateway's default capacity), and idle: first awake, then hibernated. The log's own memory
//! (sled's page cache) is in the baseline, so the figures are the session side only; the
//! WebSocket side (socket buffers, the connection task) is the gateway's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};

use vestibule_actors::model::options::SessionOptions;
use vestibule_actors::runtime::{Attach, ConnectionLink, HibernateNow, Inspect, ManualClock, Registry, RuntimeConfig, RuntimeMetrics};
use vestibule_actors::session::upcast::SessionUpcaster;
use vestibule_store::{EventLog, SledEventLog, StoreConfig};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live_heap() -> isize {
    LIVE.load(Ordering::Relaxed)
}

fn rss_bytes() -> isize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: isize = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4096
}

/// The gateway's default outbound queue per connection (`limits.outbound_queue`).
const OUTBOUND_QUEUE: usize = 256;

fn main() {
    // `cargo bench` passes `--bench` to a bench without libtest's harness; `cargo test` does not.
    let default = if std::env::args().any(|arg| arg == "--bench") { 10_000 } else { 50 };
    let sessions: usize = std::env::var("VESTIBULE_BENCH_SESSIONS").ok().and_then(|s| s.parse().ok()).unwrap_or(default);
    let dir = tempfile::tempdir().unwrap();
    actix::System::new().block_on(async move {
        let log: Arc<dyn EventLog> =
            Arc::new(SledEventLog::open_with_upcaster(StoreConfig::at(dir.path()), Arc::new(SessionUpcaster)).unwrap());
        let clock = Arc::new(ManualClock::at(vestibule_actors::testing::T0));
        let config = RuntimeConfig {
            passivate_after: std::time::Duration::from_secs(3600),
            hibernate_after: std::time::Duration::from_secs(3600),
            ..RuntimeConfig::default()
        };
        let registry = Registry::new(log.clone(), clock, config, Arc::new(RuntimeMetrics::default()));
        let mut ids = Vec::with_capacity(sessions);
        for chunk in 0..sessions.div_ceil(500) {
            let n = 500.min(sessions - chunk * 500);
            let created =
                futures_util::future::join_all((0..n).map(|_| registry.create("demo", "http://localhost:3000", SessionOptions::default())))
                    .await;
            ids.extend(created.into_iter().map(|r| r.unwrap().0));
        }
        registry.stop_all();
        while registry.live() > 0 {
            tokio::task::yield_now().await;
        }
        let (heap_before, rss_before) = (live_heap(), rss_bytes());

        let mut receivers = Vec::with_capacity(sessions);
        for (i, id) in ids.iter().enumerate() {
            let (link, frames, dropped) = ConnectionLink::new(i as u64, OUTBOUND_QUEUE);
            registry.session(*id).send(Attach { link, last_seq: None, new_resume_token: None }).await.unwrap().unwrap();
            receivers.push((frames, dropped));
        }
        // The welcome each connection was sent is the gateway's to write and drop.
        for (frames, _) in &mut receivers {
            while frames.try_recv().is_ok() {}
        }
        let (heap_awake, rss_awake) = (live_heap(), rss_bytes());
        for id in &ids {
            assert!(registry.session(*id).send(HibernateNow).await.unwrap());
        }
        let (heap_hibernated, rss_hibernated) = (live_heap(), rss_bytes());
        // Probe: a hibernated session still answers (and wakes).
        let probe = registry.session(ids[0]).send(Inspect).await.unwrap().unwrap();
        assert!(probe.was_hibernated && probe.connections == 1);
        assert!(heap_hibernated < heap_awake, "hibernating {sessions} sessions released no heap: {heap_awake} B then {heap_hibernated} B");

        let per = |after: isize, before: isize| (after - before) as f64 / sessions as f64;
        println!("idle session actors with one connection link each, {sessions} sessions (session side only)");
        println!("{:<12} {:>16} {:>16}", "", "heap B/session", "RSS B/session");
        println!("{:<12} {:>16.0} {:>16.0}", "awake", per(heap_awake, heap_before), per(rss_awake, rss_before));
        println!("{:<12} {:>16.0} {:>16.0}", "hibernated", per(heap_hibernated, heap_before), per(rss_hibernated, rss_before));
        drop(receivers);
    });
}

//! `cargo bench -p vestibule-store --bench store`: the event log benchmark (not a timed test).
//!
//! Prints a table, then the report as one line of JSON. Environment knobs:
//! `VESTIBULE_BENCH_DIR` (where the temporary logs go), `VESTIBULE_BENCH_SECS` (per level).

use vestibule_store::bench::{BenchOptions, run};

fn main() {
    let mut options = BenchOptions::default();
    if let Ok(dir) = std::env::var("VESTIBULE_BENCH_DIR") {
        options.dir = Some(dir.into());
    }
    if let Some(secs) = std::env::var("VESTIBULE_BENCH_SECS").ok().and_then(|s| s.parse().ok()) {
        options.secs_per_level = secs;
    }
    match run(options) {
        Ok(report) => {
            print!("{report}");
            println!("{}", serde_json::to_string(&report).expect("report serializes"));
        }
        Err(e) => {
            eprintln!("benchmark failed: {e}");
            std::process::exit(1);
        }
    }
}

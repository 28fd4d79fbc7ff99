//! `vestibule-load`: see `docs/load.md`.

use clap::Parser;

// The same allocator as the gateway: the generator shares the machine in every load run, and
// glibc's malloc was a large part of its CPU per command too.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "vestibule-load",
    version,
    about = "Simulated visitors driving real flows over WebSockets: latency percentiles, throughput, errors, seq gaps, hash mismatches; optionally SIGKILLing the gateway under load"
)]
struct Cli {
    #[command(flatten)]
    args: vestibule_load::LoadArgs,
}

fn main() {
    let Cli { args } = Cli::parse();
    let outcome = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|runtime| runtime.block_on(vestibule_load::run(args)));
    match outcome {
        Ok((report, passed)) => {
            println!("{report}");
            if !passed {
                eprintln!("load check FAILED: every session must connect, with no gap, no hash mismatch and nothing lost");
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("vestibule-load: {e:#}");
            std::process::exit(2);
        }
    }
}

//! `vestibule-fleet`: 100,000 connected sessions across as many gateway and generator processes as
//! the open-file limit requires; see `vestibule_load::fleet` and docs/performance.md.

use clap::Parser;

#[derive(Debug, Parser)]
#[command(
    name = "vestibule-fleet",
    version,
    about = "Starts nats-server, G gateways in cluster mode and P vestibule-load generators; holds every session connected and idle, then reports the gateways' resident memory per idle session"
)]
struct Cli {
    #[command(flatten)]
    args: vestibule_load::fleet::FleetArgs,
}

fn main() {
    let Cli { args } = Cli::parse();
    match vestibule_load::fleet::run(args) {
        Ok((report, passed)) => {
            println!("{report}");
            if !passed {
                eprintln!("fleet check FAILED: every session must be connected and open at the measurement, none lost while idle");
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("vestibule-fleet: {e:#}");
            std::process::exit(2);
        }
    }
}

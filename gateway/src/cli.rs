//! The `vestibule` command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::config::{GatewayConfig, Overrides};

#[derive(Debug, Parser)]
#[command(name = "vestibule", version, about = "Vestibule: a connect-wallet modal whose sessions live on the server")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the widget's WebSocket, the demo app and the HTTP endpoints.
    Serve {
        /// Address to listen on (default 127.0.0.1:8080; port 0 picks a free one).
        #[arg(long)]
        listen: Option<String>,
        /// Data directory of the event log (default ./data).
        #[arg(long)]
        data: Option<PathBuf>,
        /// TOML configuration file; `VESTIBULE_*` environment variables and these flags override it.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Directory served at / (default client/dist).
        #[arg(long)]
        static_dir: Option<PathBuf>,
    },
    /// Sign-in tools.
    Siwx {
        #[command(subcommand)]
        command: SiwxCommand,
    },
    /// Benchmarks (figures for docs/performance.md).
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// Simulated visitors driving real flows over WebSockets: latency percentiles, throughput,
    /// errors, seq gaps, hash mismatches; optionally SIGKILLing the gateway under load.
    Load(crate::load::LoadArgs),
    /// Regenerate the client's TypeScript definitions and statecharts from the Rust types.
    Codegen {
        /// Output directory.
        #[arg(long, default_value = "client/src/generated")]
        out: PathBuf,
        /// Only check that the directory is current; exit 1 if not.
        #[arg(long)]
        check: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SiwxCommand {
    /// Verify a signed sign-in message; prints a JSON verdict and exits 0 only when it is valid.
    Verify(crate::siwx::SiwxVerifyArgs),
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Durable append throughput and latency at 1, 16 and 256 concurrent sessions against the raw
    /// sled ceiling, and replay read speed of a 100k-event session.
    Store {
        /// Directory for the temporary logs (on the disk the log will use). Default: the temp dir.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Seconds measured per concurrency level.
        #[arg(long, default_value_t = 4.0)]
        secs: f64,
        /// Concurrency levels, comma separated.
        #[arg(long, value_delimiter = ',', default_value = "1,16,256")]
        sessions: Vec<usize>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Serve { listen, data, config, static_dir } => {
            let config = GatewayConfig::load(config.as_deref(), &Overrides { listen, data, static_dir })?;
            crate::telemetry::init(config.log_format);
            actix_web::rt::System::new().block_on(crate::server::serve(config))?;
            Ok(0)
        }
        Command::Siwx { command: SiwxCommand::Verify(args) } => {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let (verdict, code) = runtime.block_on(crate::siwx::run_verify(&args))?;
            println!("{}", serde_json::to_string_pretty(&verdict)?);
            Ok(code)
        }
        Command::Bench { command: BenchCommand::Store { dir, secs, sessions, json } } => {
            let options = vestibule_store::bench::BenchOptions {
                dir,
                concurrency: sessions,
                secs_per_level: secs,
                ..Default::default()
            };
            let report = vestibule_store::bench::run(options)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("{report}");
            }
            Ok(0)
        }
        Command::Load(args) => {
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            let (report, passed) = runtime.block_on(crate::load::run(args))?;
            println!("{report}");
            if !passed {
                eprintln!("load check FAILED: every session must connect, with no gap, no hash mismatch and nothing lost");
            }
            Ok(if passed { 0 } else { 1 })
        }
        Command::Codegen { out, check } => {
            if check {
                let stale = vestibule_actors::codegen::stale(&out)?;
                if stale.is_empty() {
                    println!("{} is current", out.display());
                    return Ok(0);
                }
                eprintln!("{} is stale: {}", out.display(), stale.join(", "));
                return Ok(1);
            }
            let n = vestibule_actors::codegen::write(&out)?;
            println!("wrote {n} files to {}", out.display());
            Ok(0)
        }
    }
}

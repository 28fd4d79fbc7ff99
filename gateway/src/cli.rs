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

pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Serve { listen, data, config, static_dir } => {
            let config = GatewayConfig::load(config.as_deref(), &Overrides { listen, data, static_dir })?;
            crate::telemetry::init(config.log_format);
            actix_web::rt::System::new().block_on(crate::server::serve(config))?;
            Ok(0)
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

//! The `vestibule` command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

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
        /// A local devnet's devnet.json (`./scripts/run` passes it): its networks join the
        /// configured ones, and it is served at /devnet.json for the demo's dev wallet.
        #[arg(long)]
        devnet: Option<PathBuf>,
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
    /// The event log's data directory, offline (the gateway stopped).
    Store {
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// Sessions in a data directory or the configured log.
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// Replay a session event by event: time, type, summary and each machine's transitions.
    Replay {
        #[command(flatten)]
        store: StoreArgs,
        session: String,
        /// Stop after this seq.
        #[arg(long)]
        to: Option<u64>,
        #[arg(long, value_parser = ["text", "json"], default_value = "text")]
        format: String,
        /// Print each event's JSON Patch of the state.
        #[arg(long)]
        patch: bool,
        /// Re-fold the log and check it against the stored snapshots and the state hashes sent to
        /// clients; exit 1 naming the first divergent seq, or the first decision without a state
        /// hash (docs/replay.md).
        #[arg(long)]
        verify: bool,
        /// With --verify: decisions without a state hash (an import of an export made with
        /// --mask-emails, a log older than record format 2) are reported, not a failure.
        #[arg(long, requires = "verify")]
        allow_unverified: bool,
    },
    /// Write a session as JSONL to stdout (to attach to a bug report).
    Export {
        #[command(flatten)]
        store: StoreArgs,
        session: String,
        /// Replace the local part of email addresses with ***.
        #[arg(long)]
        mask_emails: bool,
        /// Keep signatures (a sign-in's signature and CACAO, signed transactions, the answers of
        /// signing requests). By default they are replaced with a marker: a signed sign-in message
        /// proves the visitor's sign-in to whoever holds it until it expires (docs/replay.md).
        #[arg(long)]
        keep_signatures: bool,
    },
    /// Read a session exported with `vestibule export` into a data directory (or the configured log).
    Import {
        #[command(flatten)]
        store: StoreArgs,
        file: PathBuf,
        /// Import under a new session id (when the id exists already).
        #[arg(long)]
        new_id: bool,
    },
}

/// Which event log a tool reads: a local data directory (sled or segments), or the log a gateway's
/// configuration names (`[store] backend`: a local backend's `data`, or `[store.jetstream]`;
/// `VESTIBULE_*` variables apply as for `serve`). One of the two.
#[derive(Debug, Clone, Args)]
#[group(required = true, multiple = false)]
pub struct StoreArgs {
    /// The gateway's data directory, opened with the local backend that wrote it (sled or
    /// segments; a new one, for import, is sled's).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// The gateway's TOML configuration file: opens the store it configures (sled, segments or JetStream).
    #[arg(long)]
    pub config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List sessions (newest activity filters, project, status).
    List {
        #[command(flatten)]
        store: StoreArgs,
        /// Only sessions active at or after this time (RFC 3339 or Unix ms).
        #[arg(long)]
        since: Option<String>,
        #[arg(long)]
        project: Option<String>,
        /// active or ended
        #[arg(long)]
        status: Option<String>,
        #[arg(long, value_parser = ["text", "json"], default_value = "text")]
        format: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Move a whole data directory from the sled log to the segment log (`[store] backend =
    /// "segments"`): every session's metadata (resume-token hashes included), events, remembered
    /// answers and snapshots, as stored. The gateway must be stopped. The new log is built in
    /// DIR.migrating, verified session by session, and switched in atomically; the old one is kept
    /// in DIR.sled-<time> until you delete it. Interrupted, it leaves DIR as it was (or already
    /// switched): run it again.
    Migrate {
        /// The gateway's data directory (its `--data`), holding a sled log.
        #[arg(long)]
        data: PathBuf,
        /// The backend to move to.
        #[arg(long, value_parser = ["segments"])]
        to: String,
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
    /// sled ceiling, and replay read speed of a 100k-event session. With `--backend segments` or
    /// `--backend jetstream`, the same on the segment log (directories of its own under `--dir`) or
    /// on NATS JetStream (streams of its own), deleted afterwards; no ceiling.
    Store {
        /// The log to measure.
        #[arg(long, value_parser = ["sled", "segments", "jetstream"], default_value = "sled")]
        backend: String,
        /// NATS servers (jetstream), comma separated. Default: the `--config`'s, else
        /// nats://127.0.0.1:4222.
        #[arg(long, value_delimiter = ',')]
        servers: Option<Vec<String>>,
        /// Stream replicas (jetstream): 1, or 3 on a 3-node cluster. Default: the `--config`'s, else 1.
        #[arg(long)]
        replicas: Option<usize>,
        /// The gateway's TOML configuration (jetstream): its `[store.jetstream]` gives the servers,
        /// the replicas, how to log in and TLS, as `serve` would use them.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Events in the replayed session (default 100000).
        #[arg(long)]
        replay_events: Option<u64>,
        /// Directory for the temporary logs (on the disk the log will use). Default: the temp dir.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Seconds measured per concurrency level (more than 0, at most a day).
        #[arg(long, default_value_t = 4.0, value_parser = parse_bench_secs)]
        secs: f64,
        /// Concurrency levels, comma separated.
        #[arg(long, value_delimiter = ',', default_value = "1,16,256")]
        sessions: Vec<usize>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `bench store --secs`: a finite number of seconds above 0 and at most a day. NaN, infinities,
/// negative and huge values panicked converting to a `Duration`, leaving the temporary logs behind.
fn parse_bench_secs(text: &str) -> Result<f64, String> {
    let secs: f64 = text.parse().map_err(|e| format!("{e}"))?;
    if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 {
        Ok(secs)
    } else {
        Err(format!("{secs} is not a number of seconds above 0 and at most 86400"))
    }
}

/// The NATS that `bench store --backend jetstream` measures: the configuration file's
/// `[store.jetstream]` (servers, replicas, login, TLS), or the local default, with `--servers` and
/// `--replicas` over either.
fn bench_jetstream_config(
    file: Option<&std::path::Path>,
    servers: Option<Vec<String>>,
    replicas: Option<usize>,
) -> anyhow::Result<vestibule_store_jetstream::JetStreamConfig> {
    let mut config = match file {
        Some(file) => GatewayConfig::load(Some(file), &Overrides::default())?.store.jetstream,
        None => vestibule_store_jetstream::JetStreamConfig::at(["nats://127.0.0.1:4222"]),
    };
    if let Some(servers) = servers {
        config.servers = servers;
    }
    if let Some(replicas) = replicas {
        config.replicas = replicas;
    }
    config.validate().map_err(|e| anyhow::anyhow!("--servers/--replicas/--config: {e}"))?;
    Ok(config)
}

/// An error of a tool that reads logs and exports, as a terminal may show it: its parts from a log
/// or a file are escaped where they are put in, and this escapes whatever was not (a store's or
/// serde's message quoting the data), keeping the line breaks of the message itself. An I/O error
/// is kept as it is (a closed pipe ends `replay … | head` quietly).
fn terminal_safe_error(e: anyhow::Error) -> anyhow::Error {
    if e.downcast_ref::<std::io::Error>().is_some() {
        return e;
    }
    anyhow::anyhow!(crate::replay::terminal_safe_message(&format!("{e:#}")))
}

pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Serve { listen, data, config, static_dir, devnet } => {
            let config = GatewayConfig::load(config.as_deref(), &Overrides { listen, data, static_dir, devnet })?;
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
        Command::Bench {
            command: BenchCommand::Store { backend, servers, replicas, config, replay_events, dir, secs, sessions, json },
        } => {
            let mut options =
                vestibule_store::bench::BenchOptions { dir, concurrency: sessions, secs_per_level: secs, ..Default::default() };
            if let Some(n) = replay_events {
                options.replay_events = n;
            }
            if backend != "jetstream" && (config.is_some() || servers.is_some() || replicas.is_some()) {
                anyhow::bail!("--config, --servers and --replicas are for --backend jetstream");
            }
            let report = match backend.as_str() {
                "jetstream" => {
                    let config = bench_jetstream_config(config.as_deref(), servers, replicas)?;
                    vestibule_store::bench::run_on(&vestibule_store_jetstream::bench::JetStreamBench::new(config), options)?
                }
                "segments" => {
                    let segments = vestibule_store::bench::SegmentsBench::new(options.dir.clone());
                    vestibule_store::bench::run_on(&segments, options)?
                }
                _ => vestibule_store::bench::run(options)?,
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                println!("{report}");
            }
            Ok(0)
        }
        Command::Store { command: StoreCommand::Migrate { data, to: _ } } => crate::store::migrate_to_segments(&data),
        Command::Sessions { command: SessionsCommand::List { store, since, project, status, format } } => {
            let filter = vestibule_store::SessionFilter {
                project,
                status: status.as_deref().map(crate::replay::parse_status).transpose()?,
                active_since_ms: since.as_deref().map(crate::replay::parse_time).transpose()?,
            };
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime
                .block_on(async {
                    let log = crate::replay::open_store(store.data.as_deref(), store.config.as_deref(), false).await?;
                    let n = crate::replay::list(log.as_ref(), filter, format == "json", &mut std::io::stdout().lock()).await?;
                    if format == "text" {
                        eprintln!("{n} sessions");
                    }
                    Ok(0)
                })
                .map_err(terminal_safe_error)
        }
        Command::Replay { store, session, to, format, patch, verify, allow_unverified } => {
            let id = crate::replay::parse_session(&session)?;
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime
                .block_on(async {
                    let log = crate::replay::open_store(store.data.as_deref(), store.config.as_deref(), false).await?;
                    let options = crate::replay::ReplayOptions { to, json: format == "json", verify, patch };
                    let verification = crate::replay::replay_verifying(log.as_ref(), id, &options, &mut std::io::stdout().lock()).await?;
                    if !verify {
                        return Ok(0);
                    }
                    eprintln!("{}", verification.summary());
                    match verification.failure(id, allow_unverified) {
                        Some(d) => {
                            eprintln!("verify FAILED at seq {}: {}", d.seq, d.reason);
                            Ok(1)
                        }
                        None if verification.unverified > 0 => {
                            eprintln!(
                                "verify ok for the decisions that carry a state hash; the others are unverified (--allow-unverified)"
                            );
                            Ok(0)
                        }
                        None => {
                            eprintln!("verify ok: the fold matches every stored state hash and snapshot");
                            Ok(0)
                        }
                    }
                })
                .map_err(terminal_safe_error)
        }
        Command::Export { store, session, mask_emails, keep_signatures } => {
            let id = crate::replay::parse_session(&session)?;
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime
                .block_on(async {
                    let log = crate::replay::open_store(store.data.as_deref(), store.config.as_deref(), false).await?;
                    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
                    let options = crate::replay::ExportOptions { mask_emails, keep_signatures };
                    let n = crate::replay::export(log.as_ref(), id, options, &mut out).await?;
                    std::io::Write::flush(&mut out)?;
                    eprintln!("exported {n} events");
                    Ok(0)
                })
                .map_err(terminal_safe_error)
        }
        Command::Import { store, file, new_id } => {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime
                .block_on(async {
                    let log = crate::replay::open_store(store.data.as_deref(), store.config.as_deref(), true).await?;
                    let (id, n) = crate::replay::import(log.as_ref(), &file, new_id).await?;
                    println!("imported {n} events as session {id}");
                    Ok(0)
                })
                .map_err(terminal_safe_error)
        }
    }
}

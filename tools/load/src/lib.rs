//! `vestibule-load`: simulated visitors driving real flows against a gateway over real WebSockets,
//! with latency percentiles, throughput, errors, seq gaps and hash mismatches, and optionally a
//! gateway killed (SIGKILL) and restarted under load. See `docs/load.md`. A tool of its own: the
//! gateway it drives is the `vestibule` binary, started as a child process or reached by `--url`.

pub mod devnet;
pub mod failover;
pub mod fleet;
pub mod gateway_process;
pub mod hiccups;
pub mod hold;
pub mod inbound;
pub mod metrics;
pub mod scenario;
pub mod visitor;

use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use self::gateway_process::{GatewayProcess, cpu_seconds, gateway_bin, raise_nofile_limit, rss_bytes};
use self::metrics::{Metrics, Totals};
use self::scenario::{Scenario, ScenarioKind};
use self::visitor::{Broken, Target, Visitor};

#[derive(Debug, Clone, clap::Args)]
pub struct LoadArgs {
    /// A running gateway (`ws://HOST:PORT`); without it a gateway is started on a temporary
    /// directory, or on `--data`. Repeat it for the gateways of a cluster: new sessions are spread
    /// round-robin over them, and each reconnect (resume) goes to the next one, so that resumes
    /// land on gateways that do not own the session (proxied; docs/scale-out.md).
    #[arg(long)]
    pub url: Vec<String>,
    /// Concurrent simulated visitors (sessions).
    #[arg(long, default_value_t = 100)]
    pub sessions: usize,
    /// Seconds over which visitors connect.
    #[arg(long, default_value_t = 5.0)]
    pub ramp: f64,
    /// Seconds of traffic after the ramp.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    #[arg(long, value_enum, default_value = "connect")]
    pub scenario: ScenarioKind,
    /// Mean pause between a visitor's steps, in milliseconds: each pause (and the wait before
    /// the first step) is drawn from an exponential distribution, so that the offered load is a
    /// Poisson stream of about sessions * 1000 / think steps per second. 0: as fast as results
    /// come back.
    #[arg(long, default_value_t = 1000)]
    pub think_ms: u64,
    /// Leave the hiccup meter off (`hiccups.rs`): its threads wake about 1,000 times a second on
    /// each CPU, and on a small machine those wake-ups lengthen the latencies it sits beside
    /// (docs/performance.md measures by how much). The report then has no hiccup figures.
    #[arg(long)]
    pub no_hiccups: bool,
    /// Write the JSON report here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Write a self-contained HTML chart here.
    #[arg(long)]
    pub chart: Option<PathBuf>,
    /// Data directory for the started gateway, kept afterwards so sessions can be replayed.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// The started gateway keeps its event log on this NATS JetStream server (`nats://host:port`)
    /// instead of sled in its data directory; the lost-command check reads it there too. With
    /// `--url`: the JetStream server the gateways behind it share, whose stream the lost-command
    /// check reads (across the whole cluster).
    #[arg(long)]
    pub nats: Option<String>,
    /// The started gateway's local event log in its data directory: `sled` (the default) or
    /// `segments` (decision 0105).
    #[arg(long, value_parser = ["sled", "segments"], default_value = "sled", conflicts_with = "nats")]
    pub store_backend: String,
    /// The protocol version to speak: the current one by default; 1 drives a gateway from before
    /// protocol 2's two-level state hash (e.g. `2c8fb34`, for a before/after figure in the same run).
    #[arg(long, default_value_t = vestibule_actors::protocol::PROTOCOL_VERSION, value_parser = clap::value_parser!(u32).range(1..=vestibule_actors::protocol::PROTOCOL_VERSION as i64))]
    pub protocol: u32,
    /// Project id for `--url` (the started gateway serves `demo`).
    #[arg(long, default_value = "demo")]
    pub project: String,
    /// Origin header the visitors send.
    #[arg(long, default_value = "http://localhost:5173")]
    pub origin: String,
    /// Local addresses to spread client sockets over (e.g. 127.0.0.1,127.0.0.2), past one
    /// address's ephemeral ports.
    #[arg(long, value_delimiter = ',')]
    pub source_addrs: Vec<IpAddr>,
    /// PID of the gateway behind `--url`, to report its resident memory per session.
    #[arg(long)]
    pub gateway_pid: Option<u32>,
    /// SIGKILL the started gateway about every this many seconds (randomly 0.5x to 1.5x) and
    /// restart it on the same directory; then check that nothing accepted was lost. A kill waits
    /// until every visitor has had a command answered by the current gateway, so each one lands
    /// under load, whatever the machine's speed.
    #[arg(long)]
    pub kill_every: Option<f64>,
    /// With `--kill-every`: end the traffic after this many kills, once every visitor has had a
    /// command answered by the last restarted gateway (instead of after `--duration`). Counting
    /// kills, not seconds, keeps a crash test's outcome independent of how busy the machine is.
    #[arg(long)]
    pub kills: Option<u64>,
    /// Log level of the started gateway (its log goes to this command's stderr).
    #[arg(long, default_value = "error")]
    pub gateway_log: String,
    /// Seconds to leave every session idle once all are connected, before the idle memory figure
    /// is taken: longer than the gateway's `runtime.hibernate_after` (10 s by default) measures
    /// hibernated sessions (the report gives how many were, from the gateway's `/metrics`).
    #[arg(long, default_value_t = 0.0)]
    pub idle_secs: f64,
    #[command(flatten)]
    pub hold: hold::HoldArgs,
    /// The `vestibule` binary to start (without `--url`). Default: the one next to this program,
    /// else `vestibule` on the PATH.
    #[arg(long)]
    pub gateway_bin: Option<PathBuf>,
    /// The devnet's directory (`start_devnet DIR` of scripts/lib/devnet.sh: `devnet.json`,
    /// `chain.toml`), for the `account` scenario. A started gateway gets its `chain.toml`; a gateway
    /// behind `--url` must have been given it.
    #[arg(long)]
    pub devnet: Option<PathBuf>,
    /// `account`: how many addresses the visitors share (visitor i connects with address i mod K).
    #[arg(long, default_value_t = 10)]
    pub addresses: usize,
    /// Each visitor runs this many cycles of its scenario, waits for its chain effects' outcomes,
    /// and stops; the traffic ends when every visitor has (instead of after `--duration`). Counts,
    /// not seconds: the run does the same work however busy the machine is.
    #[arg(long)]
    pub cycles: Option<u64>,
    /// `account`: mine a block on the devnet's chain every this many seconds (anvil's interval
    /// mining) instead of one per transaction, so that each send's receipt is a chain effect in
    /// flight for up to a block, as on a real chain. Left as it is after the run.
    #[arg(long)]
    pub block_time: Option<u64>,
    /// Start a 3-node NATS JetStream cluster (`replicas = 3`) and this many gateways in cluster
    /// mode on it, and drive them as `--url` does (`failover.rs`; needs nats-server: see docs/load.md).
    #[arg(long)]
    pub cluster: Option<usize>,
    /// With `--cluster`: SIGKILL the gateway owning the most sessions, then the NATS node leading
    /// the event stream, each once every visitor has had 5 commands answered since the last kill;
    /// the traffic ends once every visitor has had 5 answered after the second kill (counts, not seconds).
    #[arg(long)]
    pub failover: bool,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub scenario: ScenarioKind,
    pub sessions: usize,
    pub sessions_connected: usize,
    pub duration_s: f64,
    /// Time after the traffic window until every visitor's last command finished.
    pub drain_s: f64,
    pub think_ms: u64,
    pub durability: &'static str,
    pub commands: u64,
    pub accepted: u64,
    pub refused: u64,
    pub events: u64,
    pub commands_per_s: f64,
    pub events_per_s: f64,
    pub errors: BTreeMap<String, u64>,
    pub gaps: u64,
    pub hash_mismatches: u64,
    pub connections: u64,
    pub reconnects: u64,
    pub kills: u64,
    /// Accepted commands checked against the log after the run (kill mode, or a started gateway).
    pub checked_accepted: u64,
    pub lost: u64,
    pub rss_bytes: Option<u64>,
    pub rss_bytes_per_session: Option<u64>,
    /// The gateway's `vestibule_hibernated_sessions` when the idle memory figure was taken.
    pub hibernated_sessions: Option<u64>,
    pub open_files_limit: u64,
    pub latency: Latency,
    /// The machine's hiccups over the run: how much later than asked the generator's threads (one
    /// pinned to each CPU) woke from each 1 ms sleep (`hiccups.rs`). A command→diff tail no longer
    /// than this one may be the machine's rather than the gateway's. `None` with `--no-hiccups`.
    pub hiccups: Option<metrics::Percentiles>,
    /// Scenario counters: `sends` (answered with the node's hash), `receipt:<status>`,
    /// `balances:<status>`, `activity:<status>` (the outcomes the visitors saw).
    pub counts: BTreeMap<String, u64>,
    /// The visitors' mirrored states when they stopped, in bytes of JSON (`p50_us`, `max_us`... hold
    /// bytes): what every diff's patch and hash check work on, in the gateway and here.
    pub final_state_bytes: metrics::Percentiles,
    /// The chain service's upstream work during the traffic (the `account` scenario).
    pub chain: Option<ChainReport>,
    /// The gateways' `vestibule_cluster_*` series after the traffic, summed over every gateway
    /// behind `--url` (e.g. `vestibule_cluster_proxied_total`: connections proxied to an owner).
    pub cluster: BTreeMap<String, f64>,
    /// `--cluster`: the kills, takeovers, resumes and retried refusals of the run (`failover.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failover: Option<failover::FailoverReport>,
    pub timeline: Vec<metrics::Second>,
}

#[derive(Debug, Serialize)]
pub struct Latency {
    pub command_to_result: metrics::Percentiles,
    pub command_to_diff: metrics::Percentiles,
    /// Command-to-diff by class of command: `non-chain` and `chain` (see `scenario::Class`).
    pub command_to_diff_by_class: BTreeMap<String, metrics::Percentiles>,
    /// From the command that started a chain effect to the diff with its outcome: `balances`,
    /// `activity`, `receipt` (from the wallet's answer to the recorded receipt).
    pub effects: BTreeMap<String, metrics::Percentiles>,
}

/// The gateway's `vestibule_chain_*` counters, read from `/metrics` just before the traffic and
/// after it (every visitor done): what the sessions cost the nodes. Exact counts, whatever the
/// machine's speed.
#[derive(Debug, Serialize)]
pub struct ChainReport {
    pub addresses: usize,
    /// Seconds from the first metrics reading to the second.
    pub window_s: f64,
    /// HTTP requests sent upstream (a JSON-RPC batch is one), all networks.
    pub rpc_requests: u64,
    pub rpc_requests_per_session: f64,
    pub rpc_retries: u64,
    pub rpc_errors: u64,
    pub rpc_deduplicated: u64,
    /// Balance fetches because nothing was cached (`kind="miss"`): what the 30 s cache bounds.
    pub balance_fetches: u64,
    /// Balance fetches past the cache after the account's own transaction (`kind="fresh"`).
    pub balance_fresh_fetches: u64,
    /// Balance look-ups answered by the cache or a fetch in flight (`kind="hit"`).
    pub balance_hits: u64,
    /// `balance_fetches` / addresses / (the window in 30 s periods, rounded up).
    pub balance_fetches_per_address_per_30s: f64,
    /// Every `vestibule_chain_*` counter that moved, as `name{labels}` → increase.
    pub counters: BTreeMap<String, u64>,
    /// CPU seconds used during the window by the gateway (when its pid is known), this harness,
    /// and the devnet's nodes (from `DIR/pids`): who held the machine's cores.
    pub cpu_s: BTreeMap<String, f64>,
    /// Share of the window in which some runnable task on the machine waited for a CPU, and some
    /// task waited for I/O (Linux pressure stall information, `/proc/pressure/{cpu,io}`): how much
    /// other work (other builds) competed with this run. `None` where the kernel has no PSI.
    pub cpu_pressure_pct: Option<f64>,
    pub io_pressure_pct: Option<f64>,
}

/// The `some` line's `total=` (µs stalled since boot) of `/proc/pressure/{resource}`.
fn pressure_stall_us(resource: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/pressure/{resource}")).ok()?;
    text.lines().find(|l| l.starts_with("some "))?.split_whitespace().find_map(|f| f.strip_prefix("total="))?.parse().ok()
}

/// CPU seconds so far of the processes a chain report accounts for.
fn cpu_snapshot(gateway: Option<u32>, devnet: Option<&devnet::Devnet>) -> BTreeMap<String, f64> {
    let mut pids: Vec<(String, u32)> = vec![("load".into(), std::process::id())];
    pids.extend(gateway.map(|p| ("gateway".to_string(), p)));
    if let Some(d) = devnet {
        let listed = std::fs::read_to_string(d.dir.join("pids")).unwrap_or_default();
        pids.extend(listed.lines().filter_map(|l| l.trim().parse().ok()).enumerate().map(|(i, p)| (format!("anvil{i}"), p)));
    }
    pids.into_iter().filter_map(|(name, pid)| Some((name, cpu_seconds(pid)?))).collect()
}

/// How long a visitor keeps trying to reconnect when kills are counted, and how long a run may go
/// without any visitor getting an answer before it fails. Far above any restart on a busy machine;
/// it bounds a broken run, it does not time a healthy one.
const RECONNECT_PATIENCE: Duration = Duration::from_secs(120);

/// Commands each visitor must have had answered by the gateway of the moment before it is killed,
/// and by the last restarted one before a kill-counting run ends.
const ANSWERS_PER_GATEWAY: u32 = 5;

/// Which gateway (generation: one per start) answered each visitor's commands, so that kills wait
/// for every visitor to have resumed and worked, and a kill-counting run ends once they all have.
struct Progress {
    generation: AtomicU64,
    visitors: std::sync::Mutex<Vec<VisitorProgress>>,
    answers: AtomicU64,
}

#[derive(Clone, Copy)]
enum VisitorProgress {
    /// Answers counted by generation `.0`'s gateway (only the latest generation counts).
    Answered(u64, u32),
    /// The visitor stopped; it no longer holds a kill or the end back.
    Gone,
}

impl Progress {
    fn new(visitors: usize) -> Self {
        Progress {
            generation: AtomicU64::new(0),
            visitors: std::sync::Mutex::new(vec![VisitorProgress::Answered(0, 0); visitors]),
            answers: AtomicU64::new(0),
        }
    }

    fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    fn next_generation(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    fn answered(&self, visitor: usize, generation: u64) {
        let mut visitors = self.visitors.lock().expect("progress lock");
        visitors[visitor] = match visitors[visitor] {
            VisitorProgress::Answered(g, n) if g == generation => VisitorProgress::Answered(g, n + 1),
            VisitorProgress::Answered(g, n) if g > generation => VisitorProgress::Answered(g, n),
            VisitorProgress::Answered(..) => VisitorProgress::Answered(generation, 1),
            VisitorProgress::Gone => VisitorProgress::Gone,
        };
        self.answers.fetch_add(1, Ordering::SeqCst);
    }

    fn gave_up(&self, visitor: usize) {
        self.visitors.lock().expect("progress lock")[visitor] = VisitorProgress::Gone;
    }

    fn answers(&self) -> u64 {
        self.answers.load(Ordering::SeqCst)
    }

    /// Every visitor still running has had `ANSWERS_PER_GATEWAY` commands answered by the current
    /// gateway.
    fn everyone_worked_with_current(&self) -> bool {
        let current = self.generation();
        self.visitors.lock().expect("progress lock").iter().all(|p| match *p {
            VisitorProgress::Gone => true,
            VisitorProgress::Answered(g, n) => g == current && n >= ANSWERS_PER_GATEWAY,
        })
    }
}

fn progress(metrics: &Metrics, connected: usize, sessions: usize, last: &mut (u64, Instant)) {
    let t = metrics.totals();
    let rate = (t.commands - last.0) as f64 / last.1.elapsed().as_secs_f64().max(0.001);
    *last = (t.commands, Instant::now());
    let errors: u64 = t.errors.values().sum();
    eprintln!(
        "t={:>4.0}s sessions={connected}/{sessions} commands={} ({rate:.0}/s) diff p99={:.2}ms errors={errors} gaps={} hash_mismatches={}",
        metrics.elapsed().as_secs_f64(),
        t.commands,
        t.command_to_diff.p99_us as f64 / 1000.0,
        t.gaps,
        t.hash_mismatches
    );
}

/// Where the visitors run: one single-threaded tokio runtime per core, each on a thread of its own,
/// the visitors dealt out among them. A visitor then stays on one thread: the memory its frames
/// and mirror free goes back to the allocator's heap of the thread that allocated it (mimalloc
/// takes cross-thread frees through a slower, deferred path), and no worker steals another's
/// tasks. At saturation the generator shares the cores with the gateway
/// (`docs/performance.md`, "CPU per command"), so whatever it spends per command the gateway does
/// not get. The run's own loop (progress, kills, failover) stays on the caller's runtime.
struct VisitorThreads {
    runtimes: Vec<tokio::runtime::Handle>,
    /// Dropped with this: each thread's runtime then stops, ending the visitors still on it.
    _stop: tokio::sync::watch::Sender<()>,
}

impl VisitorThreads {
    fn start() -> anyhow::Result<Self> {
        let (stop, stopped) = tokio::sync::watch::channel(());
        let threads = std::thread::available_parallelism().map_or(1, usize::from);
        let mut runtimes = Vec::with_capacity(threads);
        for n in 0..threads {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtimes.push(runtime.handle().clone());
            let mut stopped = stopped.clone();
            // Not joined: the runtime is dropped on its own thread once `stop` is, outside any
            // async context (where dropping a runtime panics).
            std::thread::Builder::new().name(format!("visitors-{n}")).spawn(move || {
                runtime.block_on(async move { while stopped.changed().await.is_ok() {} });
            })?;
        }
        Ok(Self { runtimes, _stop: stop })
    }

    /// Runs visitor `index`'s task on its thread.
    fn spawn<T: Send + 'static>(
        &self,
        index: usize,
        task: impl std::future::Future<Output = T> + Send + 'static,
    ) -> tokio::task::JoinHandle<T> {
        self.runtimes[index % self.runtimes.len()].spawn(task)
    }
}

/// Runs a load test; returns the report and whether its checks passed.
pub async fn run(args: LoadArgs) -> anyhow::Result<(Report, bool)> {
    if args.sessions == 0 {
        anyhow::bail!("--sessions must be at least 1");
    }
    if args.kill_every.is_some() && !args.url.is_empty() {
        anyhow::bail!("--kill-every needs the gateway this command starts (leave out --url)");
    }
    if args.kills.is_some() && args.kill_every.is_none() {
        anyhow::bail!("--kills needs --kill-every");
    }
    if args.kills == Some(0) {
        anyhow::bail!("--kills must be at least 1");
    }
    failover::validate(&args)?;
    let open_files_limit = raise_nofile_limit();
    let needed = args.sessions as u64 * if !args.url.is_empty() { 1 } else { 2 } + 64;
    if open_files_limit < needed {
        eprintln!("warning: the open-file limit is {open_files_limit}; {} sessions need about {needed}", args.sessions);
    }
    if args.cycles == Some(0) {
        anyhow::bail!("--cycles must be at least 1");
    }
    if args.cycles.is_some() && args.kills.is_some() {
        anyhow::bail!("--cycles and --kills both decide when the traffic ends: give one");
    }
    let devnet = match (&args.devnet, args.scenario) {
        (Some(dir), _) => Some(Arc::new(devnet::Devnet::read(dir)?)),
        (None, ScenarioKind::Account) => anyhow::bail!(
            "the account scenario needs --devnet DIR (start_devnet DIR of scripts/lib/devnet.sh; tools/load/run-account.sh does both)"
        ),
        (None, _) => None,
    };
    if args.scenario == ScenarioKind::Account && args.addresses == 0 {
        anyhow::bail!("--addresses must be at least 1");
    }
    let wallets = match (&devnet, args.scenario) {
        (Some(d), ScenarioKind::Account) => d.fund(args.addresses).await?,
        _ => Vec::new(),
    };
    if let (Some(d), Some(seconds)) = (&devnet, args.block_time) {
        d.set_block_time(seconds).await?;
    }
    let temp = if args.url.is_empty() && args.data.is_none() { Some(tempfile::tempdir()?) } else { None };
    let data_dir = args.data.clone().or_else(|| temp.as_ref().map(|t| t.path().join("data")));
    let mut rig = match args.cluster {
        Some(n) => Some(
            failover::Rig::start(n, &gateway_bin(args.gateway_bin.as_deref())?, &args.gateway_log, args.sessions, args.failover).await?,
        ),
        None => None,
    };
    let mut gateway = match (args.url.is_empty() && rig.is_none(), &data_dir) {
        (true, Some(dir)) => {
            let store = match &args.nats {
                Some(url) => Some(format!("[store]\nbackend = \"jetstream\"\n\n[store.jetstream]\nservers = [{url:?}]\n")),
                None => Some(format!("[store]\nbackend = {:?}\n", args.store_backend)),
            };
            let chain = devnet.as_ref().map(|d| d.chain_config.clone());
            let extra = [store, chain].into_iter().flatten().collect::<Vec<_>>().join("\n");
            Some(GatewayProcess::start(&gateway_bin(args.gateway_bin.as_deref())?, dir, "127.0.0.1:0", &args.gateway_log, Some(&extra))?)
        }
        _ => None,
    };
    let addrs: Vec<String> = match (&gateway, &rig) {
        (Some(g), _) => vec![g.addr.clone()],
        (None, Some(rig)) => rig.addrs.clone(),
        (None, None) => {
            args.url.iter().map(|url| url.trim_start_matches("ws://").trim_end_matches('/').trim_end_matches("/ws").to_string()).collect()
        }
    };
    let addr = addrs[0].clone();
    let mut resolved = Vec::with_capacity(addrs.len());
    for a in &addrs {
        resolved.push(tokio::net::lookup_host(a).await?.next().ok_or_else(|| anyhow::anyhow!("cannot resolve {a}"))?);
    }
    let target = Arc::new(Target {
        addrs: resolved,
        project: if !args.url.is_empty() { args.project.clone() } else { "demo".into() },
        origin: args.origin.clone(),
        source_addrs: args.source_addrs.clone(),
        protocol: args.protocol,
        outages: rig.as_ref().map_or_else(|| Arc::new(failover::Outages::new(addrs.len(), 0)), |r| r.outages.clone()),
    });
    let gateway_pid = gateway.as_ref().map(|g| g.pid()).or(args.gateway_pid);
    let baseline_rss = gateway_pid.and_then(rss_bytes);
    let metrics = Arc::new(Metrics::new());
    let hiccup_meter = (!args.no_hiccups).then(|| hiccups::HiccupMeter::start(metrics.clone())).transpose()?;
    let ramp = Duration::from_secs_f64(args.ramp.max(0.0));
    let counting_kills = args.kills.is_some();
    // When kills or cycles end the traffic, there is no end time to give up at.
    let counting = counting_kills || args.cycles.is_some() || args.failover;
    // Without `--kills` the traffic lasts `--duration`; with it, until the kills are done.
    let traffic_end = Instant::now() + ramp + Duration::from_secs_f64(args.duration.max(0.0));
    let progress_of = Arc::new(Progress::new(args.sessions));
    let connected = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let all_connected = Arc::new(tokio::sync::Notify::new());
    let go = Arc::new(tokio::sync::watch::channel(false).0);
    let stop = Arc::new(tokio::sync::watch::channel(false).0);
    // Visitors done with their `--cycles` (and their chain effects).
    let finished = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let visitor_threads = VisitorThreads::start()?;
    let mut tasks = Vec::with_capacity(args.sessions);
    for index in 0..args.sessions {
        let scenario = Scenario::for_visitor(args.scenario, index);
        let mut visitor = Visitor::new(index, target.clone(), metrics.clone(), scenario);
        if let (Some(devnet), false) = (&devnet, wallets.is_empty()) {
            visitor = visitor.with_account(devnet.clone(), wallets[index % wallets.len()].clone());
        }
        let last_step = args.cycles.map(|c| scenario.steps_for(c));
        let finished = finished.clone();
        let start_at = Instant::now() + ramp.mul_f64(index as f64 / args.sessions as f64);
        let (metrics, connected, all_connected, mut go) = (metrics.clone(), connected.clone(), all_connected.clone(), go.subscribe());
        let (progress_of, mut stopped) = (progress_of.clone(), stop.subscribe());
        let (sessions, think) = (args.sessions, Duration::from_millis(args.think_ms));
        // How long a visitor keeps trying to (re)connect: to the end of the traffic, or, when
        // counting kills or cycles, long enough for any restart (a visitor that gives up fails the run).
        let connect_deadline = move || if counting { Instant::now() + RECONNECT_PATIENCE } else { traffic_end };
        tasks.push(visitor_threads.spawn(index, async move {
            tokio::time::sleep_until(start_at.into()).await;
            let connected_first = visitor.connect(connect_deadline()).await;
            if let Err(e) = connected_first {
                metrics.error(&format!("connect:{}", e.split(':').next().unwrap_or("failed")));
                progress_of.gave_up(visitor.index);
                return visitor;
            }
            if connected.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == sessions {
                all_connected.notify_one();
            }
            // Idle until everyone is connected and the idle memory figure is taken (`go` comes at the
            // latest at the ramp's end plus 30 s, plus `--idle-secs` and a hold), reading meanwhile.
            visitor.idle_until(&mut go, connect_deadline).await;
            // A memoryless start (`Scenario::start_factor`): all visitors starting in the same
            // millisecond would measure the harness's burst, not the gateway's steady state.
            tokio::time::sleep(think.mul_f64(scenario.start_factor())).await;
            while !*stopped.borrow() {
                if last_step.is_some_and(|last| visitor.steps_done() >= last) {
                    // Bounds a broken run; a healthy one's effects end within the RPC policy's 30 s
                    // (a receipt within the gateway's 120 s wait).
                    if let Err(Broken::Connection(e)) = visitor.settle(RECONNECT_PATIENCE + Duration::from_secs(30)).await {
                        metrics.error(&format!("settle:{e}"));
                    }
                    break;
                }
                // The gateway generation before the step: a step that got an answer was answered
                // by this generation's gateway (an older one is dead and answers nothing new).
                let generation = progress_of.generation();
                let answered = visitor.answered;
                match visitor.step().await {
                    Ok(()) => {
                        if visitor.answered > answered {
                            progress_of.answered(visitor.index, generation);
                        }
                    }
                    Err(Broken::Connection(_)) => {
                        visitor.drop_connection();
                        if let Err(e) = visitor.connect(connect_deadline()).await {
                            metrics.error(&format!("reconnect_failed:{}", visitor::failure_reason(&e)));
                            break;
                        }
                        continue;
                    }
                    Err(Broken::Resync) => {
                        visitor.drop_connection();
                        visitor.forget_mirror();
                        if let Err(e) = visitor.connect(connect_deadline()).await {
                            metrics.error(&format!("reconnect_failed:{}", visitor::failure_reason(&e)));
                            break;
                        }
                    }
                }
                if !think.is_zero() {
                    // Drawn afresh each step (`Scenario::think_factor`): visitors never march in step.
                    let jitter = think.mul_f64(scenario.think_factor(visitor.steps_done()));
                    if scenario.reads_while_thinking() {
                        let thought = tokio::select! {
                            thought = visitor.think(jitter) => thought,
                            _ = stopped.wait_for(|s| *s) => Ok(()),
                        };
                        // As after a step: resume, with the whole state if the mirror disagreed
                        // (the gap or mismatch is counted once, where it was seen).
                        if let Err(broken) = thought {
                            visitor.drop_connection();
                            if matches!(broken, Broken::Resync) {
                                visitor.forget_mirror();
                            }
                            if let Err(e) = visitor.connect(connect_deadline()).await {
                                metrics.error(&format!("reconnect_failed:{}", visitor::failure_reason(&e)));
                                break;
                            }
                        }
                    } else {
                        // Thinking without reading: the acks of its last diffs go out first. A
                        // socket that fails here fails the next step too, which resumes it.
                        let _ = visitor.flush_acks().await;
                        tokio::select! {
                            _ = tokio::time::sleep(jitter) => {}
                            _ = stopped.wait_for(|s| *s) => {}
                        }
                    }
                }
            }
            metrics.final_state(visitor.state_bytes());
            finished.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            progress_of.gave_up(visitor.index);
            visitor
        }));
    }

    let status = hold::StatusWriter::spawn(&args.hold, args.sessions, connected.clone(), metrics.clone());
    // Ramp: progress once a second until everyone is connected (or the ramp plus 30 s passes).
    let mut last = (0u64, Instant::now());
    let interactive = std::io::stderr().is_terminal();
    let ramp_deadline = Instant::now() + ramp + Duration::from_secs(30);
    loop {
        let n = connected.load(std::sync::atomic::Ordering::SeqCst);
        if n >= args.sessions || Instant::now() > ramp_deadline {
            break;
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), all_connected.notified()).await;
        if interactive || metrics.elapsed().as_secs() % 5 == 0 {
            progress(&metrics, connected.load(std::sync::atomic::Ordering::SeqCst), args.sessions, &mut last);
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    if args.idle_secs > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(args.idle_secs)).await;
    }
    let idle_rss = gateway_pid.and_then(rss_bytes);
    let hibernated = gateway_metrics(&addr).await.and_then(|m| m.get("vestibule_hibernated_sessions").map(|v| *v as u64));
    hold::hold(&args.hold, &status).await;
    let sessions_connected = connected.load(std::sync::atomic::Ordering::SeqCst);
    let chain_before = if devnet.is_some() {
        let pressure = (pressure_stall_us("cpu"), pressure_stall_us("io"));
        Some((gateway_metrics(&addr).await, Instant::now(), cpu_snapshot(gateway_pid, devnet.as_deref()), pressure))
    } else {
        None
    };
    let _ = go.send(true);
    let traffic_start = Instant::now();

    // Traffic, with kills if asked.
    let mut kills = 0u64;
    let jittered = |every: f64| Duration::from_secs_f64(every * (0.5 + rand::random::<f64>()));
    let mut next_kill = args.kill_every.map(|k| Instant::now() + jittered(k));
    let mut last_tick = Instant::now();
    let mut stalled_since = (progress_of.answers(), Instant::now());
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if last_tick.elapsed() >= Duration::from_secs(1) {
            last_tick = Instant::now();
            progress(&metrics, sessions_connected, args.sessions, &mut last);
        }
        let everyone_worked = progress_of.everyone_worked_with_current();
        if let Some(rig) = rig.as_mut().filter(|_| args.failover) {
            match rig.advance(everyone_worked, &progress_of).await {
                Ok(true) => break,
                Ok(false) => continue,
                Err(e) => {
                    let _ = stop.send(true);
                    return Err(e);
                }
            }
        }
        if let Some(target) = args.kills {
            if kills >= target && everyone_worked {
                break;
            }
            // A run that stops making progress fails with a reason instead of hanging.
            let answers = progress_of.answers();
            if answers != stalled_since.0 {
                stalled_since = (answers, Instant::now());
            } else if stalled_since.1.elapsed() > RECONNECT_PATIENCE {
                let _ = stop.send(true);
                anyhow::bail!("no visitor got an answer for {} s after {kills} kills", RECONNECT_PATIENCE.as_secs());
            }
        } else if args.cycles.is_some() {
            if finished.load(std::sync::atomic::Ordering::SeqCst) >= args.sessions {
                break;
            }
            let answers = progress_of.answers();
            if answers != stalled_since.0 {
                stalled_since = (answers, Instant::now());
            } else if stalled_since.1.elapsed() > RECONNECT_PATIENCE + Duration::from_secs(60) {
                // Longer than a settling visitor waits: a run stuck for good, not a slow one.
                let _ = stop.send(true);
                anyhow::bail!("no visitor got an answer for {} s", stalled_since.1.elapsed().as_secs());
            }
        } else if Instant::now() >= traffic_end {
            break;
        }
        let kills_left = args.kills.is_none_or(|target| kills < target);
        if let (Some(at), Some(every), Some(g)) = (next_kill, args.kill_every, gateway.as_mut())
            && Instant::now() >= at
            && kills_left
            && everyone_worked
            && (counting_kills || Instant::now() + Duration::from_secs(1) < traffic_end)
        {
            g.kill();
            progress_of.next_generation();
            kills += 1;
            eprintln!("killed the gateway (SIGKILL #{kills}); restarting on the same directory");
            g.restart()?;
            next_kill = Some(Instant::now() + jittered(every));
        }
    }
    let traffic_elapsed = traffic_start.elapsed();
    let _ = stop.send(true);
    let stopped_at = Instant::now();
    let mut visitors = Vec::with_capacity(tasks.len());
    for task in tasks {
        visitors.push(task.await?);
    }
    let drain = stopped_at.elapsed().as_secs_f64();
    let chain_report = match chain_before {
        Some((before, at, cpu_before, (cpu_stall, io_stall))) => {
            let after = gateway_metrics(&addr).await;
            let cpu_after = cpu_snapshot(gateway_pid, devnet.as_deref());
            match (before, after) {
                (Some(before), Some(after)) => {
                    let mut report = chain_report(&before, &after, at.elapsed().as_secs_f64(), args.addresses, sessions_connected);
                    report.cpu_s = cpu_after.iter().filter_map(|(k, v)| Some((k.clone(), v - cpu_before.get(k)?))).collect();
                    let share = |before: Option<u64>, after: Option<u64>| {
                        Some((after? - before?) as f64 / 1e6 / report.window_s.max(0.001) * 100.0)
                    };
                    report.cpu_pressure_pct = share(cpu_stall, pressure_stall_us("cpu"));
                    report.io_pressure_pct = share(io_stall, pressure_stall_us("io"));
                    Some(report)
                }
                _ => anyhow::bail!("cannot read the gateway's /metrics at {addr}"),
            }
        }
        None => None,
    };
    // Rates are over the traffic window (commands finishing in the drain are few).
    let elapsed = traffic_elapsed.as_secs_f64().max(0.001);
    drop(hiccup_meter);
    let totals = metrics.totals();

    // Every accepted command that wrote must be in its session's log.
    let (mut checked, mut lost) = (0u64, 0u64);
    // The gateways' cluster counters (with `--url`: summed over all of them), before stopping any.
    let mut cluster = BTreeMap::new();
    for a in &addrs {
        for (name, value) in gateway_metrics(a).await.unwrap_or_default() {
            if name.starts_with("vestibule_cluster_") {
                *cluster.entry(name).or_insert(0.0) += value;
            }
        }
    }
    if let Some(rig) = rig.as_mut() {
        // The surviving NATS nodes, with the cluster's replica count and patience for elections.
        (checked, lost) = rig.check_log(&visitors).await?;
    }
    let log_to_check = match (gateway.as_mut(), &data_dir, &args.nats) {
        _ if rig.is_some() => None,
        (Some(g), Some(dir), _) => {
            g.stop();
            Some(open_log(dir, args.nats.as_deref()).await?)
        }
        // Gateways behind `--url` sharing a JetStream stream: read it there, whichever gateway wrote.
        (None, _, Some(nats)) => Some(open_log(std::path::Path::new("."), Some(nats)).await?),
        _ => None,
    };
    if let Some(log) = log_to_check {
        for visitor in &visitors {
            let Some(session) = visitor.session_id.as_ref().and_then(|s| s.parse().ok()) else { continue };
            let correlations: BTreeSet<String> = log.read(session, 1, None).await?.into_iter().filter_map(|e| e.correlation_id).collect();
            for id in visitor.must_persist.iter().collect::<BTreeSet<_>>() {
                checked += 1;
                if !correlations.contains(id) {
                    lost += 1;
                    eprintln!(
                        "LOST: session {} command {id} was accepted but is not in the log",
                        visitor.session_id.as_deref().unwrap_or("?")
                    );
                }
            }
        }
    }
    drop(gateway);
    let mut report =
        build_report(&args, totals, elapsed, sessions_connected, kills, checked, lost, baseline_rss, idle_rss, open_files_limit);
    report.hibernated_sessions = hibernated;
    report.chain = chain_report;
    report.drain_s = drain;
    if let Some(rig) = rig.as_mut() {
        rig.finish(&report.counts, &report.errors, &cluster);
        report.kills = rig.report.gateway_kills + rig.report.nats_kills;
        report.failover = Some(std::mem::take(&mut rig.report));
    }
    report.cluster = cluster;
    let passed = report.gaps == 0
        && report.hash_mismatches == 0
        && report.lost == 0
        && sessions_connected == args.sessions
        && report.failover.as_ref().is_none_or(|f| f.passed());
    if let Some(path) = &args.report {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
    }
    if let Some(path) = &args.chart {
        let title = format!("vestibule-load: {} sessions, {:?}", args.sessions, args.scenario);
        std::fs::write(path, metrics::chart_html(&title, &report.timeline))?;
    }
    if let Some(dir) = args.data.as_ref() {
        eprintln!("the sessions are kept in {} (replay them with `vestibule replay --data {}`)", dir.display(), dir.display());
    }
    Ok((report, passed))
}

/// The gateway's `/metrics` as `name{labels}` → value (`None` if unreadable).
async fn gateway_metrics(addr: &str) -> Option<BTreeMap<String, f64>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let read = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
        let request = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut text = String::new();
        stream.read_to_string(&mut text).await.ok()?;
        Some(parse_metrics(&text))
    };
    tokio::time::timeout(Duration::from_secs(10), read).await.ok().flatten()
}

/// Prometheus text lines `name{labels} value` (comments and other lines skipped).
pub fn parse_metrics(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_string(), value.trim().parse::<f64>().ok()?))
        })
        .collect()
}

/// The chain counters' increase between two `/metrics` readings.
pub fn chain_report(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
    window_s: f64,
    addresses: usize,
    sessions: usize,
) -> ChainReport {
    let counters: BTreeMap<String, u64> = after
        .iter()
        .filter(|(k, _)| k.starts_with("vestibule_chain_") && k.contains("_total"))
        .map(|(k, v)| (k.clone(), (v - before.get(k).copied().unwrap_or(0.0)).max(0.0).round() as u64))
        .filter(|(_, d)| *d > 0)
        .collect();
    let sum = |name: &str, kind: Option<&str>| -> u64 {
        counters
            .iter()
            .filter(|(k, _)| k.starts_with(&format!("{name}{{")) && kind.is_none_or(|kind| k.contains(&format!("kind=\"{kind}\""))))
            .map(|(_, v)| v)
            .sum()
    };
    let balance_fetches = sum("vestibule_chain_balance_cache_total", Some("miss"));
    let periods = (window_s / 30.0).ceil().max(1.0);
    let rpc_requests = sum("vestibule_chain_rpc_requests_total", None);
    ChainReport {
        addresses,
        window_s,
        rpc_requests,
        rpc_requests_per_session: rpc_requests as f64 / sessions.max(1) as f64,
        rpc_retries: sum("vestibule_chain_rpc_retries_total", None),
        rpc_errors: sum("vestibule_chain_rpc_errors_total", None),
        rpc_deduplicated: sum("vestibule_chain_rpc_deduplicated_total", None),
        balance_fetches,
        balance_fresh_fetches: sum("vestibule_chain_balance_cache_total", Some("fresh")),
        balance_hits: sum("vestibule_chain_balance_cache_total", Some("hit")),
        balance_fetches_per_address_per_30s: balance_fetches as f64 / addresses.max(1) as f64 / periods,
        counters,
        cpu_s: BTreeMap::new(),
        cpu_pressure_pct: None,
        io_pressure_pct: None,
    }
}

/// The started gateway's log, opened read-side once it has stopped, to check that nothing accepted
/// was lost: the local log in its directory (whichever backend wrote it), or the JetStream stream on
/// `nats`.
async fn open_log(dir: &std::path::Path, nats: Option<&str>) -> anyhow::Result<Arc<dyn vestibule_store::EventLog>> {
    let upcaster = Arc::new(vestibule_actors::session::upcast::SessionUpcaster);
    if let Some(url) = nats {
        let config = vestibule_store_jetstream::JetStreamConfig::at([url]);
        let log = vestibule_store_jetstream::JetStreamEventLog::open_with_upcaster(config, upcaster)
            .await
            .map_err(|e| anyhow::anyhow!("cannot open the event log on {url}: {e}"))?;
        return Ok(Arc::new(log));
    }
    let config = vestibule_store::StoreConfig::at(dir.to_path_buf()).with_lock_wait_ms(5000);
    let log = vestibule_store::open_existing(config, upcaster)
        .map_err(|e| anyhow::anyhow!("cannot open the event log in {}: {e}", dir.display()))?;
    Ok(log)
}

#[allow(clippy::too_many_arguments)]
fn build_report(
    args: &LoadArgs,
    t: Totals,
    elapsed: f64,
    sessions_connected: usize,
    kills: u64,
    checked_accepted: u64,
    lost: u64,
    baseline_rss: Option<u64>,
    idle_rss: Option<u64>,
    open_files_limit: u64,
) -> Report {
    let elapsed = elapsed.max(0.001);
    let per_session = match (baseline_rss, idle_rss) {
        (Some(b), Some(i)) if sessions_connected > 0 => Some(i.saturating_sub(b) / sessions_connected as u64),
        _ => None,
    };
    Report {
        scenario: args.scenario,
        sessions: args.sessions,
        sessions_connected,
        duration_s: elapsed,
        drain_s: 0.0,
        think_ms: args.think_ms,
        durability: if !args.url.is_empty() { "as configured" } else { "durable" },
        commands: t.commands,
        accepted: t.accepted,
        refused: t.refused,
        events: t.events,
        commands_per_s: t.commands as f64 / elapsed,
        events_per_s: t.events as f64 / elapsed,
        errors: t.errors,
        gaps: t.gaps,
        hash_mismatches: t.hash_mismatches,
        connections: t.connections,
        reconnects: t.reconnects,
        kills,
        checked_accepted,
        lost,
        rss_bytes: idle_rss,
        rss_bytes_per_session: per_session,
        hibernated_sessions: None,
        open_files_limit,
        latency: Latency {
            command_to_result: t.command_to_result,
            command_to_diff: t.command_to_diff,
            command_to_diff_by_class: t.command_to_diff_by_class,
            effects: t.effects,
        },
        hiccups: t.hiccups,
        counts: t.counts,
        final_state_bytes: t.final_state_bytes,
        chain: None,
        cluster: BTreeMap::new(),
        failover: None,
        timeline: t.timeline,
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |us: u64| us as f64 / 1000.0;
        writeln!(
            f,
            "scenario {:?}: {} of {} sessions connected, {:.1} s of traffic (+{:.1} s to drain)",
            self.scenario, self.sessions_connected, self.sessions, self.duration_s, self.drain_s
        )?;
        writeln!(
            f,
            "commands {} ({:.0}/s; {} accepted, {} refused), events {} ({:.0}/s)",
            self.commands, self.commands_per_s, self.accepted, self.refused, self.events, self.events_per_s
        )?;
        let mut rows = vec![
            ("command→result".to_string(), &self.latency.command_to_result),
            ("command→diff".to_string(), &self.latency.command_to_diff),
        ];
        if self.scenario == ScenarioKind::Account {
            rows.extend(self.latency.command_to_diff_by_class.iter().map(|(class, p)| (format!("  {class}"), p)));
            rows.extend(self.latency.effects.iter().map(|(effect, p)| (format!("effect {effect}"), p)));
        }
        if let Some(hiccups) = &self.hiccups {
            rows.push(("hiccup (1 ms sleep)".to_string(), hiccups));
        }
        let width = rows.iter().map(|(name, _)| name.chars().count()).max().unwrap_or(0).max(18);
        writeln!(f, "{:<width$} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}", "latency (ms)", "count", "p50", "p90", "p99", "p99.9", "max")?;
        for (name, p) in rows {
            writeln!(
                f,
                "{name:<width$} {:>9} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
                p.count,
                ms(p.p50_us),
                ms(p.p90_us),
                ms(p.p99_us),
                ms(p.p999_us),
                ms(p.max_us)
            )?;
        }
        if self.hiccups.is_none() {
            writeln!(f, "hiccup meter off (--no-hiccups)")?;
        }
        if !self.counts.is_empty() {
            writeln!(f, "counts {:?}", self.counts)?;
            let b = &self.final_state_bytes;
            writeln!(f, "state at the end: p50 {:.1} KiB, max {:.1} KiB of JSON", b.p50_us as f64 / 1024.0, b.max_us as f64 / 1024.0)?;
        }
        if let Some(c) = &self.chain {
            writeln!(
                f,
                "upstream: {} RPC requests ({:.2} per session; {} retries, {} errors, {} deduplicated) in {:.1} s",
                c.rpc_requests, c.rpc_requests_per_session, c.rpc_retries, c.rpc_errors, c.rpc_deduplicated, c.window_s
            )?;
            writeln!(
                f,
                "balances: {} fetches for {} addresses ({:.2} per address per 30 s), {} fresh after sends, {} answered by the cache",
                c.balance_fetches, c.addresses, c.balance_fetches_per_address_per_30s, c.balance_fresh_fetches, c.balance_hits
            )?;
            let cpu: Vec<String> = c.cpu_s.iter().map(|(k, v)| format!("{k} {v:.1}")).collect();
            writeln!(f, "CPU seconds in the window: {}", cpu.join(", "))?;
            if let (Some(cpu), Some(io)) = (c.cpu_pressure_pct, c.io_pressure_pct) {
                writeln!(f, "machine: some task waited for a CPU {cpu:.0} % and for I/O {io:.0} % of the window (/proc/pressure)")?;
            }
        }
        writeln!(f, "connections {} (reconnects {}), errors {:?}", self.connections, self.reconnects, self.errors)?;
        if let Some(per) = self.rss_bytes_per_session {
            writeln!(
                f,
                "gateway resident memory {} MiB, {:.1} KiB per connected idle session",
                self.rss_bytes.unwrap_or(0) / (1 << 20),
                per as f64 / 1024.0
            )?;
            if let Some(hibernated) = self.hibernated_sessions {
                writeln!(f, "hibernated sessions when measured: {hibernated}")?;
            }
        }
        if let Some(failover) = &self.failover {
            writeln!(f, "{failover}")?;
        }
        write!(
            f,
            "kills={} accepted={} lost={} gaps={} hash_mismatches={}",
            self.kills, self.checked_accepted, self.lost, self.gaps, self.hash_mismatches
        )
    }
}

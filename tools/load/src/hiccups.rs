//! The machine's own stalls during a run, measured the way jHiccup does: a thread of the load
//! generator asks to sleep 1 ms, over and over, and records how much later than asked it woke.
//! One such thread is pinned to each CPU the generator may use, since a stall often takes one CPU
//! only (a thread free to move would be elsewhere and see nothing).
//!
//! Any thread of this process waits that long for reasons that are neither the gateway's nor the
//! network's: a process of higher priority holding the CPU (on the 2-core VMs of
//! docs/performance.md, the sandbox's agent at nice −10, for up to 25 ms about once a second), the
//! hypervisor, or the generator's own load. So a command→diff tail no longer than the hiccup tail
//! may be the machine's, not the gateway's; the timeline gives each second's longest hiccup next to
//! its p99 to tell which.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::metrics::Metrics;

/// Records the machine's hiccups into a run's [`Metrics`] until dropped.
pub struct HiccupMeter {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl HiccupMeter {
    /// How long the meter asks to sleep each time.
    pub const INTERVAL: Duration = Duration::from_millis(1);

    /// One thread per CPU this process may run on, each pinned to its CPU (one unpinned thread
    /// where the CPUs cannot be read).
    pub fn start(metrics: Arc<Metrics>) -> std::io::Result<Self> {
        let mut meter = Self { stop: Arc::new(AtomicBool::new(false)), threads: Vec::new() };
        metrics.metering_hiccups();
        let cpus = allowed_cpus();
        for cpu in cpus.iter().map(|&c| Some(c)).chain(cpus.is_empty().then_some(None)) {
            let (metrics, stop) = (metrics.clone(), meter.stop.clone());
            let name = cpu.map_or_else(|| "hiccups".to_string(), |c| format!("hiccups-cpu{c}"));
            // On an error the threads already started stop when `meter` drops.
            meter.threads.push(std::thread::Builder::new().name(name).spawn(move || {
                if let Some(cpu) = cpu {
                    pin_to(cpu);
                }
                while !stop.load(Ordering::Relaxed) {
                    let asked_at = Instant::now();
                    std::thread::sleep(Self::INTERVAL);
                    metrics.hiccup(asked_at.elapsed().saturating_sub(Self::INTERVAL));
                }
            })?);
        }
        Ok(meter)
    }
}

impl Drop for HiccupMeter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// The CPUs this process may run on (its affinity mask); empty if it cannot be read.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `cpu_set_t` is plain data, all zeros is an empty set, and `sched_getaffinity` writes
    // at most `size_of::<cpu_set_t>()` bytes into it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&cpu| libc::CPU_ISSET(cpu, &set)).collect()
    }
}

/// Pins the calling thread to `cpu`; a thread that cannot be pinned measures wherever it runs.
fn pin_to(cpu: usize) {
    // SAFETY: as in `allowed_cpus`; `sched_setaffinity` only reads the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hiccups_are_summed_up_over_the_run_and_kept_per_second() {
        // Given a run's metrics, with a meter
        let metrics = Metrics::new();
        metrics.metering_hiccups();
        // When the meter wakes 98 times about on time, then once 5 ms late in second 1 and once
        // 20 ms late in second 3
        for _ in 0..98 {
            metrics.hiccup_in_second(0, Duration::from_micros(60));
        }
        metrics.hiccup_in_second(1, Duration::from_millis(5));
        metrics.hiccup_in_second(3, Duration::from_millis(20));
        // Then the run's hiccups count all 100, the median is the usual wake-up, the worst is 20 ms
        let t = metrics.totals();
        let hiccups = t.hiccups.expect("metered");
        assert_eq!(hiccups.count, 100);
        assert_eq!(hiccups.p50_us, 60);
        assert!((19_900..=20_100).contains(&hiccups.max_us), "max {}", hiccups.max_us);
        // And each second has its own longest, 0 in a second without a late wake-up
        let longest: Vec<Option<u64>> = t.timeline.iter().map(|s| s.hiccup_max_us.map(|us| us / 1000)).collect();
        assert_eq!(longest, [Some(0), Some(5), Some(0), Some(20)]);
        assert_eq!(t.timeline.iter().map(|s| s.t).collect::<Vec<_>>(), [0, 1, 2, 3]);
        // And with no diff in them, those seconds answered no command
        assert!(t.timeline.iter().all(|s| s.commands == 0 && s.p99_us == 0));
    }

    #[test]
    fn a_hiccup_and_a_diff_in_the_same_second_share_its_entry() {
        // Given a run's metrics, with a meter, and a diff recorded now
        let metrics = Metrics::new();
        metrics.metering_hiccups();
        metrics.diff(Duration::from_millis(2));
        let second = metrics.elapsed().as_secs();
        // When the meter records a hiccup in the same second
        metrics.hiccup_in_second(second, Duration::from_millis(7));
        // Then that second counts the diff and carries the hiccup
        let t = metrics.totals();
        let entry = &t.timeline[second as usize];
        assert_eq!(entry.commands, 1);
        assert_eq!(entry.hiccup_max_us.map(|us| us / 1000), Some(7));
    }

    #[test]
    fn without_a_meter_there_are_no_hiccup_figures_not_zeros() {
        // Given a run's metrics with no meter (`--no-hiccups`)
        let metrics = Metrics::new();
        // When a diff is recorded
        metrics.diff(Duration::from_millis(2));
        // Then the diff is in the totals, and no hiccup figure is: none for the run, none per second
        let t = metrics.totals();
        assert_eq!(t.command_to_diff.count, 1);
        assert!(t.hiccups.is_none());
        assert!(!t.timeline.is_empty() && t.timeline.iter().all(|s| s.hiccup_max_us.is_none()));
    }

    #[test]
    fn the_meter_records_wake_ups_until_it_is_dropped() {
        // Given a meter started on a run's metrics
        let metrics = Arc::new(Metrics::new());
        let meter = HiccupMeter::start(metrics.clone()).expect("start the meter threads");
        // (one thread pinned to each CPU the process may use)
        assert!(!allowed_cpus().is_empty());
        assert_eq!(meter.threads.len(), allowed_cpus().len());
        // When it has woken twenty times (counted, however slow the machine)
        let count = |m: &Metrics| m.totals().hiccups.expect("a meter ran").count;
        while count(&metrics) < 20 {
            std::thread::sleep(Duration::from_millis(5));
        }
        // Then dropping it stops and joins its threads, and nothing records after that
        drop(meter);
        let after_drop = count(&metrics);
        assert!(after_drop >= 20);
        let probe = Arc::new(Metrics::new());
        let probe_meter = HiccupMeter::start(probe.clone()).expect("start the probe meter");
        // (a second meter proves time passed for a wake-up while the first stayed silent)
        while count(&probe) < 3 {
            std::thread::sleep(Duration::from_millis(5));
        }
        drop(probe_meter);
        assert_eq!(count(&metrics), after_drop);
    }
}

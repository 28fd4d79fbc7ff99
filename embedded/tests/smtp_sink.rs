//! The lettre mailer against a real SMTP server: Python's aiosmtpd writing a maildir.
//! Install the sink with `. scripts/lib/smtp.sh && ensure_smtp_sink` (scripts/test does).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use vestibule_embedded::mail::{MailPurpose, SUBJECT, find_code};
use vestibule_embedded::otp::{OtpPurpose, OtpStore};
use vestibule_embedded::{LettreMailer, Mailer, SeededEntropy, SmtpConfig, SmtpTls};

fn sink_python() -> PathBuf {
    let python = std::env::var_os("SMTP_SINK_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.cache/smtp-venv/bin/python"));
    let ready = python.exists()
        && Command::new(&python)
            .args(["-c", "import aiosmtpd"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    assert!(ready, "the SMTP test sink is missing at {}; install it with: . scripts/lib/smtp.sh && ensure_smtp_sink", python.display());
    python
}

struct Sink(Child);

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn start_sink(maildir: &Path) -> (Sink, u16) {
    let port = free_port();
    let child = Command::new(sink_python())
        .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}"), "-c", "aiosmtpd.handlers.Mailbox"])
        .arg(maildir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start aiosmtpd");
    let sink = Sink(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "aiosmtpd did not listen on {port} within 20 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    (sink, port)
}

fn read_one_mail(maildir: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(entries) = std::fs::read_dir(maildir.join("new"))
            && let Some(entry) = entries.filter_map(Result::ok).next()
        {
            return std::fs::read_to_string(entry.path()).unwrap();
        }
        assert!(Instant::now() < deadline, "no mail arrived in {}", maildir.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[actix_web::test]
async fn given_an_smtp_server_when_a_login_code_is_sent_then_the_mail_arrives_with_the_code_and_expiry() {
    let dir = tempfile::tempdir().unwrap();
    let maildir = dir.path().join("maildir");
    let (_sink, port) = start_sink(&maildir);
    let config = SmtpConfig {
        host: "127.0.0.1".into(),
        port,
        from: "Vestibule <login@vestibule.test>".into(),
        tls: SmtpTls::None,
        username: None,
        password: None,
        file_dir: None,
    };
    let mailer = LettreMailer::new(&config, Duration::from_secs(600)).unwrap();
    let entropy = SeededEntropy::new(99);
    let (_, code) = OtpStore::new(&entropy, 600_000, 5, 8)
        .issue(OtpPurpose::Login { email: "visitor@example.com".into() }, "frame", 0, &entropy)
        .unwrap();

    mailer.send_code("visitor@example.com", &code, MailPurpose::Login, "project-1").await.unwrap();

    let mail = read_one_mail(&maildir);
    assert!(mail.contains(&format!("Subject: {SUBJECT}")), "{mail}");
    assert!(mail.contains("To: visitor@example.com"), "{mail}");
    assert!(mail.contains("expires in 10 minutes"), "{mail}");
    assert_eq!(find_code(&mail).as_deref(), Some(code.reveal()));
}

#[actix_web::test]
async fn given_no_smtp_server_when_a_code_is_sent_then_the_error_says_so_without_the_code() {
    let port = free_port();
    let config = SmtpConfig {
        host: "127.0.0.1".into(),
        port,
        from: "login@vestibule.test".into(),
        tls: SmtpTls::None,
        username: None,
        password: None,
        file_dir: None,
    };
    let mailer = LettreMailer::new(&config, Duration::from_secs(600)).unwrap();
    let entropy = SeededEntropy::new(98);
    let (_, code) =
        OtpStore::new(&entropy, 600_000, 5, 8).issue(OtpPurpose::Login { email: "v@example.com".into() }, "f", 0, &entropy).unwrap();
    let error = mailer.send_code("v@example.com", &code, MailPurpose::Login, "project-1").await.unwrap_err().to_string();
    assert!(!error.contains(code.reveal()), "{error}");
}

#[tokio::test(start_paused = true)]
async fn given_an_smtp_server_that_accepts_and_says_nothing_when_a_code_is_sent_then_it_fails_within_the_send_timeout() {
    // Accepts the connection (the kernel's backlog) and never greets: lettre's own timeout covers
    // only the connection.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = SmtpConfig {
        host: "127.0.0.1".into(),
        port: silent.local_addr().unwrap().port(),
        from: "login@vestibule.test".into(),
        tls: SmtpTls::None,
        username: None,
        password: None,
        file_dir: None,
    };
    let mailer = LettreMailer::new(&config, Duration::from_secs(600)).unwrap();
    let entropy = SeededEntropy::new(97);
    let (_, code) =
        OtpStore::new(&entropy, 600_000, 5, 8).issue(OtpPurpose::Login { email: "v@example.com".into() }, "f", 0, &entropy).unwrap();
    let started = tokio::time::Instant::now();
    // Fenced, so that a mailer without its own bound fails here instead of hanging the test.
    let sent = tokio::time::timeout(
        4 * vestibule_embedded::mail::SEND_TIMEOUT,
        mailer.send_code("v@example.com", &code, MailPurpose::Login, "project-1"),
    );
    let error = sent.await.expect("the mailer gave up by itself").unwrap_err().to_string();
    assert_eq!(started.elapsed(), vestibule_embedded::mail::SEND_TIMEOUT, "{error}");
    assert!(error.contains("did not finish"), "{error}");
}

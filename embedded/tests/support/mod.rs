//! Shared pieces of the embedded service's integration tests: a recording mailer and notice sink,
//! a service over temporary directories, and the frame's side of HPKE.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use vestibule_embedded::mail::MailPurpose;
use vestibule_embedded::{
    EmbeddedConfig, EmbeddedService, Mailer, ManualClock, Notice, NoticeSink, OtpCode, SeededEntropy, ShareKeys, SocialProviderConfig,
};

pub const FRAME_ORIGIN: &str = "http://frame.test:8090";
pub const HOST_ORIGIN: &str = "https://host.example";

#[derive(Default)]
pub struct RecordingMailer {
    pub sent: Mutex<Vec<(String, String, MailPurpose)>>,
    /// The project each mail named, in the order of `sent`.
    pub projects: Mutex<Vec<String>>,
}

impl RecordingMailer {
    /// The last code mailed to `to`.
    pub fn last_code(&self, to: &str) -> String {
        let sent = self.sent.lock().unwrap();
        sent.iter().rev().find(|(recipient, _, _)| recipient == to).map(|(_, code, _)| code.clone()).expect("a code was mailed")
    }
}

#[async_trait::async_trait]
impl Mailer for RecordingMailer {
    async fn send_code(&self, to: &str, code: &OtpCode, purpose: MailPurpose, project: &str) -> Result<(), vestibule_embedded::MailError> {
        self.projects.lock().unwrap().push(project.to_owned());
        self.sent.lock().unwrap().push((to.to_owned(), code.reveal().to_owned(), purpose));
        Ok(())
    }
}

#[derive(Default)]
pub struct RecordingSink {
    pub notices: Mutex<Vec<(String, Notice)>>,
    /// The frame each notice was about, in the same order.
    pub frames: Mutex<Vec<String>>,
    /// Sessions that are no longer live (every other session id is).
    pub ended: Mutex<Vec<String>>,
    /// The project of each session named here; every other session is of `PROJECT`.
    pub projects: Mutex<std::collections::HashMap<String, String>>,
}

/// The project of the harness's sessions unless `RecordingSink::projects` says otherwise.
pub const PROJECT: &str = "project-1";

impl RecordingSink {
    pub fn take(&self) -> Vec<(String, Notice)> {
        self.frames.lock().unwrap().clear();
        std::mem::take(&mut *self.notices.lock().unwrap())
    }

    /// The frames of the notices since the last `take`.
    pub fn frames(&self) -> Vec<String> {
        self.frames.lock().unwrap().clone()
    }
}

impl NoticeSink for RecordingSink {
    fn notify(&self, session_id: &str, frame_id: &str, notice: Notice) {
        self.frames.lock().unwrap().push(frame_id.to_owned());
        self.notices.lock().unwrap().push((session_id.to_owned(), notice));
    }

    fn session_is_live(&self, session_id: &str) -> bool {
        !self.ended.lock().unwrap().iter().any(|ended| ended == session_id)
    }

    fn session_project(&self, session_id: &str) -> vestibule_embedded::service::ProjectLookup {
        let project = self.projects.lock().unwrap().get(session_id).cloned().unwrap_or_else(|| PROJECT.to_owned());
        Box::pin(std::future::ready(Some(project)))
    }
}

pub fn config(dir: &Path) -> EmbeddedConfig {
    EmbeddedConfig {
        frame_listen: "127.0.0.1:0".parse().unwrap(),
        frame_origin: FRAME_ORIGIN.into(),
        frame_assets_dir: dir.join("dist-frame"),
        share_key_file: dir.join("share.key"),
        recovery_key_file: dir.join("recovery.key"),
        data_dir: Some(dir.join("vault")),
        otp_ttl: Duration::from_secs(600),
        otp_attempts: 5,
        email_cooldown: Duration::from_secs(30),
        mails_per_ip_per_hour: 30,
        otp_lockout_failures: 10,
        otp_lockout_window: Duration::from_secs(24 * 3600),
        smtp: None,
        social: Default::default(),
        farcaster: None,
        legacy_users_project: None,
    }
}

pub struct Harness {
    pub service: actix_web::web::Data<EmbeddedService>,
    pub mailer: Arc<RecordingMailer>,
    pub sink: Arc<RecordingSink>,
    pub clock: Arc<ManualClock>,
    pub dir: tempfile::TempDir,
}

pub fn harness(social: Vec<(&str, SocialProviderConfig)>) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path());
    config.social = social.into_iter().map(|(name, provider)| (name.to_owned(), provider)).collect();
    std::fs::create_dir_all(dir.path().join("dist-frame/assets")).unwrap();
    std::fs::write(dir.path().join("dist-frame/frame.html"), "<!doctype html><title>frame</title>").unwrap();
    std::fs::write(dir.path().join("dist-frame/assets/callback.js"), "/* callback */").unwrap();
    std::fs::write(dir.path().join("dist-frame/approve.html"), "<!doctype html><title>approve</title>").unwrap();
    let mailer = Arc::new(RecordingMailer::default());
    let sink = Arc::new(RecordingSink::default());
    let clock = Arc::new(ManualClock::at(1_700_000_000_000));
    let service = EmbeddedService::builder(config, ShareKeys { server: [1; 32], recovery: [2; 32] }, mailer.clone(), sink.clone())
        .clock(clock.clone())
        .entropy(Arc::new(SeededEntropy::new(42)))
        .allowed_origins(|project| (project == "project-1").then(|| vec![HOST_ORIGIN.to_owned()]))
        .build()
        .unwrap();
    Harness { service: actix_web::web::Data::new(service), mailer, sink, clock, dir }
}

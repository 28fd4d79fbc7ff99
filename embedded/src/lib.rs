//! The embedded wallet service (issue 15, docs/embedded-wallet.md, decision 1500).
//!
//! It mails one-time codes, verifies them, runs OAuth 2.0 / OIDC with PKCE, keeps the server and
//! recovery shares encrypted at rest, and releases them HPKE-sealed to a registered secure frame
//! after a verified login. The pure parts (codes, frames, vault records, seals, binding proofs) take
//! time as `now_ms` and randomness as an [`Entropy`]; the shell ([`EmbeddedService`], the frame
//! routes, the mailer, the provider calls) does the I/O. What the session must learn leaves as a
//! [`Notice`] through the gateway's [`NoticeSink`]; OTPs, shares and keys never do.

pub mod binding;
pub mod config;
pub mod farcaster;
pub mod frames;
pub mod mail;
pub mod mail_limits;
pub mod otp;
pub mod routes;
pub mod rpc_limits;
pub mod seal;
pub mod service;
pub mod social;
pub mod throttle;
pub mod vault;

/// Opens the sled database at `path` again in the same process, as a restart would: sled's flusher
/// thread lets go of the file lock a moment after the last handle is dropped, so a reopen retries
/// while the lock is held (500 tries, 10 ms apart; an error other than the lock fails at once).
#[cfg(test)]
pub(crate) fn reopen_sled(path: &std::path::Path) -> sled::Db {
    let mut tries = 0;
    loop {
        match sled::open(path) {
            Ok(db) => return db,
            Err(error) if tries < 500 && error.to_string().contains("lock") => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(error) => panic!("{error}"),
        }
    }
}

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine as _;

pub use config::{EmbeddedConfig, FarcasterConfig, ShareKeys, SmtpConfig, SmtpTls, SocialProviderConfig};
pub use mail::{LettreMailer, MailError, MailPurpose, Mailer};
pub use otp::{OtpCode, OtpRejection};
pub use routes::configure_frame_routes;
pub use seal::Sealed;
pub use service::{
    EmailUpdateStep, EmbeddedError, EmbeddedService, EmbeddedServiceBuilder, FRAME_RPC_METHODS, FrameRpc, LoginMethod, LoginResult, Notice,
    NoticeSink, OtpSent, OtpStep, ReleasedWallet, RpcFailure, WalletAddresses,
};

/// Wall-clock time in milliseconds since the Unix epoch, an input of every decision that expires.
pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> u64;
}

/// The real clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|elapsed| elapsed.as_millis() as u64).unwrap_or(0)
    }
}

/// A clock the tests move by hand.
#[derive(Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    pub fn at(now_ms: u64) -> Self {
        Self(AtomicU64::new(now_ms))
    }
    pub fn advance_ms(&self, by_ms: u64) {
        self.0.fetch_add(by_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Where every secret random byte comes from (ids, codes, tokens, nonces, HPKE ephemerals), so a
/// test can make them reproducible.
pub trait Entropy: Send + Sync + 'static {
    fn fill(&self, out: &mut [u8]);
}

/// The operating system's CSPRNG (through rand's thread-local ChaCha reseeded from it).
pub struct OsEntropy;

impl Entropy for OsEntropy {
    fn fill(&self, out: &mut [u8]) {
        rand::RngCore::fill_bytes(&mut rand::rng(), out);
    }
}

/// A seeded generator for tests: the same seed gives the same ids and codes.
pub struct SeededEntropy(Mutex<rand::rngs::StdRng>);

impl SeededEntropy {
    pub fn new(seed: u64) -> Self {
        Self(Mutex::new(rand::SeedableRng::seed_from_u64(seed)))
    }
}

impl Entropy for SeededEntropy {
    fn fill(&self, out: &mut [u8]) {
        let mut rng = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        rand::RngCore::fill_bytes(&mut *rng, out);
    }
}

/// An [`Entropy`] seen as a `rand_core` generator, for the crates that take one (hpke).
pub(crate) struct EntropyRng<'a>(pub &'a dyn Entropy);

impl rand::RngCore for EntropyRng<'_> {
    fn next_u32(&mut self) -> u32 {
        let mut bytes = [0u8; 4];
        self.0.fill(&mut bytes);
        u32::from_le_bytes(bytes)
    }
    fn next_u64(&mut self) -> u64 {
        let mut bytes = [0u8; 8];
        self.0.fill(&mut bytes);
        u64::from_le_bytes(bytes)
    }
    fn fill_bytes(&mut self, out: &mut [u8]) {
        self.0.fill(out);
    }
}

impl rand::CryptoRng for EntropyRng<'_> {}

pub(crate) fn random_hex(entropy: &dyn Entropy, bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    entropy.fill(&mut buf);
    hex::encode(buf)
}

pub(crate) fn random_b64url(entropy: &dyn Entropy, bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    entropy.fill(&mut buf);
    b64url(&buf)
}

/// base64url without padding, the wire form of every binary value on the frame API.
pub fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

pub fn b64url_decode(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text).ok()
}

/// Emails compare case-insensitively and without surrounding blanks.
pub(crate) fn normalize_email(email: &str) -> String {
    email.trim().to_ascii_lowercase()
}

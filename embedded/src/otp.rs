//! One-time codes: issued per challenge, stored only as HMAC-SHA256(secret, challengeId || code),
//! checked in constant time, dead after their expiry or their last wrong attempt. Pure: time is
//! `now_ms`, randomness an [`Entropy`].

use std::collections::HashMap;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::Entropy;

/// A six-digit code. Its `Debug` never shows the digits, so a stray `{:?}` cannot log it.
#[derive(Clone, PartialEq, Eq)]
pub struct OtpCode(String);

impl OtpCode {
    /// The digits, for the mail body only.
    pub fn reveal(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for OtpCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OtpCode(<redacted>)")
    }
}

/// What a verified code authorizes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OtpPurpose {
    Login { email: String },
    UpdatePrimary { user_id: String, new_email: String },
    UpdateSecondary { user_id: String, new_email: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OtpRejection {
    Wrong,
    Expired,
    Attempts,
}

impl OtpRejection {
    /// The frame API's error code.
    pub fn code(self) -> &'static str {
        match self {
            Self::Wrong => "otp_wrong",
            Self::Expired => "otp_expired",
            Self::Attempts => "otp_attempts",
        }
    }

    /// The frame API's message: for whoever reads the API (the frame words its own from the code).
    pub fn message(self) -> &'static str {
        match self {
            Self::Wrong => "that code is not the one mailed",
            Self::Expired => "that code has expired or was already used",
            Self::Attempts => "that code took too many wrong tries; ask for a new one",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OtpRejected {
    pub reason: OtpRejection,
    pub attempts_left: u32,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("too many one-time codes are pending; try again in a few minutes")]
pub struct OtpStoreFull;

struct Challenge {
    digest: [u8; 32],
    purpose: OtpPurpose,
    /// The frame the code was issued for: another frame cannot spend it.
    owner: String,
    expires_ms: u64,
    attempts_left: u32,
}

pub struct OtpStore {
    secret: [u8; 32],
    ttl_ms: u64,
    attempts: u32,
    capacity: usize,
    challenges: HashMap<String, Challenge>,
}

/// The largest multiple of 10^6 that fits a u32: draws at or above it are redrawn, so every code
/// is equally likely.
const UNIFORM_BOUND: u32 = 4_294_000_000;

impl OtpStore {
    pub fn new(entropy: &dyn Entropy, ttl_ms: u64, attempts: u32, capacity: usize) -> Self {
        let mut secret = [0u8; 32];
        entropy.fill(&mut secret);
        Self { secret, ttl_ms, attempts: attempts.max(1), capacity, challenges: HashMap::new() }
    }

    pub fn len(&self) -> usize {
        self.challenges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.challenges.is_empty()
    }

    /// A fresh challenge for `owner`; the owner's earlier challenges die (one live code per frame).
    pub fn issue(
        &mut self,
        purpose: OtpPurpose,
        owner: &str,
        now_ms: u64,
        entropy: &dyn Entropy,
    ) -> Result<(String, OtpCode), OtpStoreFull> {
        self.challenges.retain(|_, challenge| challenge.expires_ms > now_ms && challenge.owner != owner);
        if self.challenges.len() >= self.capacity {
            return Err(OtpStoreFull);
        }
        let challenge_id = crate::random_hex(entropy, 16);
        let code = draw_code(entropy);
        let digest = self.digest(&challenge_id, code.reveal());
        self.challenges.insert(
            challenge_id.clone(),
            Challenge {
                digest,
                purpose,
                owner: owner.to_owned(),
                expires_ms: now_ms.saturating_add(self.ttl_ms),
                attempts_left: self.attempts,
            },
        );
        Ok((challenge_id, code))
    }

    /// Spends a code. A challenge that is unknown, of another owner or past its expiry is
    /// `Expired`; a wrong code costs an attempt and the last one kills the challenge.
    pub fn verify(&mut self, challenge_id: &str, owner: &str, code: &str, now_ms: u64) -> Result<OtpPurpose, OtpRejected> {
        let expired = OtpRejected { reason: OtpRejection::Expired, attempts_left: 0 };
        let Some(challenge) = self.challenges.get_mut(challenge_id) else {
            return Err(expired);
        };
        if challenge.owner != owner {
            return Err(expired);
        }
        if challenge.expires_ms <= now_ms {
            self.challenges.remove(challenge_id);
            return Err(expired);
        }
        let well_formed = code.len() == 6 && code.bytes().all(|byte| byte.is_ascii_digit());
        let presented = digest(&self.secret, challenge_id, code);
        if well_formed && bool::from(presented.ct_eq(&challenge.digest)) {
            let challenge = self.challenges.remove(challenge_id).expect("present above");
            return Ok(challenge.purpose);
        }
        challenge.attempts_left = challenge.attempts_left.saturating_sub(1);
        if challenge.attempts_left == 0 {
            self.challenges.remove(challenge_id);
            return Err(OtpRejected { reason: OtpRejection::Attempts, attempts_left: 0 });
        }
        Err(OtpRejected { reason: OtpRejection::Wrong, attempts_left: challenge.attempts_left })
    }

    /// The purpose of a live challenge of `owner` (the email-update step checks which step it is).
    pub fn purpose_of(&self, challenge_id: &str, owner: &str) -> Option<&OtpPurpose> {
        self.challenges.get(challenge_id).filter(|challenge| challenge.owner == owner).map(|challenge| &challenge.purpose)
    }

    /// Drops every challenge of `owner` (sign-out, frame gone).
    pub fn forget_owner(&mut self, owner: &str) {
        self.challenges.retain(|_, challenge| challenge.owner != owner);
    }

    fn digest(&self, challenge_id: &str, code: &str) -> [u8; 32] {
        digest(&self.secret, challenge_id, code)
    }
}

fn digest(secret: &[u8; 32], challenge_id: &str, code: &str) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(challenge_id.as_bytes());
    mac.update(code.as_bytes());
    mac.finalize().into_bytes().into()
}

fn draw_code(entropy: &dyn Entropy) -> OtpCode {
    loop {
        let mut bytes = [0u8; 4];
        entropy.fill(&mut bytes);
        let draw = u32::from_le_bytes(bytes);
        if draw < UNIFORM_BOUND {
            return OtpCode(format!("{:06}", draw % 1_000_000));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SeededEntropy;

    const TEN_MINUTES: u64 = 600_000;

    fn store() -> (OtpStore, SeededEntropy) {
        let entropy = SeededEntropy::new(7);
        (OtpStore::new(&entropy, TEN_MINUTES, 5, 4), entropy)
    }

    fn login() -> OtpPurpose {
        OtpPurpose::Login { email: "a@example.com".into() }
    }

    fn wrong_code(code: &OtpCode) -> String {
        let first = (code.reveal().as_bytes()[0] - b'0' + 1) % 10;
        format!("{first}{}", &code.reveal()[1..])
    }

    #[test]
    fn given_an_issued_code_when_the_right_code_is_given_then_its_purpose_comes_back_once() {
        let (mut store, entropy) = store();
        let (id, code) = store.issue(login(), "frame-1", 0, &entropy).unwrap();
        assert_eq!(id.len(), 32);
        assert_eq!(code.reveal().len(), 6);
        assert_eq!(store.verify(&id, "frame-1", code.reveal(), 1_000), Ok(login()));
        assert_eq!(store.verify(&id, "frame-1", code.reveal(), 1_000).unwrap_err().reason, OtpRejection::Expired);
    }

    #[test]
    fn given_an_issued_code_when_wrong_five_times_then_it_is_dead_even_for_the_right_code() {
        let (mut store, entropy) = store();
        let (id, code) = store.issue(login(), "frame-1", 0, &entropy).unwrap();
        for left in (1..5).rev() {
            assert_eq!(
                store.verify(&id, "frame-1", &wrong_code(&code), 0),
                Err(OtpRejected { reason: OtpRejection::Wrong, attempts_left: left })
            );
        }
        assert_eq!(store.verify(&id, "frame-1", &wrong_code(&code), 0).unwrap_err().reason, OtpRejection::Attempts);
        assert_eq!(store.verify(&id, "frame-1", code.reveal(), 0).unwrap_err().reason, OtpRejection::Expired);
    }

    #[test]
    fn given_an_issued_code_when_ten_minutes_pass_then_it_is_expired() {
        let (mut store, entropy) = store();
        let (id, code) = store.issue(login(), "frame-1", 0, &entropy).unwrap();
        assert_eq!(store.verify(&id, "frame-1", code.reveal(), TEN_MINUTES).unwrap_err().reason, OtpRejection::Expired);
        assert!(store.is_empty());
    }

    #[test]
    fn given_a_code_of_another_frame_when_verified_then_it_is_refused_without_costing_an_attempt() {
        let (mut store, entropy) = store();
        let (id, code) = store.issue(login(), "frame-1", 0, &entropy).unwrap();
        assert_eq!(store.verify(&id, "frame-2", code.reveal(), 0).unwrap_err().reason, OtpRejection::Expired);
        assert_eq!(store.verify(&id, "frame-1", code.reveal(), 0), Ok(login()));
    }

    #[test]
    fn given_a_full_store_when_issuing_then_it_refuses_until_expired_codes_are_swept() {
        let (mut store, entropy) = store();
        for owner in 0..4 {
            store.issue(login(), &format!("frame-{owner}"), 0, &entropy).unwrap();
        }
        assert_eq!(store.issue(login(), "frame-9", 1, &entropy).unwrap_err(), OtpStoreFull);
        assert!(store.issue(login(), "frame-9", TEN_MINUTES, &entropy).is_ok());
        assert_eq!(store.len(), 1);
    }

    #[test]
    fn given_a_new_code_for_the_same_frame_when_issued_then_the_older_one_dies() {
        let (mut store, entropy) = store();
        let (first, code) = store.issue(login(), "frame-1", 0, &entropy).unwrap();
        store.issue(login(), "frame-1", 0, &entropy).unwrap();
        assert_eq!(store.verify(&first, "frame-1", code.reveal(), 0).unwrap_err().reason, OtpRejection::Expired);
    }

    #[test]
    fn given_a_code_when_debug_printed_then_the_digits_do_not_show() {
        let (mut store, entropy) = store();
        let (_, code) = store.issue(login(), "frame-1", 0, &entropy).unwrap();
        assert!(!format!("{code:?}").contains(code.reveal()));
    }

    #[test]
    fn given_many_draws_then_codes_are_six_digits_and_spread_over_the_range() {
        let entropy = SeededEntropy::new(1);
        let mut first_digits = [0u32; 10];
        for _ in 0..2_000 {
            let code = draw_code(&entropy);
            assert!(code.reveal().len() == 6 && code.reveal().bytes().all(|byte| byte.is_ascii_digit()));
            first_digits[(code.reveal().as_bytes()[0] - b'0') as usize] += 1;
        }
        assert!(first_digits.iter().all(|&count| (120..=280).contains(&count)), "{first_digits:?}");
    }
}

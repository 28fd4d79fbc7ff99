//! The registry of secure frames: each registered frame has an id, a bearer token (kept in the
//! frame's memory), the HPKE key shares are sealed to, the wallets it holds a device share of, and
//! the login it has verified. Bounded, and frames expire after 24 hours. Pure: `now_ms` in.

use std::collections::HashMap;
use std::net::IpAddr;

use subtle::ConstantTimeEq;

use crate::Entropy;
use crate::seal::FramePublicKey;

pub const FRAME_TTL_MS: u64 = 24 * 60 * 60 * 1000;
/// Device wallets a frame may claim (one per account it ever logged into on that browser).
pub const MAX_DEVICE_WALLETS: usize = 32;
/// Frames one session may have at once. A visitor's page has one; a reload registers the next
/// before the old one is dropped, and a reload that lost its token leaves the old one behind.
/// Beyond this the session's oldest frame goes, so nobody can fill the registry through one session.
pub const MAX_FRAMES_PER_SESSION: usize = 4;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameLogin {
    pub user_id: String,
    pub email: Option<String>,
    pub username: Option<String>,
    pub method: crate::service::LoginMethod,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingEmailUpdate {
    pub challenge_id: String,
    pub step: crate::service::EmailUpdateStep,
    pub new_email: String,
}

#[derive(Debug)]
pub struct Frame {
    pub frame_id: String,
    pub session_id: String,
    /// The project of the frame's session (its logins find and make that project's users only).
    pub project: String,
    pub public_key: FramePublicKey,
    pub device_wallets: Vec<String>,
    pub login: Option<FrameLogin>,
    pub email_update: Option<PendingEmailUpdate>,
    /// The client address that registered the frame, keyed as `mail_limits::client_key` (none
    /// when the peer is unknown): whose budget of mails the frame's codes spend.
    pub client: Option<IpAddr>,
    /// When the frame last had a code mailed (any address): its `email_cooldown` runs from there.
    pub last_mail_ms: Option<u64>,
    secret: [u8; 32],
    expires_ms: u64,
}

impl Frame {
    /// Ends the frame no later than `expires_ms` (a frame that takes over another's login takes
    /// over its expiry too).
    pub fn expire_by(&mut self, expires_ms: u64) {
        self.expires_ms = self.expires_ms.min(expires_ms);
    }

    pub fn expires_ms(&self) -> u64 {
        self.expires_ms
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("too many frames are open; try again later")]
    Full,
    #[error("unknown or expired frame")]
    Unauthorized,
    #[error("deviceWallets holds too many or malformed entries")]
    BadDeviceWallets,
}

pub struct FrameRegistry {
    frames: HashMap<String, Frame>,
    capacity: usize,
}

impl FrameRegistry {
    pub fn new(capacity: usize) -> Self {
        Self { frames: HashMap::new(), capacity }
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Makes room for one more frame of `session_id`, registered by `client` (keyed as the frames'
    /// `client`): drops expired frames, the session's oldest ones beyond [`MAX_FRAMES_PER_SESSION`]
    /// − 1 and, when the registry is full, the frames of sessions that are no longer live
    /// (`is_live`); when it is still full (every frame a live session's), the client address that
    /// holds the most frames gives up its oldest, the registering client's own on a tie. So a few
    /// addresses holding many live sessions open cannot keep everyone else out: the registry is
    /// shared out by address. Returns the ids of the frames dropped.
    pub fn make_room(&mut self, session_id: &str, client: Option<IpAddr>, now_ms: u64, is_live: impl Fn(&str) -> bool) -> Vec<String> {
        let mut dropped: Vec<String> = Vec::new();
        let mut drop_where = |frames: &mut HashMap<String, Frame>, gone: &dyn Fn(&Frame) -> bool| {
            frames.retain(|id, frame| {
                let keep = !gone(frame);
                if !keep {
                    dropped.push(id.clone());
                }
                keep
            })
        };
        drop_where(&mut self.frames, &|frame| frame.expires_ms <= now_ms);
        let mut own: Vec<(u64, String)> =
            self.frames.values().filter(|f| f.session_id == session_id).map(|f| (f.expires_ms, f.frame_id.clone())).collect();
        if own.len() >= MAX_FRAMES_PER_SESSION {
            own.sort();
            let excess = own.len() + 1 - MAX_FRAMES_PER_SESSION;
            let oldest: Vec<String> = own.into_iter().take(excess).map(|(_, id)| id).collect();
            drop_where(&mut self.frames, &|frame| oldest.contains(&frame.frame_id));
        }
        if self.frames.len() >= self.capacity {
            let mut live: HashMap<String, bool> = HashMap::new();
            for frame in self.frames.values() {
                live.entry(frame.session_id.clone()).or_insert_with(|| is_live(&frame.session_id));
            }
            drop_where(&mut self.frames, &|frame| !live[&frame.session_id]);
        }
        if self.frames.len() >= self.capacity {
            let mut held: HashMap<Option<IpAddr>, usize> = HashMap::new();
            for frame in self.frames.values() {
                *held.entry(frame.client).or_default() += 1;
            }
            let most = held.into_iter().max_by_key(|&(address, count)| (count, address == client)).map(|(address, _)| address);
            let oldest = self.frames.values().filter(|f| Some(f.client) == most).min_by_key(|f| f.expires_ms).map(|f| f.frame_id.clone());
            if let Some(oldest) = oldest {
                drop_where(&mut self.frames, &|frame| frame.frame_id == oldest);
            }
        }
        dropped
    }

    /// Registers a frame; gives (frameId, frameToken). The token is `{frameId}.{secret}`: the id
    /// finds the frame, the secret is compared in constant time.
    pub fn register(
        &mut self,
        session_id: &str,
        public_key: FramePublicKey,
        device_wallets: Vec<String>,
        now_ms: u64,
        entropy: &dyn Entropy,
    ) -> Result<(String, String), FrameError> {
        let well_formed = |wallet: &String| !wallet.is_empty() && wallet.len() <= 64 && wallet.bytes().all(|b| b.is_ascii_alphanumeric());
        if device_wallets.len() > MAX_DEVICE_WALLETS || !device_wallets.iter().all(well_formed) {
            return Err(FrameError::BadDeviceWallets);
        }
        self.frames.retain(|_, frame| frame.expires_ms > now_ms);
        if self.frames.len() >= self.capacity {
            return Err(FrameError::Full);
        }
        let frame_id = crate::random_hex(entropy, 16);
        let mut secret = [0u8; 32];
        entropy.fill(&mut secret);
        let token = format!("{frame_id}.{}", crate::b64url(&secret));
        self.frames.insert(
            frame_id.clone(),
            Frame {
                frame_id: frame_id.clone(),
                session_id: session_id.to_owned(),
                project: String::new(),
                public_key,
                device_wallets,
                login: None,
                email_update: None,
                client: None,
                last_mail_ms: None,
                secret,
                expires_ms: now_ms.saturating_add(FRAME_TTL_MS),
            },
        );
        Ok((frame_id, token))
    }

    /// The frame a token names, when the token is right and the frame alive.
    pub fn authenticate(&mut self, token: &str, now_ms: u64) -> Result<&mut Frame, FrameError> {
        let (frame_id, secret) = token.split_once('.').ok_or(FrameError::Unauthorized)?;
        let presented = crate::b64url_decode(secret).ok_or(FrameError::Unauthorized)?;
        let frame = self.frames.get_mut(frame_id).ok_or(FrameError::Unauthorized)?;
        if frame.expires_ms <= now_ms || !bool::from(presented.ct_eq(&frame.secret[..])) {
            return Err(FrameError::Unauthorized);
        }
        Ok(frame)
    }

    /// The frame `frame_id` of session `session_id` (the gateway's calls name both).
    pub fn of_session(&mut self, session_id: &str, frame_id: &str, now_ms: u64) -> Result<&mut Frame, FrameError> {
        match self.frames.get_mut(frame_id) {
            Some(frame) if frame.session_id == session_id && frame.expires_ms > now_ms => Ok(frame),
            _ => Err(FrameError::Unauthorized),
        }
    }

    pub fn remove(&mut self, frame_id: &str) -> Option<Frame> {
        self.frames.remove(frame_id)
    }

    pub fn get_mut(&mut self, frame_id: &str) -> Option<&mut Frame> {
        self.frames.get_mut(frame_id)
    }

    /// The latest time a live frame of `session_id` had a code mailed (a new frame of the session
    /// takes it over, so that its cooldown does not start afresh).
    pub fn last_mail_of_session(&self, session_id: &str, now_ms: u64) -> Option<u64> {
        self.frames
            .values()
            .filter(|frame| frame.session_id == session_id && frame.expires_ms > now_ms)
            .filter_map(|frame| frame.last_mail_ms)
            .max()
    }

    /// Drops every frame of a session (the session ended).
    pub fn forget_session(&mut self, session_id: &str) -> Vec<String> {
        let gone: Vec<String> =
            self.frames.values().filter(|frame| frame.session_id == session_id).map(|frame| frame.frame_id.clone()).collect();
        for frame_id in &gone {
            self.frames.remove(frame_id);
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SeededEntropy;
    use crate::seal::test_key_pair;

    fn key(entropy: &SeededEntropy) -> FramePublicKey {
        FramePublicKey::from_b64url(&test_key_pair(entropy).1).unwrap()
    }

    #[test]
    fn given_a_registered_frame_when_its_token_is_presented_then_it_is_found_and_a_forged_one_is_not() {
        let entropy = SeededEntropy::new(1);
        let mut registry = FrameRegistry::new(8);
        let (frame_id, token) = registry.register("session-1", key(&entropy), vec!["w1".into()], 0, &entropy).unwrap();
        assert_eq!(registry.authenticate(&token, 1).unwrap().frame_id, frame_id);
        let forged = format!("{frame_id}.{}", crate::b64url(&[0u8; 32]));
        assert_eq!(registry.authenticate(&forged, 1).unwrap_err(), FrameError::Unauthorized);
        assert_eq!(registry.authenticate(&frame_id, 1).unwrap_err(), FrameError::Unauthorized);
        assert_eq!(registry.of_session("session-2", &frame_id, 1).unwrap_err(), FrameError::Unauthorized);
        assert!(registry.of_session("session-1", &frame_id, 1).is_ok());
    }

    #[test]
    fn given_a_frame_when_24_hours_pass_then_its_token_no_longer_works() {
        let entropy = SeededEntropy::new(2);
        let mut registry = FrameRegistry::new(8);
        let (_, token) = registry.register("s", key(&entropy), vec![], 0, &entropy).unwrap();
        assert_eq!(registry.authenticate(&token, FRAME_TTL_MS).unwrap_err(), FrameError::Unauthorized);
    }

    #[test]
    fn given_a_full_registry_when_registering_then_it_refuses_until_frames_expire_or_sessions_end() {
        let entropy = SeededEntropy::new(3);
        let mut registry = FrameRegistry::new(2);
        registry.register("a", key(&entropy), vec![], 0, &entropy).unwrap();
        registry.register("b", key(&entropy), vec![], 0, &entropy).unwrap();
        assert_eq!(registry.register("c", key(&entropy), vec![], 1, &entropy).unwrap_err(), FrameError::Full);
        assert_eq!(registry.forget_session("a").len(), 1);
        registry.register("c", key(&entropy), vec![], 1, &entropy).unwrap();
        assert!(registry.register("d", key(&entropy), vec![], FRAME_TTL_MS + 1, &entropy).is_ok());
        assert_eq!(registry.len(), 1);
    }

    #[test]
    fn given_a_session_with_its_most_frames_when_another_registers_then_its_oldest_goes() {
        let entropy = SeededEntropy::new(5);
        let mut registry = FrameRegistry::new(64);
        let mut ids = vec![];
        for at in 0..MAX_FRAMES_PER_SESSION as u64 {
            assert!(registry.make_room("s", None, at, |_| true).is_empty());
            ids.push(registry.register("s", key(&entropy), vec![], at, &entropy).unwrap().0);
        }
        registry.register("other", key(&entropy), vec![], 0, &entropy).unwrap();
        assert_eq!(registry.make_room("s", None, 10, |_| true), vec![ids[0].clone()]);
        let (newest, _) = registry.register("s", key(&entropy), vec![], 10, &entropy).unwrap();
        assert!(registry.of_session("s", &ids[0], 11).is_err());
        for id in ids[1..].iter().chain([&newest]) {
            assert!(registry.of_session("s", id, 11).is_ok());
        }
        assert_eq!(registry.len(), MAX_FRAMES_PER_SESSION + 1, "the other session's frame stays");
    }

    #[test]
    fn given_a_full_registry_when_making_room_then_only_frames_of_sessions_no_longer_live_go() {
        let entropy = SeededEntropy::new(6);
        let mut registry = FrameRegistry::new(2);
        let (gone, _) = registry.register("ended", key(&entropy), vec![], 0, &entropy).unwrap();
        let (kept, _) = registry.register("live", key(&entropy), vec![], 0, &entropy).unwrap();
        assert_eq!(registry.make_room("new", None, 1, |s| s != "ended"), vec![gone]);
        registry.register("new", key(&entropy), vec![], 1, &entropy).unwrap();
        assert!(registry.of_session("live", &kept, 2).is_ok());
        // Full without making room: the registry refuses.
        assert_eq!(registry.register("newer", key(&entropy), vec![], 2, &entropy).unwrap_err(), FrameError::Full);
    }

    #[test]
    fn given_a_registry_full_of_live_frames_when_making_room_then_the_address_holding_the_most_gives_up_its_oldest() {
        let entropy = SeededEntropy::new(7);
        let address = |n: u8| Some(IpAddr::from([10, 0, 0, n]));
        let mut registry = FrameRegistry::new(4);
        // Given: address 1 holds three live frames (registered in this order), address 2 one.
        let register = |registry: &mut FrameRegistry, session: &str, client, at| {
            assert!(registry.make_room(session, client, at, |_| true).is_empty());
            let (id, _) = registry.register(session, key(&entropy), vec![], at, &entropy).unwrap();
            registry.get_mut(&id).unwrap().client = client;
            id
        };
        let held: Vec<String> = (0..3).map(|i| register(&mut registry, &format!("a{i}"), address(1), i)).collect();
        let other = register(&mut registry, "b", address(2), 3);
        // When a third address registers, then address 1's oldest frame goes, and only it.
        assert_eq!(registry.make_room("c", address(3), 4, |_| true), vec![held[0].clone()]);
        registry.register("c", key(&entropy), vec![], 4, &entropy).unwrap();
        assert!(registry.of_session("b", &other, 5).is_ok(), "the address with one frame keeps it");
        assert!(registry.of_session("a1", &held[1], 5).is_ok());

        // On a tie, the registering address gives up its own oldest.
        let mut tied = FrameRegistry::new(4);
        let _first = [register(&mut tied, "x0", address(1), 0), register(&mut tied, "x1", address(1), 1)];
        let second = [register(&mut tied, "y0", address(2), 2), register(&mut tied, "y1", address(2), 3)];
        assert_eq!(tied.make_room("y2", address(2), 4, |_| true), vec![second[0].clone()]);
    }

    #[test]
    fn given_malformed_device_wallets_when_registering_then_they_are_refused() {
        let entropy = SeededEntropy::new(4);
        let mut registry = FrameRegistry::new(2);
        let too_many = (0..=MAX_DEVICE_WALLETS).map(|n| format!("w{n}")).collect();
        assert_eq!(registry.register("a", key(&entropy), too_many, 0, &entropy).unwrap_err(), FrameError::BadDeviceWallets);
        assert_eq!(registry.register("a", key(&entropy), vec!["a b".into()], 0, &entropy).unwrap_err(), FrameError::BadDeviceWallets);
    }
}

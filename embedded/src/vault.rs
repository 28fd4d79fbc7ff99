//! The embedded service's store (sled): users, their social identities and email, and wallets with
//! the server and recovery shares sealed at rest under two different keys (AES-256-GCM, the wallet
//! id in the AAD so a ciphertext moved to another wallet does not open). Every write is flushed
//! before it is acknowledged, so nothing acknowledged is lost on a crash.
//!
//! Users are kept per project (layout 2): an email or a social identity finds the user of the
//! project the login came through, so a wallet made on one project's site is never reached
//! through another project's (its host page sees the code the visitor types). A vault written
//! before (layout 1: users keyed by email or identity alone) is migrated once, on open, to the
//! project it belongs to ([`Vault::open`]).

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use serde::{Deserialize, Serialize};
use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionError};

use crate::config::ShareKeys;
use crate::{Entropy, normalize_email};

const SERVER_SHARE_AAD: &str = "vestibule/server-share/v1|";
const RECOVERY_SHARE_AAD: &str = "vestibule/recovery-share/v1|";
/// The format of the shares the frame makes (npm shamir-secret-sharing: secret length + 1).
pub const SHARE_LEN: usize = 33;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub user_id: String,
    /// The project the user logged in through (empty only in a layout-1 record, never after open).
    #[serde(default)]
    pub project: String,
    pub email: Option<String>,
    pub username: Option<String>,
    pub created_ms: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalletRecord {
    pub wallet_id: String,
    pub user_id: String,
    pub eip155_address: String,
    pub solana_address: String,
    /// nonce (12 bytes) || AES-256-GCM ciphertext, hex.
    server_share: String,
    recovery_share: String,
}

#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    #[error("the vault's database failed: {0}")]
    Db(#[from] sled::Error),
    #[error("a stored record is unreadable: {0}")]
    Corrupt(String),
    #[error("a share does not open with the configured key (wrong key file, or a record moved)")]
    ShareKey,
    #[error("this user already has a wallet")]
    WalletExists,
    #[error("a share must be {SHARE_LEN} bytes")]
    BadShare,
    #[error("that email belongs to another account")]
    EmailTaken,
    #[error("no such user")]
    NoUser,
    #[error("a project id must not be empty nor hold a NUL character")]
    BadProject,
    #[error(
        "the embedded vault holds {users} user(s) from before users were kept per project, and several projects are \
         configured; say which project they belong to with `[embedded] legacy_users_project = \"<project id>\"` \
         (configured projects: {projects})"
    )]
    LegacyUnassigned { users: usize, projects: String },
}

/// The tree holding the vault's layout version.
const META_TREE: &str = "embedded/vault-meta";
const LAYOUT_KEY: &[u8] = b"layout";
/// Layout 2: `emails` keyed `{project}\0{email}`, `identities` `{project}\0{provider}\0{subject}`,
/// users carry their project. (Layout 1, unversioned: keyed by email or identity alone.)
pub const LAYOUT: &[u8] = b"2";

/// `{project}\0{rest}`: a key of the project's users.
fn scoped(project: &str, rest: &str) -> Result<Vec<u8>, VaultError> {
    if project.is_empty() || project.contains('\0') {
        return Err(VaultError::BadProject);
    }
    let mut key = Vec::with_capacity(project.len() + 1 + rest.len());
    key.extend_from_slice(project.as_bytes());
    key.push(0);
    key.extend_from_slice(rest.as_bytes());
    Ok(key)
}

pub struct Vault {
    db: sled::Db,
    users: sled::Tree,
    emails: sled::Tree,
    identities: sled::Tree,
    wallets: sled::Tree,
    user_wallets: sled::Tree,
    meta: sled::Tree,
    keys: ShareKeys,
}

fn abort<T>(error: VaultError) -> Result<T, ConflictableTransactionError<VaultError>> {
    Err(ConflictableTransactionError::Abort(error))
}

fn flatten(error: TransactionError<VaultError>) -> VaultError {
    match error {
        TransactionError::Abort(error) => error,
        TransactionError::Storage(error) => VaultError::Db(error),
    }
}

impl Vault {
    /// Opens the vault. A vault of layout 1 (users keyed by email or identity alone, before they
    /// were kept per project) is migrated in one transaction, flushed, to `legacy_project`: the
    /// gateway's one project, or the one `[embedded] legacy_users_project` names. With users of
    /// layout 1 and no such project, it is refused ([`VaultError::LegacyUnassigned`], naming
    /// `projects`): guessing would hand one project's wallets to another.
    pub fn open(db: sled::Db, keys: ShareKeys, legacy_project: Option<&str>, projects: &[String]) -> Result<Self, VaultError> {
        let vault = Self {
            users: db.open_tree("embedded/users")?,
            emails: db.open_tree("embedded/emails")?,
            identities: db.open_tree("embedded/identities")?,
            wallets: db.open_tree("embedded/wallets")?,
            user_wallets: db.open_tree("embedded/user-wallets")?,
            meta: db.open_tree(META_TREE)?,
            db,
            keys,
        };
        vault.upgrade(legacy_project, projects)?;
        Ok(vault)
    }

    fn upgrade(&self, legacy_project: Option<&str>, projects: &[String]) -> Result<(), VaultError> {
        match self.meta.get(LAYOUT_KEY)? {
            Some(layout) if layout.as_ref() == LAYOUT => return Ok(()),
            Some(layout) => return Err(VaultError::Corrupt(format!("unknown vault layout {:?}", String::from_utf8_lossy(&layout)))),
            None => {}
        }
        if self.users.is_empty() && self.emails.is_empty() && self.identities.is_empty() {
            self.meta.insert(LAYOUT_KEY, LAYOUT)?;
            self.db.flush()?;
            return Ok(());
        }
        let Some(project) = legacy_project else {
            return Err(VaultError::LegacyUnassigned { users: self.users.len(), projects: projects.join(", ") });
        };
        scoped(project, "")?;
        let read = |tree: &sled::Tree| tree.iter().collect::<Result<Vec<_>, _>>();
        let (users, emails, identities) = (read(&self.users)?, read(&self.emails)?, read(&self.identities)?);
        let mut migrated = Vec::with_capacity(users.len());
        for (user_id, bytes) in &users {
            let mut user: User = decode(bytes)?;
            user.project = project.to_owned();
            migrated.push((user_id.clone(), encode(&user)));
        }
        let rekey = |key: &[u8]| {
            let mut scoped = project.as_bytes().to_vec();
            scoped.push(0);
            scoped.extend_from_slice(key);
            scoped
        };
        (&self.users, &self.emails, &self.identities, &self.meta)
            .transaction(|(users_tx, emails_tx, identities_tx, meta_tx)| {
                for (user_id, record) in &migrated {
                    users_tx.insert(user_id.as_ref(), record.as_slice())?;
                }
                // Old keys go first: a layout-1 identity key has one NUL, a scoped one two, so
                // none of the new keys is an old one, but the order keeps that obvious.
                for (key, _) in &emails {
                    emails_tx.remove(key.as_ref())?;
                }
                for (key, _) in &identities {
                    identities_tx.remove(key.as_ref())?;
                }
                for (key, user_id) in &emails {
                    emails_tx.insert(rekey(key), user_id.as_ref())?;
                }
                for (key, user_id) in &identities {
                    identities_tx.insert(rekey(key), user_id.as_ref())?;
                }
                meta_tx.insert(LAYOUT_KEY, LAYOUT)?;
                Ok::<_, ConflictableTransactionError<VaultError>>(())
            })
            .map_err(flatten)?;
        self.db.flush()?;
        tracing::info!(users = users.len(), project, "the embedded vault's users were migrated to their project (layout 2)");
        Ok(())
    }

    pub fn user(&self, user_id: &str) -> Result<Option<User>, VaultError> {
        self.users.get(user_id)?.map(|bytes| decode(&bytes)).transpose()
    }

    /// The user of `project` whose login address is `email`.
    pub fn user_by_email(&self, project: &str, email: &str) -> Result<Option<User>, VaultError> {
        match self.emails.get(scoped(project, &normalize_email(email))?)? {
            Some(user_id) => self.user(&String::from_utf8_lossy(&user_id)),
            None => Ok(None),
        }
    }

    /// The user of `project` owning `email`, created on first login through that project.
    pub fn login_email_user(&self, project: &str, email: &str, now_ms: u64, entropy: &dyn Entropy) -> Result<User, VaultError> {
        let email = normalize_email(email);
        if let Some(user) = self.user_by_email(project, &email)? {
            return Ok(user);
        }
        let key = scoped(project, &email)?;
        let user = User {
            user_id: crate::random_hex(entropy, 16),
            project: project.to_owned(),
            email: Some(email.clone()),
            username: None,
            created_ms: now_ms,
        };
        let record = encode(&user);
        let created = (&self.users, &self.emails)
            .transaction(|(users, emails)| {
                if let Some(existing) = emails.get(&key)? {
                    return Ok(String::from_utf8_lossy(&existing).into_owned());
                }
                if users.get(user.user_id.as_bytes())?.is_some() {
                    return abort(VaultError::Corrupt("a new user's id is taken".into()));
                }
                users.insert(user.user_id.as_bytes(), record.as_slice())?;
                emails.insert(key.as_slice(), user.user_id.as_bytes())?;
                Ok(user.user_id.clone())
            })
            .map_err(flatten)?;
        self.db.flush()?;
        self.user(&created)?.ok_or(VaultError::NoUser)
    }

    /// The user of a social identity in `project`, created on first login through that project.
    /// The provider's email is kept for display only: it does not join the account of that email
    /// (a provider's unverified email must not open someone else's wallet).
    pub fn login_social_user(
        &self,
        project: &str,
        provider: &str,
        subject: &str,
        username: Option<&str>,
        now_ms: u64,
        entropy: &dyn Entropy,
    ) -> Result<User, VaultError> {
        let identity = scoped(project, &format!("{provider}\u{0}{subject}"))?;
        if let Some(user_id) = self.identities.get(&identity)? {
            return self.user(&String::from_utf8_lossy(&user_id))?.ok_or(VaultError::NoUser);
        }
        let user = User {
            user_id: crate::random_hex(entropy, 16),
            project: project.to_owned(),
            email: None,
            username: username.map(str::to_owned),
            created_ms: now_ms,
        };
        let record = encode(&user);
        let user_id = (&self.users, &self.identities)
            .transaction(|(users, identities)| {
                if let Some(existing) = identities.get(&identity)? {
                    return Ok(String::from_utf8_lossy(&existing).into_owned());
                }
                if users.get(user.user_id.as_bytes())?.is_some() {
                    return abort(VaultError::Corrupt("a new user's id is taken".into()));
                }
                users.insert(user.user_id.as_bytes(), record.as_slice())?;
                identities.insert(identity.as_slice(), user.user_id.as_bytes())?;
                Ok(user.user_id.clone())
            })
            .map_err(flatten)?;
        self.db.flush()?;
        self.user(&user_id)?.ok_or(VaultError::NoUser)
    }

    /// Moves a user's login email to `new_email` (after both codes of the update were verified),
    /// within the user's project: another project's user of that address is another account.
    pub fn update_email(&self, user_id: &str, new_email: &str) -> Result<User, VaultError> {
        let new_email = normalize_email(new_email);
        let project = self.user(user_id)?.ok_or(VaultError::NoUser)?.project;
        let new_key = scoped(&project, &new_email)?;
        let old_key = |old: &str| scoped(&project, old);
        (&self.users, &self.emails)
            .transaction(|(users, emails)| {
                let Some(bytes) = users.get(user_id.as_bytes())? else {
                    return abort(VaultError::NoUser);
                };
                let mut user: User = match decode(&bytes) {
                    Ok(user) => user,
                    Err(error) => return abort(error),
                };
                if user.project != project {
                    return abort(VaultError::NoUser);
                }
                if let Some(owner) = emails.get(new_key.as_slice())?
                    && owner.as_ref() != user_id.as_bytes()
                {
                    return abort(VaultError::EmailTaken);
                }
                if let Some(old) = &user.email {
                    match old_key(old) {
                        Ok(key) => emails.remove(key)?,
                        Err(error) => return abort(error),
                    };
                }
                emails.insert(new_key.as_slice(), user_id.as_bytes())?;
                user.email = Some(new_email.clone());
                users.insert(user_id.as_bytes(), encode(&user))?;
                Ok(())
            })
            .map_err(flatten)?;
        self.db.flush()?;
        self.user(user_id)?.ok_or(VaultError::NoUser)
    }

    pub fn wallet_of_user(&self, user_id: &str) -> Result<Option<WalletRecord>, VaultError> {
        match self.user_wallets.get(user_id)? {
            Some(wallet_id) => self.wallets.get(wallet_id)?.map(|bytes| decode(&bytes)).transpose(),
            None => Ok(None),
        }
    }

    /// Stores a user's first wallet with both shares sealed; refuses a second one.
    pub fn bind_wallet(
        &self,
        user_id: &str,
        eip155_address: &str,
        solana_address: &str,
        server_share: &[u8],
        recovery_share: &[u8],
        entropy: &dyn Entropy,
    ) -> Result<WalletRecord, VaultError> {
        if server_share.len() != SHARE_LEN || recovery_share.len() != SHARE_LEN {
            return Err(VaultError::BadShare);
        }
        let wallet_id = crate::random_hex(entropy, 16);
        let record = WalletRecord {
            server_share: seal_at_rest(&self.keys.server, SERVER_SHARE_AAD, &wallet_id, server_share, entropy),
            recovery_share: seal_at_rest(&self.keys.recovery, RECOVERY_SHARE_AAD, &wallet_id, recovery_share, entropy),
            wallet_id,
            user_id: user_id.to_owned(),
            eip155_address: eip155_address.to_owned(),
            solana_address: solana_address.to_owned(),
        };
        let bytes = encode(&record);
        (&self.wallets, &self.user_wallets)
            .transaction(|(wallets, user_wallets)| {
                if user_wallets.get(user_id.as_bytes())?.is_some() {
                    return abort(VaultError::WalletExists);
                }
                wallets.insert(record.wallet_id.as_bytes(), bytes.as_slice())?;
                user_wallets.insert(user_id.as_bytes(), record.wallet_id.as_bytes())?;
                Ok(())
            })
            .map_err(flatten)?;
        self.db.flush()?;
        Ok(record)
    }

    pub fn open_server_share(&self, wallet: &WalletRecord) -> Result<Vec<u8>, VaultError> {
        open_at_rest(&self.keys.server, SERVER_SHARE_AAD, &wallet.wallet_id, &wallet.server_share)
    }

    pub fn open_recovery_share(&self, wallet: &WalletRecord) -> Result<Vec<u8>, VaultError> {
        open_at_rest(&self.keys.recovery, RECOVERY_SHARE_AAD, &wallet.wallet_id, &wallet.recovery_share)
    }

    /// The raw stored values of every tree (tests look for leaked plaintext).
    pub fn raw_values(&self) -> Vec<Vec<u8>> {
        [&self.users, &self.emails, &self.identities, &self.wallets, &self.user_wallets]
            .iter()
            .flat_map(|tree| tree.iter().filter_map(Result::ok).map(|(_, value)| value.to_vec()))
            .collect()
    }
}

fn seal_at_rest(key: &[u8; 32], label: &str, wallet_id: &str, share: &[u8], entropy: &dyn Entropy) -> String {
    let cipher = Aes256Gcm::new(key.into());
    let mut nonce = [0u8; 12];
    entropy.fill(&mut nonce);
    let aad = format!("{label}{wallet_id}");
    let ct =
        cipher.encrypt(Nonce::from_slice(&nonce), Payload { msg: share, aad: aad.as_bytes() }).expect("AES-GCM encrypts any share length");
    let mut stored = nonce.to_vec();
    stored.extend_from_slice(&ct);
    hex::encode(stored)
}

fn open_at_rest(key: &[u8; 32], label: &str, wallet_id: &str, stored: &str) -> Result<Vec<u8>, VaultError> {
    let bytes = hex::decode(stored).map_err(|_| VaultError::Corrupt("share is not hex".into()))?;
    if bytes.len() < 12 {
        return Err(VaultError::Corrupt("share too short".into()));
    }
    let (nonce, ct) = bytes.split_at(12);
    let aad = format!("{label}{wallet_id}");
    Aes256Gcm::new(key.into()).decrypt(Nonce::from_slice(nonce), Payload { msg: ct, aad: aad.as_bytes() }).map_err(|_| VaultError::ShareKey)
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("vault records serialize")
}

fn decode<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, VaultError> {
    serde_json::from_slice(bytes).map_err(|error| VaultError::Corrupt(error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SeededEntropy;

    fn keys() -> ShareKeys {
        ShareKeys { server: [1; 32], recovery: [2; 32] }
    }

    fn temp_db() -> sled::Db {
        sled::Config::new().temporary(true).open().unwrap()
    }

    const SERVER_SHARE: [u8; 33] = [0xA5; 33];
    const RECOVERY_SHARE: [u8; 33] = [0x5A; 33];

    #[test]
    fn given_a_bound_wallet_when_reopened_from_disk_then_both_shares_open_and_no_plaintext_is_stored() {
        let dir = tempfile::tempdir().unwrap();
        let entropy = SeededEntropy::new(1);
        let wallet = {
            let vault = Vault::open(sled::open(dir.path()).unwrap(), keys(), None, &[]).unwrap();
            let user = vault.login_email_user("p", " A@Example.com ", 5, &entropy).unwrap();
            assert_eq!(user.email.as_deref(), Some("a@example.com"));
            vault.bind_wallet(&user.user_id, "0xabc", "Sol111", &SERVER_SHARE, &RECOVERY_SHARE, &entropy).unwrap()
        };
        // Reopened as a restart would (sled lets go of its lock a moment after the last handle)
        let vault = Vault::open(crate::reopen_sled(dir.path()), keys(), None, &[]).unwrap();
        let user = vault.user_by_email("p", "a@example.com").unwrap().unwrap();
        let stored = vault.wallet_of_user(&user.user_id).unwrap().unwrap();
        assert_eq!(stored, wallet);
        assert_eq!(vault.open_server_share(&stored).unwrap(), SERVER_SHARE);
        assert_eq!(vault.open_recovery_share(&stored).unwrap(), RECOVERY_SHARE);
        for value in vault.raw_values() {
            for share in [&SERVER_SHARE[..], &RECOVERY_SHARE[..]] {
                assert!(!value.windows(share.len()).any(|window| window == share));
                let hex_share = hex::encode(share);
                assert!(!String::from_utf8_lossy(&value).contains(&hex_share));
            }
        }
    }

    #[test]
    fn given_a_wrong_key_when_opening_then_it_fails_and_the_two_keys_are_not_interchangeable() {
        let entropy = SeededEntropy::new(2);
        let db = temp_db();
        let vault = Vault::open(db.clone(), keys(), None, &[]).unwrap();
        let user = vault.login_email_user("p", "a@example.com", 0, &entropy).unwrap();
        let wallet = vault.bind_wallet(&user.user_id, "0xabc", "Sol111", &SERVER_SHARE, &RECOVERY_SHARE, &entropy).unwrap();
        let wrong = Vault::open(db, ShareKeys { server: [3; 32], recovery: [1; 32] }, None, &[]).unwrap();
        assert!(matches!(wrong.open_server_share(&wallet), Err(VaultError::ShareKey)));
        assert!(matches!(wrong.open_recovery_share(&wallet), Err(VaultError::ShareKey)));
    }

    #[test]
    fn given_two_wallets_when_their_ciphertexts_are_swapped_then_neither_opens() {
        let entropy = SeededEntropy::new(3);
        let vault = Vault::open(temp_db(), keys(), None, &[]).unwrap();
        let alice = vault.login_email_user("p", "alice@example.com", 0, &entropy).unwrap();
        let bob = vault.login_email_user("p", "bob@example.com", 0, &entropy).unwrap();
        let mut a = vault.bind_wallet(&alice.user_id, "0xa", "SolA", &SERVER_SHARE, &RECOVERY_SHARE, &entropy).unwrap();
        let mut b = vault.bind_wallet(&bob.user_id, "0xb", "SolB", &RECOVERY_SHARE, &SERVER_SHARE, &entropy).unwrap();
        std::mem::swap(&mut a.server_share, &mut b.server_share);
        assert!(matches!(vault.open_server_share(&a), Err(VaultError::ShareKey)));
        assert!(matches!(vault.open_server_share(&b), Err(VaultError::ShareKey)));
        // A server-share ciphertext presented as the recovery share of the same wallet fails too.
        std::mem::swap(&mut b.recovery_share, &mut b.server_share);
        assert!(matches!(vault.open_recovery_share(&b), Err(VaultError::ShareKey)));
    }

    #[test]
    fn given_a_user_with_a_wallet_when_binding_again_then_it_is_refused() {
        let entropy = SeededEntropy::new(4);
        let vault = Vault::open(temp_db(), keys(), None, &[]).unwrap();
        let user = vault.login_email_user("p", "a@example.com", 0, &entropy).unwrap();
        vault.bind_wallet(&user.user_id, "0xa", "SolA", &SERVER_SHARE, &RECOVERY_SHARE, &entropy).unwrap();
        assert!(matches!(
            vault.bind_wallet(&user.user_id, "0xb", "SolB", &SERVER_SHARE, &RECOVERY_SHARE, &entropy),
            Err(VaultError::WalletExists)
        ));
        assert!(matches!(vault.bind_wallet("other", "0xb", "SolB", &[1; 32], &RECOVERY_SHARE, &entropy), Err(VaultError::BadShare)));
    }

    #[test]
    fn given_users_when_logging_in_again_or_updating_email_then_the_same_account_is_found() {
        let entropy = SeededEntropy::new(5);
        let vault = Vault::open(temp_db(), keys(), None, &[]).unwrap();
        let first = vault.login_email_user("p", "a@example.com", 0, &entropy).unwrap();
        assert_eq!(vault.login_email_user("p", "A@EXAMPLE.COM", 9, &entropy).unwrap(), first);
        let social = vault.login_social_user("p", "github", "42", Some("octo"), 0, &entropy).unwrap();
        assert_eq!(vault.login_social_user("p", "github", "42", None, 1, &entropy).unwrap(), social);
        assert_ne!(vault.login_social_user("p", "discord", "42", None, 1, &entropy).unwrap(), social);

        let updated = vault.update_email(&first.user_id, "new@example.com").unwrap();
        assert_eq!(updated.email.as_deref(), Some("new@example.com"));
        assert!(vault.user_by_email("p", "a@example.com").unwrap().is_none());
        assert_eq!(vault.user_by_email("p", "new@example.com").unwrap().unwrap().user_id, first.user_id);
        let other = vault.login_email_user("p", "b@example.com", 0, &entropy).unwrap();
        assert!(matches!(vault.update_email(&other.user_id, "new@example.com"), Err(VaultError::EmailTaken)));
    }

    #[test]
    fn given_one_email_when_logging_in_through_two_projects_then_each_has_its_own_user_and_wallet() {
        let entropy = SeededEntropy::new(6);
        let vault = Vault::open(temp_db(), keys(), None, &[]).unwrap();
        let alpha = vault.login_email_user("alpha", "v@example.com", 0, &entropy).unwrap();
        vault.bind_wallet(&alpha.user_id, "0xa", "SolA", &SERVER_SHARE, &RECOVERY_SHARE, &entropy).unwrap();
        let beta = vault.login_email_user("beta", "V@example.com", 1, &entropy).unwrap();
        assert_ne!(beta.user_id, alpha.user_id);
        assert_eq!((alpha.project.as_str(), beta.project.as_str()), ("alpha", "beta"));
        assert!(vault.wallet_of_user(&beta.user_id).unwrap().is_none(), "beta's user reaches no wallet of alpha's");
        assert_eq!(vault.login_email_user("alpha", "v@example.com", 2, &entropy).unwrap(), alpha);
        let social_alpha = vault.login_social_user("alpha", "github", "42", None, 0, &entropy).unwrap();
        assert_ne!(vault.login_social_user("beta", "github", "42", None, 0, &entropy).unwrap().user_id, social_alpha.user_id);
        // An email change stays in the user's project: beta's user of the address does not block it.
        vault.login_email_user("beta", "new@example.com", 3, &entropy).unwrap();
        let moved = vault.update_email(&alpha.user_id, "new@example.com").unwrap();
        assert_eq!(vault.user_by_email("alpha", "new@example.com").unwrap().unwrap().user_id, moved.user_id);
        assert!(vault.user_by_email("alpha", "v@example.com").unwrap().is_none());
        assert_ne!(vault.user_by_email("beta", "new@example.com").unwrap().unwrap().user_id, moved.user_id);
        assert!(matches!(vault.login_email_user("", "x@example.com", 0, &entropy), Err(VaultError::BadProject)));
        assert!(matches!(vault.login_email_user("a\0b", "x@example.com", 0, &entropy), Err(VaultError::BadProject)));
    }

    /// Writes a vault as layout 1 stored it (no layout key; emails and identities keyed alone).
    fn legacy_vault(dir: &std::path::Path) -> (String, String, WalletRecord) {
        let entropy = SeededEntropy::new(7);
        let db = sled::open(dir).unwrap();
        let vault = Vault::open(db.clone(), keys(), None, &[]).unwrap();
        let user = vault.login_email_user("tmp", "old@example.com", 0, &entropy).unwrap();
        let social = vault.login_social_user("tmp", "github", "42", Some("octo"), 0, &entropy).unwrap();
        let wallet = vault.bind_wallet(&user.user_id, "0xold", "SolOld", &SERVER_SHARE, &RECOVERY_SHARE, &entropy).unwrap();
        // Back to layout 1: keys without the project, records without it, no layout key.
        for tree in [&vault.emails, &vault.identities] {
            for (key, value) in tree.iter().map(Result::unwrap) {
                tree.remove(&key).unwrap();
                tree.insert(&key[b"tmp\0".len()..], value).unwrap();
            }
        }
        for (key, value) in vault.users.iter().map(Result::unwrap) {
            let mut record: serde_json::Value = serde_json::from_slice(&value).unwrap();
            record.as_object_mut().unwrap().remove("project");
            vault.users.insert(key, serde_json::to_vec(&record).unwrap()).unwrap();
        }
        vault.meta.remove(LAYOUT_KEY).unwrap();
        db.flush().unwrap();
        (user.user_id, social.user_id, wallet)
    }

    #[test]
    fn given_a_layout_1_vault_when_opened_with_its_project_then_its_users_move_there_once_and_nowhere_else() {
        let dir = tempfile::tempdir().unwrap();
        let (user_id, social_id, wallet) = legacy_vault(dir.path());
        let projects = ["alpha".to_owned(), "beta".to_owned()];
        // Several projects and none named: refused, naming the key, nothing changed.
        let error = Vault::open(crate::reopen_sled(dir.path()), keys(), None, &projects).err().unwrap().to_string();
        assert!(error.contains("legacy_users_project") && error.contains("alpha, beta"), "{error}");
        let vault = Vault::open(crate::reopen_sled(dir.path()), keys(), Some("alpha"), &projects).unwrap();
        let user = vault.user_by_email("alpha", "old@example.com").unwrap().unwrap();
        assert_eq!((user.user_id.as_str(), user.project.as_str()), (user_id.as_str(), "alpha"));
        assert_eq!(vault.wallet_of_user(&user.user_id).unwrap().unwrap(), wallet);
        assert_eq!(vault.open_recovery_share(&wallet).unwrap(), RECOVERY_SHARE);
        assert_eq!(vault.login_social_user("alpha", "github", "42", None, 1, &SeededEntropy::new(8)).unwrap().user_id, social_id);
        assert!(vault.user_by_email("beta", "old@example.com").unwrap().is_none(), "not reached through beta");
        let entropy = SeededEntropy::new(9);
        assert_ne!(vault.login_social_user("beta", "github", "42", None, 1, &entropy).unwrap().user_id, social_id);
        assert_ne!(vault.login_email_user("beta", "old@example.com", 1, &entropy).unwrap().user_id, user_id);
        drop(vault);
        // Migrated once: reopened with another project named, alpha's users stay alpha's.
        let vault = Vault::open(crate::reopen_sled(dir.path()), keys(), Some("beta"), &projects).unwrap();
        assert_eq!(vault.user_by_email("alpha", "old@example.com").unwrap().unwrap().user_id, user_id);
    }

    #[test]
    fn given_an_empty_vault_when_opened_with_several_projects_then_it_opens_as_layout_2() {
        let projects = ["alpha".to_owned(), "beta".to_owned()];
        let vault = Vault::open(temp_db(), keys(), None, &projects).unwrap();
        assert_eq!(vault.meta.get(LAYOUT_KEY).unwrap().unwrap().as_ref(), LAYOUT);
    }
}

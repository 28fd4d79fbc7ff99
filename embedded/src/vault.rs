//! The embedded service's store (sled): users, their social identities and email, and wallets with
//! the server and recovery shares sealed at rest under two different keys (AES-256-GCM, the wallet
//! id in the AAD so a ciphertext moved to another wallet does not open). Every write is flushed
//! before it is acknowledged, so nothing acknowledged is lost on a crash.

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
}

pub struct Vault {
    db: sled::Db,
    users: sled::Tree,
    emails: sled::Tree,
    identities: sled::Tree,
    wallets: sled::Tree,
    user_wallets: sled::Tree,
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
    pub fn open(db: sled::Db, keys: ShareKeys) -> Result<Self, VaultError> {
        Ok(Self {
            users: db.open_tree("embedded/users")?,
            emails: db.open_tree("embedded/emails")?,
            identities: db.open_tree("embedded/identities")?,
            wallets: db.open_tree("embedded/wallets")?,
            user_wallets: db.open_tree("embedded/user-wallets")?,
            db,
            keys,
        })
    }

    pub fn user(&self, user_id: &str) -> Result<Option<User>, VaultError> {
        self.users.get(user_id)?.map(|bytes| decode(&bytes)).transpose()
    }

    pub fn user_by_email(&self, email: &str) -> Result<Option<User>, VaultError> {
        match self.emails.get(normalize_email(email))? {
            Some(user_id) => self.user(&String::from_utf8_lossy(&user_id)),
            None => Ok(None),
        }
    }

    /// The user owning `email`, created on first login.
    pub fn login_email_user(&self, email: &str, now_ms: u64, entropy: &dyn Entropy) -> Result<User, VaultError> {
        let email = normalize_email(email);
        if let Some(user) = self.user_by_email(&email)? {
            return Ok(user);
        }
        let user = User { user_id: crate::random_hex(entropy, 16), email: Some(email.clone()), username: None, created_ms: now_ms };
        let record = encode(&user);
        let created = (&self.users, &self.emails)
            .transaction(|(users, emails)| {
                if let Some(existing) = emails.get(email.as_bytes())? {
                    return Ok(String::from_utf8_lossy(&existing).into_owned());
                }
                users.insert(user.user_id.as_bytes(), record.as_slice())?;
                emails.insert(email.as_bytes(), user.user_id.as_bytes())?;
                Ok(user.user_id.clone())
            })
            .map_err(flatten)?;
        self.db.flush()?;
        self.user(&created)?.ok_or(VaultError::NoUser)
    }

    /// The user of a social identity, created on first login. The provider's email is kept for
    /// display only: it does not join the account of that email (a provider's unverified email
    /// must not open someone else's wallet).
    pub fn login_social_user(
        &self,
        provider: &str,
        subject: &str,
        username: Option<&str>,
        now_ms: u64,
        entropy: &dyn Entropy,
    ) -> Result<User, VaultError> {
        let identity = format!("{provider}\u{0}{subject}");
        if let Some(user_id) = self.identities.get(identity.as_bytes())? {
            return self.user(&String::from_utf8_lossy(&user_id))?.ok_or(VaultError::NoUser);
        }
        let user = User { user_id: crate::random_hex(entropy, 16), email: None, username: username.map(str::to_owned), created_ms: now_ms };
        let record = encode(&user);
        let user_id = (&self.users, &self.identities)
            .transaction(|(users, identities)| {
                if let Some(existing) = identities.get(identity.as_bytes())? {
                    return Ok(String::from_utf8_lossy(&existing).into_owned());
                }
                users.insert(user.user_id.as_bytes(), record.as_slice())?;
                identities.insert(identity.as_bytes(), user.user_id.as_bytes())?;
                Ok(user.user_id.clone())
            })
            .map_err(flatten)?;
        self.db.flush()?;
        self.user(&user_id)?.ok_or(VaultError::NoUser)
    }

    /// Moves a user's login email to `new_email` (after both codes of the update were verified).
    pub fn update_email(&self, user_id: &str, new_email: &str) -> Result<User, VaultError> {
        let new_email = normalize_email(new_email);
        (&self.users, &self.emails)
            .transaction(|(users, emails)| {
                let Some(bytes) = users.get(user_id.as_bytes())? else {
                    return abort(VaultError::NoUser);
                };
                let mut user: User = match decode(&bytes) {
                    Ok(user) => user,
                    Err(error) => return abort(error),
                };
                if let Some(owner) = emails.get(new_email.as_bytes())?
                    && owner.as_ref() != user_id.as_bytes()
                {
                    return abort(VaultError::EmailTaken);
                }
                if let Some(old) = &user.email {
                    emails.remove(old.as_bytes())?;
                }
                emails.insert(new_email.as_bytes(), user_id.as_bytes())?;
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
            let vault = Vault::open(sled::open(dir.path()).unwrap(), keys()).unwrap();
            let user = vault.login_email_user(" A@Example.com ", 5, &entropy).unwrap();
            assert_eq!(user.email.as_deref(), Some("a@example.com"));
            vault.bind_wallet(&user.user_id, "0xabc", "Sol111", &SERVER_SHARE, &RECOVERY_SHARE, &entropy).unwrap()
        };
        // Reopened as a restart would (sled lets go of its lock a moment after the last handle)
        let vault = Vault::open(crate::reopen_sled(dir.path()), keys()).unwrap();
        let user = vault.user_by_email("a@example.com").unwrap().unwrap();
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
        let vault = Vault::open(db.clone(), keys()).unwrap();
        let user = vault.login_email_user("a@example.com", 0, &entropy).unwrap();
        let wallet = vault.bind_wallet(&user.user_id, "0xabc", "Sol111", &SERVER_SHARE, &RECOVERY_SHARE, &entropy).unwrap();
        let wrong = Vault::open(db, ShareKeys { server: [3; 32], recovery: [1; 32] }).unwrap();
        assert!(matches!(wrong.open_server_share(&wallet), Err(VaultError::ShareKey)));
        assert!(matches!(wrong.open_recovery_share(&wallet), Err(VaultError::ShareKey)));
    }

    #[test]
    fn given_two_wallets_when_their_ciphertexts_are_swapped_then_neither_opens() {
        let entropy = SeededEntropy::new(3);
        let vault = Vault::open(temp_db(), keys()).unwrap();
        let alice = vault.login_email_user("alice@example.com", 0, &entropy).unwrap();
        let bob = vault.login_email_user("bob@example.com", 0, &entropy).unwrap();
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
        let vault = Vault::open(temp_db(), keys()).unwrap();
        let user = vault.login_email_user("a@example.com", 0, &entropy).unwrap();
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
        let vault = Vault::open(temp_db(), keys()).unwrap();
        let first = vault.login_email_user("a@example.com", 0, &entropy).unwrap();
        assert_eq!(vault.login_email_user("A@EXAMPLE.COM", 9, &entropy).unwrap(), first);
        let social = vault.login_social_user("github", "42", Some("octo"), 0, &entropy).unwrap();
        assert_eq!(vault.login_social_user("github", "42", None, 1, &entropy).unwrap(), social);
        assert_ne!(vault.login_social_user("discord", "42", None, 1, &entropy).unwrap(), social);

        let updated = vault.update_email(&first.user_id, "new@example.com").unwrap();
        assert_eq!(updated.email.as_deref(), Some("new@example.com"));
        assert!(vault.user_by_email("a@example.com").unwrap().is_none());
        assert_eq!(vault.user_by_email("new@example.com").unwrap().unwrap().user_id, first.user_id);
        let other = vault.login_email_user("b@example.com", 0, &entropy).unwrap();
        assert!(matches!(vault.update_email(&other.user_id, "new@example.com"), Err(VaultError::EmailTaken)));
    }
}

//! Email and social login (spec sections 2, 5, 8). Both run through an embedded-wallet provider (the
//! spec's "secure frame"). This deployment integrates none, so the decisions validate the request the
//! way the spec says and then answer with the catalogue's error for a provider that cannot be
//! reached: the visitor sees why nothing happened instead of a button that does nothing. They keep
//! no state of their own (no email is ever written to the event log), so there is no chart.

use crate::model::options::{Features, SocialProvider};
use crate::session::DomainError;

/// Catalogue, secure frame errors: the email login's provider could not be loaded.
pub const EMAIL_DEPENDENCY_UNAVAILABLE: &str = "Unable to load email login dependency";
/// Catalogue, errors: a social login could not start.
pub const SOCIAL_INIT_FAILED: &str = "Failed to initiate social connection";
/// Catalogue, errors: a Farcaster login could not start.
pub const FARCASTER_FAILED: &str = "Failed to connect to farcaster";

/// RFC 5321's limits: 254 characters in all, 64 in the local part, 63 per domain label.
const MAX_EMAIL_CHARS: usize = 254;
const MAX_LOCAL_CHARS: usize = 64;
const MAX_LABEL_CHARS: usize = 63;

/// Spec section 5: "Email values must be valid". A dot-atom local part and a domain of at least two
/// LDH labels; quoted local parts and address literals are refused (no embedded-wallet provider takes them).
pub fn validate_email(email: &str) -> Result<(), DomainError> {
    let invalid = |message: &str| Err(DomainError::InvalidInput { field: "email".into(), message: message.into() });
    if email.len() > MAX_EMAIL_CHARS {
        return invalid("at most 254 characters");
    }
    let Some((local, domain)) = email.rsplit_once('@') else {
        return invalid("an email address needs an @");
    };
    let atom_char = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+/=?^_`{|}~-".contains(c);
    if local.is_empty()
        || local.len() > MAX_LOCAL_CHARS
        || local.split('.').any(|atom| atom.is_empty() || !atom.chars().all(atom_char))
    {
        return invalid("the part before @ is not a valid mailbox name");
    }
    let labels: Vec<&str> = domain.split('.').collect();
    let label_ok = |l: &&str| {
        !l.is_empty()
            && l.len() <= MAX_LABEL_CHARS
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if labels.len() < 2 || !labels.iter().all(label_ok) {
        return invalid("the part after @ is not a valid domain");
    }
    Ok(())
}

/// Decides an email login request; `Ok` carries the error message the visitor is shown.
pub fn connect_email(features: &Features, email: &str) -> Result<&'static str, DomainError> {
    if !features.email {
        return Err(DomainError::FeatureDisabled("email"));
    }
    validate_email(email.trim())?;
    Ok(EMAIL_DEPENDENCY_UNAVAILABLE)
}

/// Decides a social login request; `Ok` carries the error message the visitor is shown.
pub fn connect_social(features: &Features, provider: SocialProvider) -> Result<&'static str, DomainError> {
    if !features.socials.contains(&provider) {
        return Err(DomainError::FeatureDisabled("socials"));
    }
    Ok(match provider {
        SocialProvider::Farcaster => FARCASTER_FAILED,
        _ => SOCIAL_INIT_FAILED,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features(email: bool, socials: Vec<SocialProvider>) -> Features {
        Features { email, socials, ..Features::default() }
    }

    #[test]
    fn valid_emails_pass() {
        for ok in ["a@b.co", "first.last+tag@mail.example.org", "x_y-z@sub-domain.example"] {
            assert_eq!(validate_email(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn invalid_emails_are_refused_with_the_field_named() {
        for bad in ["", "plain", "@example.com", "a@", "a@localhost", "a..b@example.com", ".a@example.com", "a@-x.com", "a@x..com", "a b@example.com", "a@exa mple.com"] {
            match validate_email(bad) {
                Err(DomainError::InvalidInput { field, .. }) => assert_eq!(field, "email", "{bad}"),
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
        let long_local = format!("{}@example.com", "a".repeat(65));
        assert!(validate_email(&long_local).is_err());
    }

    #[test]
    fn given_email_disabled_when_connecting_by_email_then_the_feature_is_refused() {
        assert_eq!(connect_email(&features(false, vec![]), "a@b.co"), Err(DomainError::FeatureDisabled("email")));
    }

    #[test]
    fn given_email_enabled_when_connecting_then_the_provider_is_reported_unavailable() {
        assert_eq!(connect_email(&features(true, vec![]), " a@b.co "), Ok(EMAIL_DEPENDENCY_UNAVAILABLE));
    }

    #[test]
    fn given_a_provider_not_configured_when_connecting_then_the_feature_is_refused() {
        let f = features(false, vec![SocialProvider::Google]);
        assert_eq!(connect_social(&f, SocialProvider::Github), Err(DomainError::FeatureDisabled("socials")));
        assert_eq!(connect_social(&f, SocialProvider::Google), Ok(SOCIAL_INIT_FAILED));
        let f = features(false, vec![SocialProvider::Farcaster]);
        assert_eq!(connect_social(&f, SocialProvider::Farcaster), Ok(FARCASTER_FAILED));
    }
}

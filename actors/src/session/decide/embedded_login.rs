//! Email and social login requests: validated, then answered with the catalogue's error, since this
//! deployment has no embedded-wallet provider (decision 0400). The address is never written.

use super::Decision;
use crate::machines::embedded_login;
use crate::machines::toasts::ToastVariant;
use crate::model::options::SocialProvider;
use crate::session::DomainError;

pub(super) fn email(d: &mut Decision, email: &str) -> Result<(), DomainError> {
    let message = embedded_login::connect_email(&d.state.options.features, email)?;
    d.toast(message, ToastVariant::Error);
    Ok(())
}

pub(super) fn social(d: &mut Decision, provider: SocialProvider) -> Result<(), DomainError> {
    let message = embedded_login::connect_social(&d.state.options.features, provider)?;
    d.toast(message, ToastVariant::Error);
    Ok(())
}

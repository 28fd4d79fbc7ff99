//! Toasts the host shows, and the visitor's dismissals, swipes and pauses.

use super::Decision;
use crate::machines::toasts::{self, MAX_MESSAGE_CHARS, PauseReason, ToastDismissal, ToastRequest, ToastVariant};
use crate::session::DomainError;

/// The toast's duration, when given, is 100 ms to 60 s.
const DURATION_MS: std::ops::RangeInclusive<u64> = 100..=60_000;

pub(super) fn show(
    d: &mut Decision,
    message: &str,
    variant: ToastVariant,
    duration_ms: Option<u64>,
    persistent: bool,
) -> Result<(), DomainError> {
    let message = message.trim();
    if message.is_empty() || message.chars().count() > MAX_MESSAGE_CHARS {
        return Err(DomainError::InvalidInput { field: "message".into(), message: format!("1 to {MAX_MESSAGE_CHARS} characters") });
    }
    if duration_ms.is_some_and(|ms| !DURATION_MS.contains(&ms)) {
        return Err(DomainError::InvalidInput {
            field: "durationMs".into(),
            message: format!("{} to {}", DURATION_MS.start(), DURATION_MS.end()),
        });
    }
    let request = ToastRequest { message: message.into(), variant, duration_ms, persistent };
    let events = toasts::show(&d.state.toasts, request, d.now_ms);
    d.extend(events);
    Ok(())
}

pub(super) fn dismiss(d: &mut Decision, id: &str) -> Result<(), DomainError> {
    let events = toasts::dismiss(&d.state.toasts, id, ToastDismissal::Closed, d.now_ms)?;
    d.extend(events);
    Ok(())
}

pub(super) fn swipe(d: &mut Decision, id: &str, distance_px: f64, elapsed_ms: f64) -> Result<(), DomainError> {
    let events = toasts::swipe(&d.state.toasts, id, distance_px, elapsed_ms, d.now_ms)?;
    d.extend(events);
    Ok(())
}

/// Hover, an interaction or a hidden page pause the auto-dismiss timers; each reason on its own.
pub(super) fn pause(d: &mut Decision, reason: PauseReason, paused: bool) {
    let events = toasts::set_pause(&d.state.toasts, reason, paused, d.now_ms);
    d.extend(events);
}

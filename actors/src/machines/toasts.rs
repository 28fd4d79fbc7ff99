//! The toast queue: an ordered queue (not a single slot) with at most three toasts visible.
//!
//! Spec section 4 and 9: auto-dismiss after 4000 ms; loading and persistent toasts never auto-close;
//! a freed slot is refilled 150 ms later; timers pause while the toasts are hovered, interacted with,
//! or the page is hidden; a swipe of 20 px or more, or faster than 0.11 px/ms, dismisses. Deadlines
//! live in the state; the session actor arms a timer for the earliest and sends `Tick`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::chart::{ANY_STATE, Statechart, region, t, tg};
use crate::session::{DomainError, Event};

pub const ID: &str = "toasts";

pub const MAX_VISIBLE: usize = 3;
/// Toasts waiting beyond this are dropped, oldest first, so the queue stays bounded.
pub const MAX_QUEUED: usize = 32;
pub const DEFAULT_DURATION_MS: u64 = 4000;
pub const RESHOW_DELAY_MS: u64 = 150;
pub const SWIPE_MIN_DISTANCE_PX: f64 = 20.0;
pub const SWIPE_MIN_VELOCITY_PX_PER_MS: f64 = 0.11;
pub const MAX_MESSAGE_CHARS: usize = 280;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum ToastVariant {
    Success,
    Error,
    Loading,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum PauseReason {
    Hover,
    Interaction,
    PageHidden,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum ToastDismissal {
    Expired,
    Closed,
    Swiped,
    /// The same message was shown again: the old toast hides, the new one shows 150 ms later.
    Replaced,
    /// The queue was full.
    Overflow,
    /// The flow that showed it (e.g. a loading toast) finished.
    Settled,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct Toast {
    pub id: String,
    pub message: String,
    pub variant: ToastVariant,
    /// `None`: never closes by itself (loading and persistent toasts).
    #[ts(type = "number | null")]
    pub auto_close_ms: Option<u64>,
    pub visible: bool,
    /// When a visible, running toast closes by itself.
    #[ts(type = "number | null")]
    pub deadline_ms: Option<u64>,
    /// While paused: how long the toast still had to run.
    #[ts(type = "number | null")]
    pub remaining_ms: Option<u64>,
    #[ts(type = "number")]
    pub created_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum QueueStatus {
    #[default]
    Empty,
    Active,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum TimerStatus {
    #[default]
    Running,
    Paused,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ToastQueue {
    pub status: QueueStatus,
    pub timers: TimerStatus,
    pub items: BTreeMap<String, Toast>,
    /// Oldest first. Visible toasts are the first ones; the rest wait for a slot.
    pub order: Vec<String>,
    pub paused_by: Vec<PauseReason>,
    /// When waiting toasts get the slots freed since.
    #[ts(type = "number | null")]
    pub reshow_at_ms: Option<u64>,
    #[ts(type = "number")]
    pub next_id: u64,
}

impl ToastQueue {
    pub fn visible_count(&self) -> usize {
        self.items.values().filter(|t| t.visible).count()
    }

    fn waiting(&self) -> impl Iterator<Item = &Toast> {
        self.order.iter().filter_map(|id| self.items.get(id)).filter(|t| !t.visible)
    }

    fn is_paused(&self) -> bool {
        !self.paused_by.is_empty()
    }

    /// The earliest moment something here is due.
    pub fn next_deadline(&self) -> Option<u64> {
        self.items.values().filter_map(|t| t.deadline_ms).chain(self.reshow_at_ms).min()
    }

    fn shown_event(&self, id: &str, auto_close_ms: Option<u64>, now_ms: u64) -> Event {
        let deadline_ms = if self.is_paused() { None } else { auto_close_ms.map(|d| now_ms + d) };
        Event::ToastShown { id: id.to_string(), deadline_ms }
    }
}

/// What `ShowToast` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToastRequest {
    pub message: String,
    pub variant: ToastVariant,
    /// `None`: the default 4000 ms.
    pub duration_ms: Option<u64>,
    /// Never closes by itself.
    pub persistent: bool,
}

impl ToastRequest {
    pub fn new(message: impl Into<String>, variant: ToastVariant) -> Self {
        Self { message: message.into(), variant, duration_ms: None, persistent: false }
    }
}

/// Events that show a toast: queue it, and show it now if a slot is free and none is being refilled.
pub fn show(queue: &ToastQueue, request: ToastRequest, now_ms: u64) -> Vec<Event> {
    let mut events = Vec::new();
    let id = format!("t{}", queue.next_id + 1);
    let auto_close_ms = match (request.variant, request.persistent) {
        (ToastVariant::Loading, _) | (_, true) => None,
        _ => Some(request.duration_ms.unwrap_or(DEFAULT_DURATION_MS)),
    };
    let mut visible = queue.visible_count();
    let mut remaining = queue.order.len();
    let mut reshow_pending = queue.reshow_at_ms.is_some();

    // The same message again: hide the old one, show the new one after the re-show delay.
    let same = queue.items.values().find(|t| t.visible && t.message == request.message);
    if let Some(old) = same {
        events.push(Event::ToastDismissed { id: old.id.clone(), reason: ToastDismissal::Replaced });
        visible -= 1;
        remaining -= 1;
        if !reshow_pending {
            events.push(Event::ToastReshowScheduled { at_ms: now_ms + RESHOW_DELAY_MS });
            reshow_pending = true;
        }
    }
    if remaining >= MAX_QUEUED {
        if let Some(oldest_waiting) = queue.waiting().next() {
            events.push(Event::ToastDismissed { id: oldest_waiting.id.clone(), reason: ToastDismissal::Overflow });
        }
    }
    events.push(Event::ToastQueued { id: id.clone(), message: request.message, variant: request.variant, auto_close_ms, at_ms: now_ms });
    if visible < MAX_VISIBLE && !reshow_pending {
        events.push(queue.shown_event(&id, auto_close_ms, now_ms));
    }
    events
}

/// Events that remove a toast, schedule the refill of its slot and mark the queue empty.
pub fn dismiss(queue: &ToastQueue, id: &str, reason: ToastDismissal, now_ms: u64) -> Result<Vec<Event>, DomainError> {
    let toast = queue.items.get(id).ok_or_else(|| DomainError::UnknownToast(id.to_string()))?;
    let mut events = vec![Event::ToastDismissed { id: id.to_string(), reason }];
    let waiting = queue.waiting().filter(|t| t.id != id).count();
    if toast.visible && waiting > 0 && queue.reshow_at_ms.is_none() {
        events.push(Event::ToastReshowScheduled { at_ms: now_ms + RESHOW_DELAY_MS });
    }
    if queue.order.len() == 1 {
        events.push(Event::ToastsCleared {});
    }
    Ok(events)
}

/// Dismisses every toast with this message (used when a loading toast's flow finishes).
pub fn settle(queue: &ToastQueue, message: &str, now_ms: u64) -> Vec<Event> {
    let mut state = queue.clone();
    let mut events = Vec::new();
    let ids: Vec<String> = queue.order.iter().filter(|id| queue.items[*id].message == message).cloned().collect();
    for id in ids {
        if let Ok(more) = dismiss(&state, &id, ToastDismissal::Settled, now_ms) {
            for e in &more {
                state = evolve(state, e);
            }
            events.extend(more);
        }
    }
    events
}

/// Due work at `now_ms`: expire toasts whose deadline passed, refill freed slots.
pub fn tick(queue: &ToastQueue, now_ms: u64) -> Vec<Event> {
    let mut state = queue.clone();
    let mut events = Vec::new();
    let mut emit = |state: &mut ToastQueue, batch: Vec<Event>| {
        for e in &batch {
            *state = evolve(std::mem::take(state), e);
        }
        events.extend(batch);
    };
    let due: Vec<String> = queue.order.iter().filter(|id| queue.items[*id].deadline_ms.is_some_and(|d| d <= now_ms)).cloned().collect();
    for id in due {
        if let Ok(batch) = dismiss(&state, &id, ToastDismissal::Expired, now_ms) {
            emit(&mut state, batch);
        }
    }
    if state.reshow_at_ms.is_some_and(|at| at <= now_ms) {
        let free = MAX_VISIBLE.saturating_sub(state.visible_count());
        let next: Vec<(String, Option<u64>)> = state.waiting().take(free).map(|t| (t.id.clone(), t.auto_close_ms)).collect();
        let batch = if next.is_empty() {
            vec![Event::ToastReshowCancelled {}]
        } else {
            next.iter().map(|(id, auto)| state.shown_event(id, *auto, now_ms)).collect()
        };
        emit(&mut state, batch);
    }
    events
}

/// Events for a pause reason starting (`active`) or ending at `now_ms`.
pub fn set_pause(queue: &ToastQueue, reason: PauseReason, active: bool, now_ms: u64) -> Vec<Event> {
    let present = queue.paused_by.contains(&reason);
    match (active, present) {
        (true, false) => vec![Event::ToastPauseStarted { reason, at_ms: now_ms }],
        (false, true) => {
            let resumed = queue.paused_by.len() == 1;
            vec![Event::ToastPauseEnded { reason, at_ms: now_ms, resumed }]
        }
        _ => vec![],
    }
}

/// A swipe the client reports: dismisses when long or fast enough, checked here, not in the browser.
pub fn swipe(queue: &ToastQueue, id: &str, distance_px: f64, elapsed_ms: f64, now_ms: u64) -> Result<Vec<Event>, DomainError> {
    if !distance_px.is_finite() || !elapsed_ms.is_finite() || elapsed_ms < 0.0 {
        return Err(DomainError::InvalidInput { field: "distancePx/elapsedMs".into(), message: "finite numbers, elapsed >= 0".into() });
    }
    let distance = distance_px.abs();
    let velocity = if elapsed_ms > 0.0 { distance / elapsed_ms } else { 0.0 };
    if distance >= SWIPE_MIN_DISTANCE_PX || velocity > SWIPE_MIN_VELOCITY_PX_PER_MS {
        dismiss(queue, id, ToastDismissal::Swiped, now_ms)
    } else {
        Err(DomainError::SwipeBelowThreshold)
    }
}

pub fn evolve(mut state: ToastQueue, event: &Event) -> ToastQueue {
    match event {
        Event::ToastQueued { id, message, variant, auto_close_ms, at_ms } => {
            state.next_id += 1;
            state.status = QueueStatus::Active;
            state.order.push(id.clone());
            state.items.insert(
                id.clone(),
                Toast {
                    id: id.clone(),
                    message: message.clone(),
                    variant: *variant,
                    auto_close_ms: *auto_close_ms,
                    visible: false,
                    deadline_ms: None,
                    remaining_ms: None,
                    created_ms: *at_ms,
                },
            );
        }
        Event::ToastShown { id, deadline_ms } => {
            if let Some(toast) = state.items.get_mut(id) {
                toast.visible = true;
                toast.deadline_ms = *deadline_ms;
                toast.remaining_ms = if deadline_ms.is_none() { toast.auto_close_ms } else { None };
            }
            state.reshow_at_ms = None;
        }
        Event::ToastDismissed { id, .. } => {
            state.items.remove(id);
            state.order.retain(|o| o != id);
        }
        Event::ToastReshowScheduled { at_ms } => state.reshow_at_ms = Some(*at_ms),
        Event::ToastReshowCancelled {} => state.reshow_at_ms = None,
        Event::ToastsCleared {} => {
            state.status = QueueStatus::Empty;
            state.reshow_at_ms = None;
        }
        Event::ToastPauseStarted { reason, at_ms } => {
            if state.paused_by.is_empty() {
                for toast in state.items.values_mut() {
                    if let Some(deadline) = toast.deadline_ms.take() {
                        toast.remaining_ms = Some(deadline.saturating_sub(*at_ms));
                    }
                }
            }
            if !state.paused_by.contains(reason) {
                state.paused_by.push(*reason);
                state.paused_by.sort();
            }
            state.timers = TimerStatus::Paused;
        }
        Event::ToastPauseEnded { reason, at_ms, resumed } => {
            state.paused_by.retain(|r| r != reason);
            if *resumed {
                state.timers = TimerStatus::Running;
                for toast in state.items.values_mut() {
                    if toast.visible {
                        if let Some(remaining) = toast.remaining_ms.take() {
                            toast.deadline_ms = Some(at_ms + remaining);
                        }
                    }
                }
            }
        }
        _ => {}
    }
    state
}

pub fn chart() -> Statechart {
    Statechart {
        id: ID.into(),
        description: "The toast queue: whether any toast is queued, and whether timers run.".into(),
        regions: vec![
            region(
                "queue",
                "/toasts/status",
                "empty",
                &["empty", "active"],
                vec![t("empty", "ToastQueued", "active"), t("active", "ToastsCleared", "empty")],
            ),
            region(
                "timers",
                "/toasts/timers",
                "running",
                &["running", "paused"],
                vec![t(ANY_STATE, "ToastPauseStarted", "paused"), tg("paused", "ToastPauseEnded", "running", "/resumed", true)],
            ),
        ],
    }
}

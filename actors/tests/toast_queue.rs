//! Given / when / then: the toast queue (spec sections 4 and 9).

use vestibule_actors::machines::toasts::{DEFAULT_DURATION_MS, RESHOW_DELAY_MS, ToastVariant};
use vestibule_actors::session::{ClientCommand as C, Command, DomainError};
use vestibule_actors::testing::*;

fn show(message: &str) -> C {
    C::ShowToast { message: message.into(), variant: ToastVariant::Success, duration_ms: None, persistent: None }
}

fn visible(g: &Given) -> Vec<String> {
    g.state.toasts.order.iter().filter(|id| g.state.toasts.items[*id].visible).map(|id| g.state.toasts.items[id].message.clone()).collect()
}

#[test]
fn given_an_empty_queue_when_a_toast_is_shown_then_it_is_visible_with_a_4000_ms_deadline() {
    let then = given(started()).when(show("Saved"));
    assert_eq!(then.event_types(), vec!["ToastQueued", "ToastShown"]);
    let toast = then.state().toasts.items["t1"].clone();
    assert!(toast.visible);
    assert_eq!(toast.deadline_ms, Some(T0 + DEFAULT_DURATION_MS));
}

#[test]
fn given_three_visible_toasts_when_a_fourth_arrives_then_it_waits_for_a_slot() {
    let g = given(started()).and(show("one")).and(show("two")).and(show("three")).and(show("four"));
    assert_eq!(visible(&g), vec!["one", "two", "three"]);
    assert_eq!(g.state.toasts.order.len(), 4);
}

#[test]
fn given_four_toasts_when_the_first_expires_then_the_fourth_shows_150_ms_later() {
    let g = given(started()).and(show("one")).at(T0 + 1000).and(show("two")).and(show("three")).and(show("four"));
    let g = g.at(T0 + DEFAULT_DURATION_MS).and(Command::Tick);
    assert_eq!(visible(&g), vec!["two", "three"]);
    assert_eq!(g.state.toasts.reshow_at_ms, Some(T0 + DEFAULT_DURATION_MS + RESHOW_DELAY_MS));
    assert_eq!(g.state.next_deadline(), Some(T0 + DEFAULT_DURATION_MS + RESHOW_DELAY_MS));
    let g = g.at(T0 + DEFAULT_DURATION_MS + RESHOW_DELAY_MS).and(Command::Tick);
    assert_eq!(visible(&g), vec!["two", "three", "four"]);
    let four = g.state.toasts.items.values().find(|t| t.message == "four").unwrap();
    assert_eq!(four.deadline_ms, Some(T0 + DEFAULT_DURATION_MS + RESHOW_DELAY_MS + DEFAULT_DURATION_MS));
}

#[test]
fn given_visible_toasts_when_all_expire_then_the_queue_is_empty() {
    let g = given(started()).and(show("one")).and(show("two"));
    let then = g.at(T0 + DEFAULT_DURATION_MS).when(Command::Tick);
    assert_eq!(then.event_types(), vec!["ToastDismissed", "ToastDismissed", "ToastsCleared"]);
    assert!(then.state().toasts.items.is_empty());
    assert_eq!(then.state().next_deadline(), None);
}

#[test]
fn loading_and_persistent_toasts_never_auto_close() {
    let g = given(started())
        .and(C::ShowToast { message: "Authenticating...".into(), variant: ToastVariant::Loading, duration_ms: None, persistent: None })
        .and(C::ShowToast { message: "Stay".into(), variant: ToastVariant::Error, duration_ms: None, persistent: Some(true) });
    assert_eq!(g.state.next_deadline(), None);
    let then = g.at(T0 + 10 * DEFAULT_DURATION_MS).when(Command::Tick);
    assert!(then.events().is_empty());
}

#[test]
fn given_a_running_toast_when_hovered_then_its_timer_pauses_and_resumes_with_the_time_it_had_left() {
    let g = given(started()).and(show("one")).at(T0 + 1000).and(C::SetToastHover { hovered: true });
    let toast = &g.state.toasts.items["t1"];
    assert_eq!((toast.deadline_ms, toast.remaining_ms), (None, Some(3000)));
    assert_eq!(g.clone().at(T0 + 60_000).when(Command::Tick).events().len(), 0);
    let g = g.at(T0 + 60_000).and(C::SetToastHover { hovered: false });
    assert_eq!(g.state.toasts.items["t1"].deadline_ms, Some(T0 + 63_000));
}

#[test]
fn pause_reasons_combine_timers_run_only_when_none_is_left() {
    let g = given(started()).and(show("one")).and(C::SetToastHover { hovered: true }).and(C::SetPageVisibility { hidden: true });
    let g = g.and(C::SetToastHover { hovered: false });
    assert_eq!(g.state.toasts.items["t1"].deadline_ms, None, "still paused: the page is hidden");
    let g = g.and(C::SetPageVisibility { hidden: false });
    assert!(g.state.toasts.items["t1"].deadline_ms.is_some());
}

#[test]
fn a_toast_shown_while_paused_waits_with_its_full_duration() {
    let g = given(started()).and(C::SetToastInteraction { active: true }).and(show("one"));
    assert_eq!(g.state.toasts.items["t1"].remaining_ms, Some(DEFAULT_DURATION_MS));
}

#[test]
fn swipes_dismiss_at_20_px_or_faster_than_0_11_px_per_ms() {
    let g = given(started()).and(show("one"));
    let swipe = |d: f64, ms: f64| C::SwipeToast { id: "t1".into(), distance_px: d, elapsed_ms: ms };
    assert_eq!(g.when(swipe(20.0, 1000.0)).event_types(), vec!["ToastDismissed", "ToastsCleared"]);
    assert_eq!(g.when(swipe(-25.0, 1000.0)).event_types(), vec!["ToastDismissed", "ToastsCleared"]);
    assert_eq!(g.when(swipe(12.0, 100.0)).event_types(), vec!["ToastDismissed", "ToastsCleared"]); // 0.12 px/ms
    assert_eq!(g.when(swipe(11.0, 100.0)).error(), &DomainError::SwipeBelowThreshold); // 0.11 px/ms
    assert_eq!(g.when(swipe(19.9, 1000.0)).error(), &DomainError::SwipeBelowThreshold);
    assert!(matches!(g.when(swipe(f64::NAN, 10.0)).error(), DomainError::InvalidInput { .. }));
}

#[test]
fn the_same_message_again_hides_the_old_toast_and_shows_the_new_one_150_ms_later() {
    let g = given(started()).and(show("Copied"));
    let then = g.clone().at(T0 + 500).when(show("Copied"));
    assert_eq!(then.event_types(), vec!["ToastDismissed", "ToastReshowScheduled", "ToastQueued"]);
    let g = g.at(T0 + 500).and(show("Copied")).at(T0 + 650).and(Command::Tick);
    assert_eq!(visible(&g), vec!["Copied"]);
    assert_eq!(g.state.toasts.items.len(), 1);
}

#[test]
fn the_queue_is_bounded() {
    let mut g = given(started());
    for i in 0..100 {
        g = g.and(show(&format!("toast {i}")));
    }
    assert!(g.state.toasts.order.len() <= vestibule_actors::machines::toasts::MAX_QUEUED);
    assert_eq!(visible(&g), vec!["toast 0", "toast 1", "toast 2"]);
}

#[test]
fn closing_a_toast_frees_its_slot_and_unknown_toasts_are_refused() {
    let g = given(started()).and(show("one"));
    assert_eq!(g.when(C::DismissToast { id: "t1".into() }).event_types(), vec!["ToastDismissed", "ToastsCleared"]);
    assert_eq!(g.when(C::DismissToast { id: "t9".into() }).error(), &DomainError::UnknownToast("t9".into()));
}

#[test]
fn toast_messages_are_validated() {
    let g = given(started());
    assert!(matches!(g.when(show("  ")).error(), DomainError::InvalidInput { .. }));
    assert!(matches!(g.when(show(&"x".repeat(281))).error(), DomainError::InvalidInput { .. }));
    let ok = g.when(C::ShowToast { message: "x".into(), variant: ToastVariant::Success, duration_ms: Some(50), persistent: None });
    assert!(matches!(ok.error(), DomainError::InvalidInput { .. }));
}

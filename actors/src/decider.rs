//! The decider abstraction every state machine follows: plain data and two pure functions.
//!
//! `decide` may refuse and never mutates; `evolve` is total and never fails. Time is an input
//! (`Ctx::now_ms`), so folding a log needs no clock and replays exactly.

use crate::model::options::SessionOptions;

/// Everything a decision may depend on besides the state and the command.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// Wall-clock time of the decision, Unix milliseconds.
    pub now_ms: u64,
    /// The host app's options for this session (validated when the session started).
    pub options: &'a SessionOptions,
    /// A fresh nonce from a CSPRNG, used if the decision issues a sign-in message. The runtime
    /// draws a new one whenever a decision used it, so each is used at most once; tests pass
    /// fixed values. Randomness as an input keeps `decide` pure.
    pub nonce: &'a str,
}

pub trait Decider {
    type State: Default + Clone;
    type Command;
    type Event;
    type Error;

    fn decide(state: &Self::State, command: Self::Command, ctx: &Ctx) -> Result<Vec<Self::Event>, Self::Error>;

    fn evolve(state: Self::State, event: &Self::Event) -> Self::State;

    /// The state after `events`, starting from `state`.
    fn fold<'e>(state: Self::State, events: impl IntoIterator<Item = &'e Self::Event>) -> Self::State
    where
        Self::Event: 'e,
    {
        events.into_iter().fold(state, Self::evolve)
    }
}

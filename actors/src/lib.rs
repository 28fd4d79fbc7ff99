//! The domain: pure state machines (deciders) and the `ModalSession` actor that drives them.
//!
//! - [`decider`]: the decide / evolve abstraction; time is an input.
//! - [`chart`]: statecharts as data, exported to the browser and the replay viewer.
//! - [`model`]: value types (CAIP ids, networks, connectors, the host's options).
//! - [`machines`]: one module per state machine.
//! - [`session`]: the machines composed into one session decider, its events and commands.
//! - [`siwx`]: sign-in messages (EIP-4361, Sign-In With Solana) and their verification.
//! - [`protocol`]: the wire protocol; [`runtime`]: the session actor and its registry.

pub mod chart;
pub mod decider;
pub mod machines;
pub mod model;
pub mod protocol;
pub mod runtime;
pub mod session;
pub mod siwx;
#[cfg(feature = "testing")]
pub mod testing;

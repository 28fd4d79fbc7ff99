//! The domain: pure state machines (deciders) and the `ModalSession` actor that drives them.

pub mod siwx;

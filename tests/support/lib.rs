//! Shared helpers for the cross-crate tests in `tests/`.

pub mod store_crash;

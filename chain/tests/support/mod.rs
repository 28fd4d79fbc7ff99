//! Helpers shared by the integration tests (each test file uses some of them).
#![allow(dead_code)]

pub mod anvil;
pub mod logs;
pub mod solana;
pub mod stub;

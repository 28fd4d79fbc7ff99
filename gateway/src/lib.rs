//! The gateway: actix-web server, WebSocket protocol, HTTP endpoints and configuration.

pub mod chain;
pub mod cli;
pub mod client_address;
pub mod cluster;
pub mod config;
pub mod debug_api;
pub mod disk;
pub mod embedded;
pub mod http;
pub mod limits;
pub mod metrics;
pub mod origin;
pub mod replay;
pub mod server;
pub mod siwx;
pub mod state;
pub mod store;
pub mod telemetry;
pub mod ws;

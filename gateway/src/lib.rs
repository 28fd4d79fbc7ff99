//! The gateway: actix-web server, WebSocket protocol, HTTP endpoints and configuration.

pub mod siwx;

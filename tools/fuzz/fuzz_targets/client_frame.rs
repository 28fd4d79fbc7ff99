//! Any text frame a client can send: parsed as a `ClientMessage` exactly as the gateway does. A hello's
//! options go through the same validation as a new session; a command is decided against a connected
//! session, its events evolved and the resulting state serialized and hashed as the runtime would.
//! Nothing may panic; a decision must be deterministic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use vestibule_actors::decider::Ctx;
use vestibule_actors::protocol::ClientMessage;
use vestibule_actors::session::{self, Command, wire};
use vestibule_actors::testing::{T0, connected};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(message) = serde_json::from_str::<ClientMessage>(text) else { return };
    match message {
        ClientMessage::Hello { options: Some(options), .. } => {
            // No chain service, as a gateway with no `[networks]` configured.
            let start = Command::Start {
                project: "demo".into(),
                origin: "http://localhost:3000".into(),
                options,
                served_networks: Vec::new(),
                embedded_frame_origin: Some("http://127.0.0.1:8081".into()),
            };
            let state = session::SessionState::default();
            let ctx = Ctx { now_ms: T0, options: &state.options, nonce: "FuzzNonce0000000" };
            if let Ok(events) = session::decide(&state, start, &ctx) {
                let state = events.iter().fold(state, session::evolve);
                let _ = wire::state_hash(&wire::to_value(&state));
            }
        }
        ClientMessage::Command { command, .. } => {
            let state = connected().state;
            let ctx = Ctx { now_ms: T0 + 1000, options: &state.options, nonce: "FuzzNonce0000000" };
            let first = session::decide(&state, Command::Client(command.clone()), &ctx);
            let again = session::decide(&state, Command::Client(command), &ctx);
            assert_eq!(first, again, "a decision is a function of the state, the command and the context");
            if let Ok(events) = first {
                let next = events.iter().fold(state, session::evolve);
                let _ = wire::state_hash(&wire::to_value(&next));
            }
        }
        _ => {}
    }
});

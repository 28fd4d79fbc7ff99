//! Generates the client's TypeScript definitions and statecharts from the Rust types, so the two
//! sides are never kept by hand. Output: one `.ts` file per type (ts-rs), `charts.ts` (every machine's
//! statechart as data), `constants.ts` (protocol version, close codes, event types) and `index.ts`.
//!
//! `vestibule-codegen` writes them into `client/src/generated/`; `tests/generated_types.rs` fails
//! when the checked-in files differ from what this produces. A tool of its own: the production
//! crates only derive the types (`ts_rs::TS`); exporting them is done here.

use std::collections::BTreeMap;
use std::path::Path;

use ts_rs::TS;

use vestibule_actors::machines;
use vestibule_actors::machines::toasts;
use vestibule_actors::protocol::{close, ClientMessage, ServerMessage, PROTOCOL_VERSION};
use vestibule_actors::session::Event;

const HEADER: &str = "// Generated from the Rust definitions by `vestibule-codegen`. Do not edit by hand.\n";

/// Every generated file: relative path to contents.
pub fn generate() -> std::io::Result<BTreeMap<String, String>> {
    let dir = std::env::temp_dir().join(format!("vestibule-codegen-{}-{}", std::process::id(), rand::random::<u64>()));
    std::fs::create_dir_all(&dir)?;
    let result: std::io::Result<BTreeMap<String, String>> = (|| {
        let export = |e: ts_rs::ExportError| std::io::Error::other(e.to_string());
        ClientMessage::export_all_to(&dir).map_err(export)?;
        ServerMessage::export_all_to(&dir).map_err(export)?;
        vestibule_actors::session::RefusalCode::export_all_to(&dir).map_err(export)?;
        vestibule_actors::chart::Statechart::export_all_to(&dir).map_err(export)?;
        let mut files = BTreeMap::new();
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
            if name.ends_with(".ts") {
                files.insert(name, std::fs::read_to_string(&path)?);
            }
        }
        Ok(files)
    })();
    let _ = std::fs::remove_dir_all(&dir);
    let mut files = result?;

    let charts = serde_json::to_string_pretty(&machines::charts()).expect("charts serialize");
    files.insert(
        "charts.ts".into(),
        format!("{HEADER}import type {{ Statechart }} from \"./Statechart\";\n\nexport const charts: Statechart[] = {charts};\n"),
    );

    let event_types = serde_json::to_string(Event::type_names()).expect("names serialize");
    let codes = [
        ("NORMAL", close::NORMAL),
        ("GOING_AWAY", close::GOING_AWAY),
        ("POLICY", close::POLICY),
        ("TOO_BIG", close::TOO_BIG),
        ("INTERNAL", close::INTERNAL),
        ("BAD_HELLO", close::BAD_HELLO),
        ("UNAUTHORIZED", close::UNAUTHORIZED),
        ("UNSUPPORTED_PROTOCOL", close::UNSUPPORTED_PROTOCOL),
        ("RATE_LIMITED", close::RATE_LIMITED),
        ("TOO_SLOW", close::TOO_SLOW),
        ("HEARTBEAT_TIMEOUT", close::HEARTBEAT_TIMEOUT),
        ("SESSION_ENDED", close::SESSION_ENDED),
    ];
    let codes: String = codes.iter().map(|(name, code)| format!("  {name}: {code},\n")).collect();
    files.insert(
        "constants.ts".into(),
        format!(
            "{HEADER}\nexport const PROTOCOL_VERSION = {PROTOCOL_VERSION};\n\n\
             export const CLOSE_CODES = {{\n{codes}}} as const;\n\n\
             export const EVENT_TYPES = {event_types} as const;\n\n\
             export const TOASTS = {{ maxVisible: {}, defaultDurationMs: {}, reshowDelayMs: {}, swipeMinDistancePx: {}, swipeMinVelocityPxPerMs: {} }} as const;\n\n\
             /** The numbers the widget draws with (spec sections 2, 5, 9). */\n\
             export const DISPLAY = {} as const;\n",
            toasts::MAX_VISIBLE,
            toasts::DEFAULT_DURATION_MS,
            toasts::RESHOW_DELAY_MS,
            toasts::SWIPE_MIN_DISTANCE_PX,
            toasts::SWIPE_MIN_VELOCITY_PX_PER_MS,
            serde_json::to_string(&vestibule_actors::model::display::DISPLAY).expect("display constants serialize"),
        ),
    );

    let frames = serde_json::to_string_pretty(&fixture_frames()).expect("frames serialize");
    files.insert(
        "fixtureFrames.ts".into(),
        format!("{HEADER}// Frames of a scripted session, built by the functions the session actor uses. For the client's tests.\nimport type {{ ServerMessage }} from \"./ServerMessage\";\n\nexport const fixtureFrames: ServerMessage[] = {frames};\n"),
    );

    let mut index = String::from(HEADER);
    for name in files.keys() {
        let module = name.trim_end_matches(".ts");
        if module == "charts" || module == "constants" || module == "fixtureFrames" {
            index.push_str(&format!("export * from \"./{module}\";\n"));
        } else {
            index.push_str(&format!("export type * from \"./{module}\";\n"));
        }
    }
    files.insert("index.ts".into(), index);
    Ok(files)
}

/// A scripted session (discover, connect, toasts, a rejected reconnect, disconnect) as the frames a
/// client receives: a welcome with the state, then one diff per decision. Deterministic.
pub fn fixture_frames() -> Vec<ServerMessage> {
    use vestibule_actors::machines::toasts::ToastVariant;
    use vestibule_actors::protocol::WireEvent;
    use vestibule_actors::session::{self, wire, ClientCommand as C, Command, SessionState};
    use vestibule_actors::testing::{dev_wallet, started, wallet_err, wallet_ok, ALICE, DEV_WALLET_RDNS, T0};

    let start = started();
    let mut state = start.iter().fold(SessionState::default(), session::evolve);
    let mut json = wire::to_value(&state);
    let mut seq = start.len() as u64;
    let mut frames = vec![ServerMessage::Welcome {
        protocol: PROTOCOL_VERSION,
        session_id: "0123456789abcdef0123456789abcdef".into(),
        resume_token: Some("fixture-token".into()),
        seq,
        resumed: false,
        state: Some(Box::new(state.clone())),
        state_hash: wire::state_hash(&json),
    }];
    let mut now = T0;
    let mut commands = 0;
    let mut step = |state: &mut SessionState, command: Command, now: u64| {
        commands += 1;
        let correlation = match command {
            Command::Tick => format!("timer:{}", seq + 1),
            _ => format!("c{commands}"),
        };
        let nonce = format!("FixtureNonce{commands}");
        let ctx = vestibule_actors::decider::Ctx { now_ms: now, options: &state.options, nonce: &nonce };
        let events = session::decide(state, command, &ctx).expect("the fixture script is valid");
        let before = json.clone();
        let prev = seq;
        let wire_events: Vec<WireEvent> = events
            .into_iter()
            .map(|event| {
                seq += 1;
                *state = session::evolve(std::mem::take(state), &event);
                WireEvent { seq, time_ms: now, correlation_id: Some(correlation.clone()), event }
            })
            .collect();
        json = wire::to_value(state);
        frames.push(ServerMessage::Diff { seq, prev_seq: prev, events: wire_events, patch: wire::patch(&before, &json), state_hash: wire::state_hash(&json) });
    };
    let pending = |state: &SessionState| state.requests.order[0].clone();
    step(&mut state, C::ReportWallets { wallets: vec![dev_wallet()] }.into(), now);
    step(&mut state, C::OpenModal { view: None }.into(), now);
    step(&mut state, C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() }.into(), now);
    now += 1200;
    let request_id = pending(&state);
    step(&mut state, C::ResolveWalletRequest { request_id, outcome: wallet_err(4001, "User rejected the request.") }.into(), now);
    step(&mut state, C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() }.into(), now);
    let request_id = pending(&state);
    step(&mut state, C::ResolveWalletRequest { request_id, outcome: wallet_ok(&[ALICE], "0x1") }.into(), now);
    for i in 0..4 {
        let message = format!("Toast \"{i}\"\t\u{2713} \u{e9}");
        step(&mut state, C::ShowToast { message, variant: ToastVariant::Success, duration_ms: None, persistent: None }.into(), now);
    }
    now += 4000;
    step(&mut state, Command::Tick, now);
    now += 150;
    step(&mut state, Command::Tick, now);
    step(&mut state, C::SetToastHover { hovered: true }.into(), now);
    step(&mut state, C::Disconnect { namespace: None }.into(), now);
    frames
}

/// Writes the generated files into `dir`, removing generated files that no longer exist.
pub fn write(dir: &Path) -> std::io::Result<usize> {
    let files = generate()?;
    std::fs::create_dir_all(dir)?;
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        if name.ends_with(".ts") && !files.contains_key(&name) {
            std::fs::remove_file(&path)?;
        }
    }
    for (name, contents) in &files {
        std::fs::write(dir.join(name), contents)?;
    }
    Ok(files.len())
}

/// The generated files that are missing, different or extra in `dir`.
pub fn stale(dir: &Path) -> std::io::Result<Vec<String>> {
    let files = generate()?;
    let mut stale = Vec::new();
    for (name, contents) in &files {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(existing) if &existing == contents => {}
            Ok(_) => stale.push(format!("{name} differs")),
            Err(_) => stale.push(format!("{name} is missing")),
        }
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if name.ends_with(".ts") && !files.contains_key(&name) {
                stale.push(format!("{name} is no longer generated"));
            }
        }
    }
    Ok(stale)
}

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
use vestibule_actors::model::connector;
use vestibule_actors::protocol::{ClientMessage, PROTOCOL_VERSION, ProtocolErrorCode, ServerMessage, close};
use vestibule_actors::session::{Event, RefusalCode};

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
        ("GOING_AWAY", close::GOING_AWAY),
        ("PROTOCOL_ERROR", close::PROTOCOL_ERROR),
        ("INVALID_PAYLOAD", close::INVALID_PAYLOAD),
        ("TOO_BIG", close::TOO_BIG),
        ("INTERNAL", close::INTERNAL),
        ("TRY_AGAIN_LATER", close::TRY_AGAIN_LATER),
        ("BAD_HELLO", close::BAD_HELLO),
        ("UNAUTHORIZED", close::UNAUTHORIZED),
        ("UNSUPPORTED_PROTOCOL", close::UNSUPPORTED_PROTOCOL),
        ("TOO_SLOW", close::TOO_SLOW),
        ("HEARTBEAT_TIMEOUT", close::HEARTBEAT_TIMEOUT),
        ("SESSION_ENDED", close::SESSION_ENDED),
    ];
    let codes: String = codes.iter().map(|(name, code)| format!("  {name}: {code},\n")).collect();
    files.insert(
        "constants.ts".into(),
        format!(
            "{HEADER}import type {{ ProtocolErrorCode }} from \"./ProtocolErrorCode\";\nimport type {{ RefusalCode }} from \"./RefusalCode\";\n\nexport const PROTOCOL_VERSION = {PROTOCOL_VERSION};\n\n\
             export const CLOSE_CODES = {{\n{codes}}} as const;\n\n\
             export const EVENT_TYPES = {event_types} as const;\n\n\
             export const TOASTS = {{ maxVisible: {}, defaultDurationMs: {}, reshowDelayMs: {}, swipeMinDistancePx: {}, swipeMinVelocityPxPerMs: {} }} as const;\n\n\
             /** The widget's error reports (`ReportClientError`) a session takes in any window; more are refused `rate_limited`. */\n\
             export const ERROR_REPORTS = {{ max: {}, windowMs: {} }} as const;\n\n\
             /** The numbers the widget draws with (spec sections 2, 5, 9). */\n\
             export const DISPLAY = {} as const;\n\n\
             /** The theme variables a host may set (`themeVariables`); any other name is refused. */\n\
             export const THEME_VARIABLES = {} as const;\n\n\
             /** Every `error.code` of a protocol error frame and `/ws/check` refusal. */\n\
             export const PROTOCOL_ERROR_CODES = {} as const satisfies readonly ProtocolErrorCode[];\n\n\
             /** Every `result.error.code` of a refused command. */\n\
             export const REFUSAL_CODES = {} as const satisfies readonly RefusalCode[];\n\n\
             /** The Solana clusters by CAIP-2 id: their Wallet Standard chain and full genesis hash. */\n\
             export const SOLANA_CLUSTERS = {} as const;\n\n\
             /** What the session takes of a discovered wallet (`connectors_from`): a report breaking one of these is refused whole. */\n\
             export const WALLET_NAME_MAX_BYTES = {};\n\
             export const WALLET_RDNS_MAX_BYTES = {};\n\
             export const WALLET_ICON_MAX_BYTES = {};\n\
             export const MAX_REPORTED_WALLETS = {};\n\
             /** A wallet's answer the widget sends: JSON of at most this many bytes, else an error; an error's message cut to this many characters. */\n\
             export const WALLET_ANSWER_MAX_BYTES = {};\n\
             export const WALLET_ERROR_MAX_CHARS = {};\n\
             /** Connector ids the session gives out itself, which no announced wallet may take. */\n\
             export const EMBEDDED_CONNECTOR_ID = {:?};\n\
             export const INJECTED_CONNECTOR_ID = {:?};\n\
             export const SOLANA_CONNECTOR_PREFIX = {:?};\n",
            toasts::MAX_VISIBLE,
            toasts::DEFAULT_DURATION_MS,
            toasts::RESHOW_DELAY_MS,
            toasts::SWIPE_MIN_DISTANCE_PX,
            toasts::SWIPE_MIN_VELOCITY_PX_PER_MS,
            vestibule_actors::session::MAX_CLIENT_ERROR_REPORTS,
            vestibule_actors::session::CLIENT_ERROR_REPORT_WINDOW_MS,
            serde_json::to_string(&vestibule_actors::model::display::DISPLAY).expect("display constants serialize"),
            serde_json::to_string(vestibule_actors::model::options::THEME_VARIABLES).expect("names serialize"),
            serde_json::to_string(<ProtocolErrorCode as strum::VariantNames>::VARIANTS).expect("names serialize"),
            serde_json::to_string(&<RefusalCode as strum::IntoEnumIterator>::iter().map(RefusalCode::as_str).collect::<Vec<_>>()).expect("names serialize"),
            serde_json::to_string(&solana_clusters()).expect("clusters serialize"),
            connector::MAX_WALLET_NAME_BYTES,
            connector::MAX_WALLET_RDNS_BYTES,
            connector::MAX_ICON_BYTES,
            connector::MAX_CONNECTORS,
            connector::MAX_WALLET_ANSWER_BYTES,
            connector::MAX_WALLET_ERROR_CHARS,
            vestibule_actors::machines::embedded_wallet::AUTH_CONNECTOR_ID,
            connector::INJECTED_CONNECTOR_ID,
            connector::SOLANA_CONNECTOR_PREFIX,
        ),
    );
    // A module of its own: only the secure frame's code reads it, and a constant in constants.ts
    // that both the widget's core and the frame import would land in the core's chunk.
    files.insert(
        "embeddedWallet.ts".into(),
        format!(
            "{HEADER}\n/** The EVM methods the embedded wallet performs (after the visitor's approval in the frame); the session refuses any other with 4200. */\n\
             export const EMBEDDED_EVM_METHODS = {} as const;\n",
            serde_json::to_string(vestibule_actors::machines::embedded_wallet::EMBEDDED_EVM_METHODS).expect("names serialize"),
        ),
    );

    let frames = |f: Vec<ServerMessage>| serde_json::to_string_pretty(&f).expect("frames serialize");
    files.insert(
        "fixtureFrames.ts".into(),
        format!(
            "{HEADER}// Frames of scripted sessions, built by the functions the session actor uses (decide, evolve,\n\
             // wire::patch, wire::state_hash; tools/codegen/src/lib.rs). For the client's tests.\n\
             import type {{ ServerMessage }} from \"./ServerMessage\";\n\n\
             /** Discover, a rejected connect, connect, four toasts, their expiry, hover, disconnect. */\n\
             export const fixtureFrames: ServerMessage[] = {};\n\n\
             /** Sign-in required: connect, SIWXSignMessage, a declined signature, a valid one, signed in, Account. */\n\
             export const signInFrames: ServerMessage[] = {};\n\n\
             /** Email and three socials enabled with a wallet announced; what email and Google login answer. */\n\
             export const connectMethodsFrames: ServerMessage[] = {};\n\n\
             /** Ethereum and Solana Devnet: the EVM wallet connects, switching to Solana shows SwitchActiveChain,\n\
              * confirming goes to Connect, the Solana wallet connects, the active namespace switches back. */\n\
             export const multichainFrames: ServerMessage[] = {};\n",
            frames(fixture_frames()),
            frames(sign_in_frames()),
            frames(connect_methods_frames()),
            frames(multichain_frames()),
        ),
    );

    let mut index = String::from(HEADER);
    for name in files.keys() {
        let module = name.trim_end_matches(".ts");
        if module == "charts" || module == "constants" || module == "fixtureFrames" || module == "embeddedWallet" {
            index.push_str(&format!("export * from \"./{module}\";\n"));
        } else {
            index.push_str(&format!("export type * from \"./{module}\";\n"));
        }
    }
    files.insert("index.ts".into(), index);
    Ok(files)
}

/// A scripted session as the frames a client receives: a welcome with the whole state, then one
/// diff per decision, each built with the functions the session actor uses (`decide`, `evolve`,
/// `wire::patch`, `wire::state_hash`). Deterministic: fixed times, nonces and command ids.
struct Script {
    state: vestibule_actors::session::SessionState,
    json: serde_json::Value,
    seq: u64,
    now: u64,
    commands: usize,
    frames: Vec<ServerMessage>,
}

impl Script {
    fn start(options: vestibule_actors::model::options::SessionOptions) -> Self {
        use vestibule_actors::session::{self, SessionState, wire};
        let start = vestibule_actors::testing::started_with(options);
        let state = start.iter().fold(SessionState::default(), session::evolve);
        let json = wire::to_value(&state);
        let seq = start.len() as u64;
        let welcome = ServerMessage::Welcome {
            protocol: PROTOCOL_VERSION,
            session_id: "0123456789abcdef0123456789abcdef".into(),
            resume_token: Some("fixture-token".into()),
            seq,
            resumed: false,
            state: Some(Box::new(state.clone())),
            state_hash: wire::state_hash(&json),
        };
        Script { state, json, seq, now: vestibule_actors::testing::T0, commands: 0, frames: vec![welcome] }
    }

    fn step(&mut self, command: impl Into<vestibule_actors::session::Command>) -> &mut Self {
        use vestibule_actors::protocol::WireEvent;
        use vestibule_actors::session::{self, Command, wire};
        let command = command.into();
        self.commands += 1;
        let correlation = match command {
            Command::Tick => format!("timer:{}", self.seq + 1),
            _ => format!("c{}", self.commands),
        };
        let nonce = format!("FixtureNonce{}", self.commands);
        let ctx = vestibule_actors::decider::Ctx { now_ms: self.now, options: &self.state.options, nonce: &nonce };
        let events = session::decide(&self.state, command, &ctx).expect("the fixture script is valid");
        let before = self.json.clone();
        let prev = self.seq;
        let wire_events: Vec<WireEvent> = events
            .into_iter()
            .map(|event| {
                self.seq += 1;
                self.state = session::evolve(std::mem::take(&mut self.state), &event);
                WireEvent { seq: self.seq, time_ms: self.now, correlation_id: Some(correlation.clone()), event }
            })
            .collect();
        self.json = wire::to_value(&self.state);
        self.frames.push(ServerMessage::Diff {
            seq: self.seq,
            prev_seq: prev,
            events: wire_events,
            patch: wire::patch(&before, &self.json),
            state_hash: wire::state_hash(&self.json),
        });
        self
    }

    fn wait(&mut self, ms: u64) -> &mut Self {
        self.now += ms;
        self
    }

    /// The oldest pending wallet request.
    fn pending(&self) -> String {
        self.state.requests.order[0].clone()
    }

    /// Answers the oldest pending wallet request.
    fn answer(&mut self, outcome: vestibule_actors::machines::requests::WalletOutcome) -> &mut Self {
        let request_id = self.pending();
        self.step(vestibule_actors::session::ClientCommand::ResolveWalletRequest { request_id, outcome })
    }
}

/// A scripted session (discover, connect, toasts, a rejected reconnect, disconnect) as the frames a
/// client receives: a welcome with the state, then one diff per decision. Deterministic.
pub fn fixture_frames() -> Vec<ServerMessage> {
    use vestibule_actors::machines::toasts::ToastVariant;
    use vestibule_actors::session::{ClientCommand as C, Command};
    use vestibule_actors::testing::{ALICE, DEV_WALLET_RDNS, dev_wallet, wallet_err, wallet_ok};

    let mut s = Script::start(Default::default());
    s.step(C::ReportWallets { wallets: vec![dev_wallet()] })
        .step(C::OpenModal { view: None })
        .step(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() })
        .wait(1200)
        .answer(wallet_err(4001, "User rejected the request."))
        .step(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() })
        .answer(wallet_ok(&[ALICE], "0x1"));
    for i in 0..4 {
        let message = format!("Toast \"{i}\"\t\u{2713} \u{e9}");
        s.step(C::ShowToast { message, variant: ToastVariant::Success, duration_ms: None, persistent: None });
    }
    s.wait(4000).step(Command::Tick).wait(150).step(Command::Tick);
    s.step(C::SetToastHover { hovered: true }).step(C::Disconnect { namespace: None });
    s.frames
}

/// Sign-in required: connect, the SIWXSignMessage view, a declined signature, a valid one (the
/// test signer's real EIP-191 signature over the session's message), signed in; the modal opened
/// again on the Account view.
pub fn sign_in_frames() -> Vec<ServerMessage> {
    use vestibule_actors::machines::requests::{RequestKind, WalletOutcome};
    use vestibule_actors::session::ClientCommand as C;
    use vestibule_actors::testing::{
        DEV_WALLET_RDNS, SIGNER_KEY, dev_wallet, personal_sign, sign_in_options, signer_address, wallet_err, wallet_ok,
    };

    let mut s = Script::start(sign_in_options(true));
    s.step(C::ReportWallets { wallets: vec![dev_wallet()] })
        .step(C::OpenModal { view: None })
        .step(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() })
        .wait(800)
        .answer(wallet_ok(&[&signer_address()], "0x1"))
        .wait(500)
        .step(C::SiwxSign {})
        .wait(700)
        .answer(wallet_err(4001, "User rejected the request."))
        .wait(500)
        .step(C::SiwxSign {});
    let message = match &s.state.requests.items[&s.pending()].kind {
        RequestKind::SignMessage { message, .. } => message.clone(),
        other => panic!("expected a sign request, got {other:?}"),
    };
    s.wait(900).answer(WalletOutcome::Ok { result: serde_json::json!(personal_sign(&SIGNER_KEY, &message)) });
    // Signed in, the modal closed; opened again, it shows the Account view.
    s.wait(2000).step(C::OpenModal { view: None });
    s.frames
}

/// Every connect method (email and three socials enabled) with the dev wallet announced, then what
/// email and social login answer on a deployment without an embedded-wallet provider.
pub fn connect_methods_frames() -> Vec<ServerMessage> {
    use vestibule_actors::model::options::{SessionOptions, SocialProvider};
    use vestibule_actors::session::ClientCommand as C;
    use vestibule_actors::testing::dev_wallet;

    let mut options = SessionOptions::default();
    options.features.email = true;
    options.features.socials = vec![SocialProvider::Google, SocialProvider::X, SocialProvider::Discord];
    let mut s = Script::start(options);
    s.step(C::ReportWallets { wallets: vec![dev_wallet()] })
        .step(C::OpenModal { view: None })
        .step(C::ConnectEmail { email: "visitor@example.com".into() })
        .wait(300)
        .step(C::ConnectSocial { provider: SocialProvider::Google });
    s.frames
}

/// The Solana clusters by CAIP-2 id (`solana:<genesis hash prefix>`): Wallet Standard chain and genesis hash.
fn solana_clusters() -> BTreeMap<String, serde_json::Value> {
    use vestibule_actors::model::networks::SOLANA_GENESIS_HASHES;
    SOLANA_GENESIS_HASHES
        .iter()
        .map(|(cluster, genesis)| {
            (format!("solana:{}", &genesis[..32]), serde_json::json!({ "chain": format!("solana:{cluster}"), "genesisHash": genesis }))
        })
        .collect()
}

/// A multichain session (Ethereum and Solana Devnet): both dev wallets discovered, the EVM one
/// connects; switching to Solana shows SwitchActiveChain; confirming goes to Connect, where the
/// Solana wallet connects; then the active namespace switches back to Ethereum, and the modal
/// opens on the Account view.
pub fn multichain_frames() -> Vec<ServerMessage> {
    use vestibule_actors::model::caip::Namespace;
    use vestibule_actors::session::ClientCommand as C;
    use vestibule_actors::testing::{
        ALICE, DEV_SOLANA_CONNECTOR, DEV_WALLET_RDNS, dev_solana_wallet, dev_wallet, multichain_options, solana_address, solana_ok,
        wallet_ok,
    };

    let mut s = Script::start(multichain_options(None));
    s.step(C::ReportWallets { wallets: vec![dev_wallet(), dev_solana_wallet()] })
        .step(C::OpenModal { view: None })
        .step(C::SelectConnector { connector_id: DEV_WALLET_RDNS.into() })
        .wait(600)
        .answer(wallet_ok(&[ALICE], "0x1"))
        .wait(1000)
        .step(C::SwitchActiveNamespace { namespace: Namespace::Solana })
        .wait(800)
        .step(C::ConfirmSwitchActiveChain {})
        .step(C::SelectConnector { connector_id: DEV_SOLANA_CONNECTOR.into() })
        .wait(600);
    let address = solana_address();
    s.answer(solana_ok(&[&address], &["solana:devnet"]))
        .wait(1000)
        .step(C::OpenModal { view: None })
        .step(C::SwitchActiveNamespace { namespace: Namespace::Eip155 });
    s.frames
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

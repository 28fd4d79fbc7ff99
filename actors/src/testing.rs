//! Given / when / then helpers for tests of the deciders (used by this crate's tests, the gateway's
//! property tests and the code generator's fixture frames). Behind the `testing` feature: production
//! builds do not contain them.

use crate::decider::Ctx;
use crate::machines::requests::WalletOutcome;
use crate::model::connector::{ConnectorType, DiscoveredWallet};
use crate::model::options::SessionOptions;
use crate::session::{self, ClientCommand, ClientErrorKind, Command, DomainError, Event, SessionState};

pub const T0: u64 = 1_700_000_000_000;
pub const ALICE: &str = "0x52908400098527886E0F7030069857D2E4169EE7";
pub const DEV_WALLET_RDNS: &str = "dev.vestibule.wallet";

/// A visitor whose key the tests hold, so sign-in messages can really be signed.
pub const SIGNER_KEY: [u8; 32] = [0x42; 32];

pub fn signer_address() -> String {
    // Derived once: a public key derivation per call was 43% of the decide_sequence fuzzer's time.
    static ADDRESS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        let key = k256::ecdsa::SigningKey::from_slice(&SIGNER_KEY).expect("a valid key");
        alloy_primitives::Address::from_private_key(&key).to_checksum(None)
    });
    ADDRESS.clone()
}

/// An EIP-191 (`personal_sign`) signature of `message` by `key`, as a wallet returns it.
pub fn personal_sign(key: &[u8; 32], message: &str) -> String {
    let key = k256::ecdsa::SigningKey::from_slice(key).expect("a valid key");
    let hash = alloy_primitives::eip191_hash_message(message.as_bytes());
    let (sig, recid) = key.sign_prehash_recoverable(hash.as_slice()).expect("signing succeeds");
    let mut out = sig.to_bytes().to_vec();
    out.push(27 + recid.to_byte());
    format!("0x{}", hex::encode(out))
}

/// Options with sign-in enabled (`required` as given).
pub fn sign_in_options(required: bool) -> SessionOptions {
    SessionOptions { siwx: Some(crate::model::options::SiwxOptions { required, ..Default::default() }), ..Default::default() }
}

/// The events that start a session with `options`.
pub fn started_with(options: SessionOptions) -> Vec<Event> {
    let networks = options.validate().expect("test options are valid");
    vec![Event::SessionStarted {
        project: "test".into(),
        origin: "http://localhost:3000".into(),
        options,
        networks,
        served_networks: Vec::new(),
        embedded_frame_origin: None,
    }]
}

/// The secure frame's origin in tests.
pub const FRAME_ORIGIN: &str = "http://localhost:4100";

/// Options with email login and the given social providers enabled.
pub fn embedded_options(socials: Vec<crate::model::options::SocialProvider>) -> SessionOptions {
    SessionOptions { features: crate::model::options::Features { email: true, socials, ..Default::default() }, ..Default::default() }
}

/// A session of a gateway serving the embedded wallet at [`FRAME_ORIGIN`], started at [`T0`] (the
/// frame is loading: due at `T0 + 20 s`).
pub fn started_embedded(options: SessionOptions) -> Vec<Event> {
    let networks = options.validate().expect("test options are valid");
    vec![
        Event::SessionStarted {
            project: "test".into(),
            origin: "http://localhost:3000".into(),
            options,
            networks,
            served_networks: Vec::new(),
            embedded_frame_origin: Some(FRAME_ORIGIN.into()),
        },
        Event::EmbeddedFrameLoading { deadline_ms: T0 + crate::machines::embedded_wallet::FRAME_LOAD_TIMEOUT_MS },
    ]
}

/// The events that start a session with `options` on a gateway whose chain service serves every
/// eip155 and solana network of the session.
pub fn started_serving(options: SessionOptions) -> Vec<Event> {
    use crate::model::caip::Namespace;
    let networks = options.validate().expect("test options are valid");
    let served_networks = networks
        .iter()
        .filter(|n| matches!(n.namespace(), Namespace::Eip155 | Namespace::Solana))
        .map(|n| n.caip_network_id.clone())
        .collect();
    vec![Event::SessionStarted {
        project: "test".into(),
        origin: "http://localhost:3000".into(),
        options,
        networks,
        served_networks,
        embedded_frame_origin: None,
    }]
}

/// A token balance as the chain service answers it.
pub fn token_balance(
    network: &str,
    address: Option<&str>,
    symbol: &str,
    decimals: u8,
    raw: &str,
) -> crate::machines::balances::TokenBalance {
    let asset = match address {
        None => format!("{network}/native"),
        Some(a) => format!("{network}/erc20:{}", a.to_ascii_lowercase()),
    };
    let units: alloy_primitives::U256 = raw.parse().expect("a decimal amount");
    let quantity = crate::model::evm::format_units(units, decimals);
    crate::machines::balances::TokenBalance {
        asset,
        address: address.map(str::to_string),
        name: Some(symbol.into()),
        symbol: symbol.into(),
        decimals,
        raw: raw.into(),
        display: quantity.clone(),
        quantity,
        usd_price: None,
        usd_value: None,
        icon_url: None,
    }
}

/// The demo token's contract in tests.
pub const DEMO_TOKEN: &str = "0x5FbDB2315678afecb367f032d93F642f64180aa3";

/// Balances of `address` on `network`: 5 ETH, 1000 DEMO (18 decimals) and a zero-decimal token.
pub fn balances_of(network: &crate::model::caip::CaipNetworkId, address: &str) -> crate::machines::balances::BalancesSnapshot {
    let n = network.to_string();
    crate::machines::balances::BalancesSnapshot {
        network: network.clone(),
        address: address.to_string(),
        native: token_balance(&n, None, "ETH", 18, "5000000000000000000"),
        tokens: vec![
            token_balance(&n, Some(DEMO_TOKEN), "DEMO", 18, "1000000000000000000000"),
            token_balance(&n, Some("0x00000000000000000000000000000000000000aa"), "ZERO", 0, "7"),
        ],
    }
}

/// The demo SPL mint in tests.
pub const DEMO_MINT: &str = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU";
/// A Solana receiver in tests (a valid 32-byte key).
pub const SOLANA_RECEIVER: &str = "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU";

/// Balances of a Solana `address` on `network`: 2 SOL and 1000 DEMO (an SPL mint, 6 decimals).
pub fn solana_balances_of(network: &crate::model::caip::CaipNetworkId, address: &str) -> crate::machines::balances::BalancesSnapshot {
    let n = network.to_string();
    let mut demo = token_balance(&n, Some(DEMO_MINT), "DEMO", 6, "1000000000");
    demo.asset = format!("{n}/token:{DEMO_MINT}");
    demo.address = Some(DEMO_MINT.into());
    crate::machines::balances::BalancesSnapshot {
        network: network.clone(),
        address: address.to_string(),
        native: token_balance(&n, None, "SOL", 9, "2000000000"),
        tokens: vec![demo],
    }
}

/// The chain service's transaction for a Solana send, as the runtime reports it.
pub fn prepared_solana_transfer(creates_receiver_account: bool) -> crate::machines::send::PreparedSolanaTransfer {
    crate::machines::send::PreparedSolanaTransfer {
        message: "AQABAw==".into(),
        transaction: "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAQABAw==".into(),
        blockhash: "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG".into(),
        creates_receiver_account,
    }
}

/// A page of one transaction of `address` on `network`, mined at `mined_at` (seconds).
pub fn activity_page(
    network: &crate::model::caip::CaipNetworkId,
    address: &str,
    mined_at: u64,
    next: Option<&str>,
) -> crate::machines::activity::ActivityPage {
    use crate::machines::activity::*;
    ActivityPage {
        transactions: vec![ActivityTransaction {
            id: format!("0x{mined_at:064x}"),
            network: network.clone(),
            mined_at,
            year_month: "2023-11".into(),
            operation_type: OperationType::Send,
            status: TransactionStatus::Confirmed,
            sent_from: address.to_string(),
            sent_to: Some(ALICE.into()),
            transfers: vec![ActivityTransfer { symbol: Some("ETH".into()), quantity: "0.5".into(), sign: Some(Sign::Minus), nft: None }],
        }],
        next: next.map(str::to_string),
    }
}

pub fn started() -> Vec<Event> {
    started_with(SessionOptions::default())
}

pub fn dev_wallet() -> DiscoveredWallet {
    DiscoveredWallet {
        name: "Dev Wallet".into(),
        rdns: Some(DEV_WALLET_RDNS.into()),
        icon: None,
        kind: ConnectorType::Announced,
        namespace: None,
    }
}

/// The dev Solana wallet's name, and its connector id.
pub const DEV_SOLANA_WALLET: &str = "Dev Solana Wallet";
pub const DEV_SOLANA_CONNECTOR: &str = "solana:Dev Solana Wallet";

/// A Wallet Standard wallet with a `solana:` chain, as the widget reports it.
pub fn dev_solana_wallet() -> DiscoveredWallet {
    DiscoveredWallet {
        name: DEV_SOLANA_WALLET.into(),
        rdns: None,
        icon: None,
        kind: ConnectorType::Announced,
        namespace: Some(crate::model::caip::Namespace::Solana),
    }
}

/// The Solana visitor's ed25519 key (the tests sign SIWS messages with it).
pub const SOLANA_KEY: [u8; 32] = [7; 32];

pub fn solana_address() -> String {
    let key = ed25519_dalek::SigningKey::from_bytes(&SOLANA_KEY);
    bs58::encode(key.verifying_key().as_bytes()).into_string()
}

/// A `solana:signMessage` signature of `message` by `key`, base58 as the widget reports it.
pub fn solana_sign(key: &[u8; 32], message: &str) -> String {
    use ed25519_dalek::Signer;
    let key = ed25519_dalek::SigningKey::from_bytes(key);
    bs58::encode(key.sign(message.as_bytes()).to_bytes()).into_string()
}

/// What a Wallet Standard wallet's connect answers: its accounts and the chains they support.
pub fn solana_ok(accounts: &[&str], chains: &[&str]) -> WalletOutcome {
    WalletOutcome::Ok { result: serde_json::json!({ "accounts": accounts, "chains": chains }) }
}

/// Options of a multichain session: Ethereum and Solana Devnet (sign-in as given).
pub fn multichain_options(siwx: Option<bool>) -> SessionOptions {
    use crate::model::options::NetworkOption;
    SessionOptions {
        networks: vec![
            NetworkOption::Known("eip155:1".parse().expect("valid")),
            NetworkOption::Known(crate::model::networks::SOLANA_DEVNET.parse().expect("valid")),
        ],
        siwx: siwx.map(|required| crate::model::options::SiwxOptions { required, ..Default::default() }),
        ..Default::default()
    }
}

/// A session state after `events`, at a time, ready for a command.
#[derive(Clone)]
pub struct Given {
    pub state: SessionState,
    pub history: Vec<Event>,
    pub now_ms: u64,
}

pub fn given(events: impl IntoIterator<Item = Event>) -> Given {
    let history: Vec<Event> = events.into_iter().collect();
    let state = history.iter().fold(SessionState::default(), session::evolve);
    Given { state, history, now_ms: T0 }
}

impl Given {
    pub fn at(mut self, now_ms: u64) -> Self {
        self.now_ms = now_ms;
        self
    }

    /// Decide `command` and keep its events (panics if refused): for building up a scenario.
    pub fn and(mut self, command: impl Into<Command>) -> Self {
        let command = command.into();
        let events = self.when(command.clone()).result.unwrap_or_else(|e| panic!("{command:?} was refused: {e}"));
        for e in &events {
            self.state = session::evolve(std::mem::take(&mut self.state), e);
        }
        self.history.extend(events);
        self
    }

    pub fn when(&self, command: impl Into<Command>) -> Then {
        // Deterministic and distinct per decision, as the runtime's CSPRNG nonces are distinct.
        let nonce = format!("TestNonce{:08}", self.history.len());
        let ctx = Ctx { now_ms: self.now_ms, options: &self.state.options, nonce: &nonce };
        let result = session::decide(&self.state, command.into(), &ctx);
        Then { before: self.state.clone(), result }
    }

    /// The id of the oldest pending wallet request.
    pub fn pending_request(&self) -> String {
        self.state.requests.order.first().cloned().expect("a pending request")
    }
}

pub struct Then {
    pub before: SessionState,
    pub result: Result<Vec<Event>, DomainError>,
}

impl Then {
    pub fn events(&self) -> &[Event] {
        match &self.result {
            Ok(events) => events,
            Err(e) => panic!("expected events, the command was refused: {e}"),
        }
    }

    pub fn event_types(&self) -> Vec<&'static str> {
        self.events().iter().map(Event::type_name).collect()
    }

    pub fn error(&self) -> &DomainError {
        match &self.result {
            Ok(events) => panic!("expected a refusal, got {events:?}"),
            Err(e) => e,
        }
    }

    pub fn state(&self) -> SessionState {
        self.events().iter().fold(self.before.clone(), session::evolve)
    }
}

pub fn wallet_ok(accounts: &[&str], chain_id: &str) -> WalletOutcome {
    WalletOutcome::Ok { result: serde_json::json!({ "accounts": accounts, "chainId": chain_id }) }
}

pub fn wallet_err(code: i64, message: &str) -> WalletOutcome {
    WalletOutcome::Error { code, message: message.into() }
}

/// A session where the dev wallet was discovered and connected ALICE on chain 1.
pub fn connected() -> Given {
    let g = given(started())
        .and(ClientCommand::ReportWallets { wallets: vec![dev_wallet()] })
        .and(ClientCommand::OpenModal { view: None })
        .and(ClientCommand::SelectConnector { connector_id: DEV_WALLET_RDNS.into() });
    let request_id = g.pending_request();
    g.and(ClientCommand::ResolveWalletRequest { request_id, outcome: wallet_ok(&[ALICE], "0x1") })
}

/// A multichain session where both dev wallets were discovered and connected: ALICE on Ethereum,
/// then [`solana_address`] on Solana Devnet (the active namespace).
pub fn connected_both() -> Given {
    let g = given(started_with(multichain_options(None)))
        .and(ClientCommand::ReportWallets { wallets: vec![dev_wallet(), dev_solana_wallet()] })
        .and(ClientCommand::OpenModal { view: None })
        .and(ClientCommand::SelectConnector { connector_id: DEV_WALLET_RDNS.into() });
    let request_id = g.pending_request();
    let g = g
        .and(ClientCommand::ResolveWalletRequest { request_id, outcome: wallet_ok(&[ALICE], "0x1") })
        .and(ClientCommand::OpenModal { view: Some(crate::machines::router::View::Connect) })
        .and(ClientCommand::SelectConnector { connector_id: DEV_SOLANA_CONNECTOR.into() });
    let request_id = g.pending_request();
    let address = solana_address();
    g.and(ClientCommand::ResolveWalletRequest { request_id, outcome: solana_ok(&[&address], &["solana:devnet"]) })
}

/// A state-aware random visitor: picks a plausible next command for `state` (mostly valid, sometimes
/// not), so random runs reach every state and refusal. Deterministic for a given RNG.
pub fn random_command(rng: &mut impl rand::Rng, state: &SessionState) -> ClientCommand {
    use crate::machines::router::View;
    use crate::machines::toasts::ToastVariant;
    use crate::model::caip::Namespace;

    let wallets = [
        dev_wallet(),
        dev_solana_wallet(),
        DiscoveredWallet {
            name: "Other".into(),
            rdns: Some("io.other".into()),
            icon: None,
            kind: ConnectorType::Announced,
            namespace: None,
        },
        DiscoveredWallet { name: "Browser Wallet".into(), rdns: None, icon: None, kind: ConnectorType::Injected, namespace: None },
    ];
    let pick = |rng: &mut dyn rand::RngCore, items: &[String]| -> Option<String> {
        (!items.is_empty()).then(|| items[(rng.next_u32() as usize) % items.len()].clone())
    };
    let connector_ids: Vec<String> = state.connection.connectors.iter().map(|c| c.id.clone()).collect();
    let toast_ids: Vec<String> = state.toasts.order.clone();
    let request_ids: Vec<String> = state.requests.order.clone();
    if rng.random_range(0..100u32) < 8 {
        return match rng.random_range(0..4u32) {
            0 | 1 => ClientCommand::SiwxSign {},
            2 => ClientCommand::SiwxCancel {},
            _ => ClientCommand::SiwxSignOut { account: None },
        };
    }
    // Multichain: switch the active namespace, confirm SwitchActiveChain.
    if rng.random_range(0..100u32) < 6 {
        return match rng.random_range(0..5u32) {
            0 | 1 => ClientCommand::SwitchActiveNamespace { namespace: Namespace::Solana },
            2 => ClientCommand::SwitchActiveNamespace { namespace: Namespace::Eip155 },
            3 => ClientCommand::SwitchActiveNamespace { namespace: Namespace::Bip122 },
            _ => ClientCommand::ConfirmSwitchActiveChain {},
        };
    }
    let sign_request = request_ids.iter().find_map(|id| match &state.requests.items[id].kind {
        crate::machines::requests::RequestKind::SignMessage { message, .. } => {
            Some((id.clone(), message.clone(), state.requests.items[id].namespace))
        }
        _ => None,
    });
    if let Some((request_id, message, namespace)) = sign_request.filter(|_| rng.random_bool(0.5)) {
        let solana = namespace == Namespace::Solana;
        let outcome = match rng.random_range(0..5u32) {
            0 | 1 if solana => WalletOutcome::Ok { result: serde_json::json!(solana_sign(&SOLANA_KEY, &message)) },
            0 | 1 => WalletOutcome::Ok { result: serde_json::json!(personal_sign(&SIGNER_KEY, &message)) },
            2 if solana => WalletOutcome::Ok { result: serde_json::json!(solana_sign(&[8; 32], &message)) },
            2 => WalletOutcome::Ok { result: serde_json::json!(personal_sign(&[0x43; 32], &message)) },
            3 => wallet_err(4001, "User rejected the request."),
            _ => WalletOutcome::Ok { result: serde_json::json!("0xnot-a-signature") },
        };
        return ClientCommand::ResolveWalletRequest { request_id, outcome };
    }
    // A pending Solana connect or sync is answered as a Wallet Standard wallet answers.
    let solana_request = request_ids.iter().find(|id| {
        let r = &state.requests.items[*id];
        r.namespace == Namespace::Solana
            && matches!(r.kind, crate::machines::requests::RequestKind::Connect | crate::machines::requests::RequestKind::Sync)
    });
    if let Some(request_id) = solana_request.filter(|_| rng.random_bool(0.6)) {
        let address = solana_address();
        let outcome = match rng.random_range(0..5u32) {
            0 | 1 => solana_ok(&[&address], &["solana:devnet"]),
            2 => solana_ok(&[&address], &["solana:mainnet"]),
            3 => wallet_err(4001, "User rejected the request."),
            _ => solana_ok(&[], &["solana:devnet"]),
        };
        return ClientCommand::ResolveWalletRequest { request_id: request_id.clone(), outcome };
    }
    // The wallet moves to the chain a switch asked for on its own (its chainChanged).
    let switch_target = state.network_switch.target.as_ref().and_then(|t| t.reference.parse::<u64>().ok());
    if let (Some(chain_id), Some(connector_id)) =
        (switch_target, state.connection.namespace(crate::model::caip::Namespace::Eip155).connector_id.clone())
        && rng.random_bool(match state.network_switch.status {
            crate::machines::network_switch::SwitchStatus::Adding => 0.3,
            crate::machines::network_switch::SwitchStatus::Failed => 0.15,
            _ => 0.3,
        })
    {
        return ClientCommand::WalletChainChanged { connector_id, chain_id: format!("{chain_id:#x}") };
    }
    // The EVM account: balances, activity, the Send form, network switching, and the wallet's
    // answers to the transfers and switches it was asked for.
    let switch_request = state.network_switch.request_id.clone().filter(|id| state.requests.get(id).is_some());
    if switch_request.is_some() && rng.random_bool(0.1) {
        return ClientCommand::PageLoaded {};
    }
    if let Some(request_id) = switch_request.filter(|_| rng.random_bool(0.5)) {
        let outcome = match rng.random_range(0..5u32) {
            0 => WalletOutcome::Ok { result: serde_json::Value::Null },
            1 | 2 => wallet_err(4902, "Unrecognized chain ID"),
            3 => wallet_err(4001, "User rejected the request."),
            _ => wallet_err(-32603, "internal"),
        };
        return ClientCommand::ResolveWalletRequest { request_id, outcome };
    }
    let send_request = state.send.sending.as_ref().map(|t| t.request_id.clone()).filter(|id| state.requests.get(id).is_some());
    if let Some(request_id) = send_request.filter(|_| rng.random_bool(0.6)) {
        if matches!(state.requests.items[&request_id].kind, crate::machines::requests::RequestKind::SignTransaction { .. }) {
            let outcome = match rng.random_range(0..4u32) {
                0 | 1 => WalletOutcome::Ok { result: serde_json::json!({ "signedTransaction": "AQID" }) },
                2 => WalletOutcome::Ok { result: serde_json::json!(42) },
                _ => wallet_err(4001, "User rejected the request."),
            };
            return ClientCommand::ResolveWalletRequest { request_id, outcome };
        }
        let outcome = match rng.random_range(0..4u32) {
            0 | 1 => WalletOutcome::Ok { result: serde_json::json!(format!("0x{:064x}", rng.random_range(1..1000u32))) },
            2 => wallet_err(4001, "User rejected the request."),
            _ => wallet_err(-32000, "insufficient funds for gas * price + value"),
        };
        return ClientCommand::ResolveWalletRequest { request_id, outcome };
    }
    let rpc_request =
        request_ids.iter().find(|id| matches!(state.requests.items[*id].kind, crate::machines::requests::RequestKind::Rpc { .. }));
    if let Some(request_id) = rpc_request.filter(|_| rng.random_bool(0.5)) {
        let outcome = match rng.random_range(0..6u32) {
            0 | 1 => WalletOutcome::Ok { result: serde_json::json!(format!("0x{:064x}", rng.random_range(1..1000u32))) },
            2 => WalletOutcome::Ok { result: serde_json::Value::Null },
            3 | 4 => wallet_err(4902, "Unrecognized chain ID"),
            _ => wallet_err(4001, "User rejected the request."),
        };
        return ClientCommand::ResolveWalletRequest { request_id: request_id.clone(), outcome };
    }
    // The host app's provider: reads, wallet calls, signing on the transaction stack, disallowed
    // methods and malformed calls; the wallet answers the ones it performs.
    let host_wallet_request = request_ids.iter().find(|id| state.host_requests.for_wallet_request(id).is_some());
    if let Some(request_id) = host_wallet_request.filter(|_| rng.random_bool(0.4)) {
        let outcome = match rng.random_range(0..3u32) {
            0 | 1 => WalletOutcome::Ok { result: serde_json::json!(format!("0x{:064x}", rng.random_range(1..1000u32))) },
            _ => wallet_err(4001, "User rejected the request."),
        };
        return ClientCommand::ResolveWalletRequest { request_id: request_id.clone(), outcome };
    }
    if let Some(top) = state.host_requests.stack.last().filter(|_| rng.random_bool(0.15)) {
        return ClientCommand::CancelHostRequest { request_id: top.clone() };
    }
    if rng.random_range(0..100u32) < 7 {
        let (method, params) = match rng.random_range(0..10u32) {
            9 => {
                let chain_id = ["0x1", "0xa4b1", "0x89"][rng.random_range(0..3)];
                ("wallet_switchEthereumChain", serde_json::json!([{ "chainId": chain_id }]))
            }
            0 | 1 => ("eth_call", serde_json::json!([{ "to": ALICE, "data": "0x70a08231" }, "latest"])),
            2 => ("eth_getBalance", serde_json::json!([ALICE, "latest"])),
            3 | 4 => ("eth_sendTransaction", serde_json::json!([{ "to": ALICE, "value": "0x1" }])),
            5 => ("personal_sign", serde_json::json!(["0x68656c6c6f", ALICE])),
            6 => ("eth_sendTransaction", serde_json::json!([{ "to": "nothex", "data": "0x" }])),
            7 => ("eth_chainId", serde_json::Value::Null),
            _ => ("anvil_setBalance", serde_json::json!([ALICE, "0x1"])),
        };
        let id = format!("h{}", state.host_requests.order.len() + rng.random_range(0..1000usize));
        return ClientCommand::HostRequest { request_id: id, method: method.into(), params };
    }
    if state.network_switch.status == crate::machines::network_switch::SwitchStatus::Failed && rng.random_bool(0.3) {
        return ClientCommand::RetrySwitchNetwork {};
    }
    if rng.random_range(0..100u32) < 20 {
        let mut tokens: Vec<String> = state.balances.all().map(|b| b.asset.clone()).collect();
        tokens.push("eip155:1/erc20:0x00000000000000000000000000000000000000aa".into());
        let form = crate::machines::send::SendForm {
            token: rng.random_bool(0.8).then(|| tokens[rng.random_range(0..tokens.len())].clone()),
            amount: ["", "0.1", "0.1", "1.5", "1.5", "0", "99999", "0.0000000000000000001"][rng.random_range(0..8)].into(),
            receiver: if state.chain_account().is_some_and(|a| a.namespace == crate::model::caip::Namespace::Solana) {
                ["", SOLANA_RECEIVER, SOLANA_RECEIVER, SOLANA_RECEIVER, ALICE, "not an address"][rng.random_range(0..6)].into()
            } else {
                ["", ALICE, ALICE, ALICE, "0x1234", "not an address"][rng.random_range(0..6)].into()
            },
        };
        let networks: Vec<_> = state.networks.iter().map(|n| n.caip_network_id.clone()).collect();
        return match rng.random_range(0..12u32) {
            0 => ClientCommand::RefreshBalances {},
            1 => ClientCommand::LoadActivity { more: rng.random_bool(0.5) },
            2 => ClientCommand::SetSendForm { form },
            3..=6 => ClientCommand::SubmitSend { form },
            7 => ClientCommand::ResetSend {},
            8..=10 if !networks.is_empty() => {
                ClientCommand::SwitchNetwork { network: networks[rng.random_range(0..networks.len())].clone() }
            }
            _ => ClientCommand::RetrySwitchNetwork {},
        };
    }
    let signer = signer_address();
    match rng.random_range(0..100u32) {
        0..=3 => ClientCommand::PageLoaded {},
        4..=11 => ClientCommand::OpenModal { view: None },
        12..=16 => ClientCommand::CloseModal {},
        17..=20 => {
            let views = [
                View::Connect,
                View::AllWallets,
                View::Networks,
                View::Account,
                View::Swap,
                View::Send,
                View::Receive,
                View::SiwxSignMessage,
            ];
            ClientCommand::Navigate { view: views[rng.random_range(0..views.len())], params: None, replace: Some(rng.random_bool(0.3)) }
        }
        21..=23 => ClientCommand::GoBack {},
        24..=29 => {
            let n = rng.random_range(0..=wallets.len());
            ClientCommand::ReportWallets { wallets: wallets[..n].to_vec() }
        }
        30..=41 => ClientCommand::SelectConnector { connector_id: pick(rng, &connector_ids).unwrap_or_else(|| "io.unknown".into()) },
        42..=45 => ClientCommand::Disconnect {
            namespace: match rng.random_range(0..3u32) {
                0 => None,
                1 => Some(Namespace::Eip155),
                _ => Some(Namespace::Solana),
            },
        },
        46..=62 => {
            let outcome = match rng.random_range(0..6u32) {
                0 => wallet_ok(&[ALICE], "0x1"),
                1 => wallet_ok(&[signer.as_str()], "0x1"),
                2 => wallet_ok(&[ALICE], "0x7a69"),
                3 => wallet_ok(&[], "0x1"),
                4 => wallet_err(4001, "User rejected the request."),
                _ => wallet_err(-32603, "internal"),
            };
            ClientCommand::ResolveWalletRequest { request_id: pick(rng, &request_ids).unwrap_or_else(|| "r999".into()), outcome }
        }
        63..=65 => {
            let connector_id = pick(rng, &connector_ids).unwrap_or_default();
            let account = if connector_id.starts_with("solana:") { solana_address() } else { ALICE.to_string() };
            ClientCommand::WalletAccountsChanged { connector_id, accounts: if rng.random_bool(0.5) { vec![] } else { vec![account] } }
        }
        66..=68 => ClientCommand::WalletChainChanged {
            connector_id: pick(rng, &connector_ids).unwrap_or_default(),
            chain_id: ["0x1", "0xa4b1", "0x7a69"][rng.random_range(0..3)].into(),
        },
        69..=70 => ClientCommand::WalletDisconnected { connector_id: pick(rng, &connector_ids).unwrap_or_default() },
        71..=82 => {
            let variants = [ToastVariant::Success, ToastVariant::Error, ToastVariant::Loading];
            ClientCommand::ShowToast {
                message: format!("message {}", rng.random_range(0..5)),
                variant: variants[rng.random_range(0..3)],
                duration_ms: None,
                persistent: Some(rng.random_bool(0.1)),
            }
        }
        83..=86 => ClientCommand::DismissToast { id: pick(rng, &toast_ids).unwrap_or_else(|| "t999".into()) },
        87..=89 => ClientCommand::SwipeToast {
            id: pick(rng, &toast_ids).unwrap_or_else(|| "t999".into()),
            distance_px: rng.random_range(-40.0..40.0),
            elapsed_ms: rng.random_range(0.0..400.0),
        },
        90..=93 => ClientCommand::SetToastHover { hovered: rng.random_bool(0.5) },
        94..=96 => ClientCommand::SetToastInteraction { active: rng.random_bool(0.5) },
        97..=98 => ClientCommand::SetPageVisibility { hidden: rng.random_bool(0.5) },
        _ => {
            let kind = if rng.random_bool(0.5) { ClientErrorKind::ChartDisagreement } else { ClientErrorKind::Render };
            ClientCommand::ReportClientError { kind, detail: "random report".into() }
        }
    }
}

/// One step of a random run: either a client command or time passing (a `Tick` when due).
pub fn random_step(rng: &mut impl rand::Rng, state: &SessionState, now_ms: u64) -> (Command, u64) {
    // The runtime answers a pending on-chain signature check (as the gateway's checker would).
    if let Some(check) = state.siwx.pending_contract_check().filter(|_| rng.random_bool(0.5)) {
        let verdict = if rng.random_bool(0.5) { Ok(()) } else { Err("the contract refused the signature".into()) };
        return (Command::SiwxContractChecked { nonce: check.nonce, verdict }, now_ms + rng.random_range(0..50));
    }
    // The runtime answers the chain reads the state waits for (as the chain service would).
    if let Some(fetch) = state.balances.pending.clone().filter(|_| rng.random_bool(0.5)) {
        let snapshot = if fetch.network.namespace == crate::model::caip::Namespace::Solana {
            solana_balances_of(&fetch.network, &fetch.address)
        } else {
            balances_of(&fetch.network, &fetch.address)
        };
        let outcome = if rng.random_bool(0.7) { Ok(snapshot) } else { Err("node down".into()) };
        return (Command::BalancesFetched { id: fetch.id, outcome }, now_ms + rng.random_range(0..50));
    }
    if let Some(fetch) = state.activity.pending.clone().filter(|_| rng.random_bool(0.5)) {
        let outcome = if rng.random_bool(0.7) {
            Ok(activity_page(&fetch.network, &fetch.address, 1_700_000_000 - fetch.id, rng.random_bool(0.5).then_some("cursor")))
        } else {
            Err("node down".into())
        };
        return (Command::ActivityFetched { id: fetch.id, outcome }, now_ms + rng.random_range(0..50));
    }
    if let Some(sent) = state.send.awaiting_receipts().next().filter(|_| rng.random_bool(0.5)) {
        let outcome = match rng.random_range(0..3u32) {
            0 => session::ReceiptOutcome::Mined { success: true, block_number: 7 },
            1 => session::ReceiptOutcome::Mined { success: false, block_number: 7 },
            _ => session::ReceiptOutcome::NotMined("no receipt".into()),
        };
        return (Command::ReceiptObserved { hash: sent.hash.clone(), outcome }, now_ms + rng.random_range(0..50));
    }
    if let Some(send) = state.send.solana.clone().filter(|_| rng.random_bool(0.5)) {
        use crate::machines::send::SolanaSendStep;
        let at = now_ms + rng.random_range(0..50);
        match send.step {
            SolanaSendStep::Preparing => {
                let outcome = if rng.random_bool(0.8) {
                    Ok(prepared_solana_transfer(rng.random_bool(0.5)))
                } else {
                    Err("RPC request failed".into())
                };
                return (Command::SolanaSendPrepared { id: send.id, outcome }, at);
            }
            SolanaSendStep::Submitting { .. } => {
                let outcome = if rng.random_bool(0.7) {
                    Ok(format!("{}{}", "5".repeat(60), send.id))
                } else if rng.random_bool(0.7) {
                    Err(crate::machines::send::SolanaSubmitFailure::Node("insufficient funds".into()))
                } else {
                    Err(crate::machines::send::SolanaSubmitFailure::Refused("the fee payer's signature is missing or invalid".into()))
                };
                return (Command::SolanaSendSubmitted { id: send.id, outcome }, at);
            }
            SolanaSendStep::Signing { .. } => {}
        }
    }
    if let Some(read) = state.host_requests.chain_reads().next().filter(|_| rng.random_bool(0.5)) {
        // For about half the ids, a large answer (an `eth_getLogs` page), so that answers over
        // their bytes' budget are forgotten in the random runs too. Chosen by the id, not drawn,
        // so that the runs' other draws (and the transitions they reach) stay as they were.
        let large = read.id.bytes().last().is_some_and(|b| b % 2 == 0);
        let outcome = match rng.random_bool(0.7) {
            true if large => WalletOutcome::Ok { result: serde_json::json!(format!("0x{}", "ab".repeat(31_000))) },
            true => WalletOutcome::Ok { result: serde_json::json!("0x1") },
            false => wallet_err(3, "execution reverted"),
        };
        return (Command::HostReadAnswered { request_id: read.id.clone(), outcome }, now_ms + rng.random_range(0..50));
    }
    if state.embedded.frame_origin.is_some() && rng.random_bool(0.35) {
        return random_embedded_step(rng, state, now_ms);
    }
    if rng.random_bool(0.2) {
        let now = now_ms + rng.random_range(0..3000);
        (Command::Tick, now)
    } else {
        (Command::Client(random_command(rng, state)), now_ms + rng.random_range(0..50))
    }
}

/// A random step of the embedded wallet (a session with a frame origin): the visitor's and the host
/// bridge's commands, the embedded service's answers, and deadlines falling due.
fn random_embedded_step(rng: &mut impl rand::Rng, state: &SessionState, now_ms: u64) -> (Command, u64) {
    use crate::machines::embedded_wallet::*;
    use crate::model::options::SocialProvider;
    let soon = now_ms + rng.random_range(0..50);
    let e = &state.embedded;
    let due = |at: Option<u64>| (Command::Tick, at.unwrap_or(now_ms).max(now_ms));
    if e.sign_out.is_some() && rng.random_bool(0.5) {
        return (Command::EmbeddedSignOutDone, soon);
    }
    match e.frame.status {
        FrameStatus::Loading if rng.random_bool(0.5) => {
            return if rng.random_bool(0.8) {
                (ClientCommand::EmbeddedFrameReady { frame_id: "frame-1".into() }.into(), soon)
            } else {
                due(e.frame.deadline_ms)
            };
        }
        FrameStatus::Settling if rng.random_bool(0.7) => return due(e.frame.deadline_ms),
        _ => {}
    }
    let wallet = || EmbeddedWalletInfo { wallet_id: "w-1".into(), eip155_address: ALICE.into(), solana_address: solana_address() };
    // The embedded service's notices name the frame they are about: the one the session announced.
    let notice = || Some("frame-1".to_string());
    let verified = |rng: &mut dyn rand::RngCore, method: LoginMethod| Command::EmbeddedLoginVerified {
        method,
        user_id: "u-1".into(),
        email: Some("a@b.co".into()),
        username: (method == LoginMethod::Discord).then(|| "bob0".into()),
        wallet: (rng.next_u32() % 2 == 0).then(wallet),
        from_frame: notice(),
    };
    match e.update.status {
        UpdateStatus::Sending if rng.random_bool(0.5) => {
            return match rng.random_range(0..3u32) {
                0 => (Command::EmbeddedEmailUpdateFailed { message: "The code could not be mailed".into() }, soon),
                _ => (Command::EmbeddedEmailUpdateStep { step: UpdateStep::Primary, from_frame: None }, soon),
            };
        }
        UpdateStatus::PrimaryOtp if rng.random_bool(0.5) => {
            return (Command::EmbeddedEmailUpdateStep { step: UpdateStep::Secondary, from_frame: notice() }, soon);
        }
        UpdateStatus::SecondaryOtp if rng.random_bool(0.5) => {
            return if rng.random_bool(0.8) {
                (Command::EmbeddedEmailUpdated { new_email: "new@b.co".into(), from_frame: notice() }, soon)
            } else {
                due(e.update.deadline_ms)
            };
        }
        UpdateStatus::Polling if rng.random_bool(0.5) => return due(e.update.deadline_ms),
        _ => {}
    }
    let command: Command = match e.login.status {
        LoginStatus::Idle | LoginStatus::Failed => match rng.random_range(0..4u32) {
            0 | 1 => ClientCommand::ConnectEmail { email: "a@b.co".into() }.into(),
            2 => ClientCommand::ConnectSocial { provider: SocialProvider::Discord }.into(),
            _ => ClientCommand::ConnectSocial { provider: SocialProvider::Google }.into(),
        },
        LoginStatus::SendingOtp => match rng.random_range(0..6u32) {
            0 | 1 => Command::EmbeddedOtpSent { challenge_id: "c-1".into(), step: OtpStep::VerifyDevice },
            2 => Command::EmbeddedOtpSent { challenge_id: "c-1".into(), step: OtpStep::VerifyOtp },
            3 => Command::EmbeddedOtpSendFailed { message: "The code could not be mailed".into() },
            4 => return due(e.login.deadline_ms),
            _ => ClientCommand::CancelEmbeddedLogin {}.into(),
        },
        LoginStatus::AwaitingOtp => match rng.random_range(0..9u32) {
            0 => Command::EmbeddedOtpRejected { reason: OtpRejection::Wrong, attempts_left: Some(3), from_frame: notice() },
            1 => Command::EmbeddedOtpRejected { reason: OtpRejection::Expired, attempts_left: None, from_frame: notice() },
            2 => Command::EmbeddedOtpRejected { reason: OtpRejection::Attempts, attempts_left: Some(0), from_frame: notice() },
            3 => Command::EmbeddedOtpSent { challenge_id: "c-1".into(), step: OtpStep::VerifyOtp },
            4 => ClientCommand::EmbeddedRequestFailed { message: "The frame did not answer".into() }.into(),
            5 => return due(e.login.deadline_ms),
            _ => verified(rng, LoginMethod::Email),
        },
        LoginStatus::SocialStarting => match rng.random_range(0..4u32) {
            0 | 1 => {
                let provider = if e.login.method == Some(LoginMethod::Discord) { SocialProvider::Discord } else { SocialProvider::Google };
                Command::EmbeddedSocialRedirect { provider, url: "https://provider.example/authorize?state=s".into() }
            }
            2 => Command::EmbeddedSocialFailed { message: SOCIAL_INIT_FAILED.into(), from_frame: None },
            _ => ClientCommand::SocialPopupClosed {}.into(),
        },
        LoginStatus::SocialPopup => match rng.random_range(0..3u32) {
            0 => ClientCommand::SocialPopupClosed {}.into(),
            _ => verified(rng, e.login.method.unwrap_or(LoginMethod::Google)),
        },
        LoginStatus::CreatingWallet => match rng.random_range(0..4u32) {
            0 => return due(e.login.deadline_ms),
            _ => {
                let w = wallet();
                Command::EmbeddedWalletBound {
                    wallet_id: w.wallet_id,
                    eip155_address: w.eip155_address,
                    solana_address: w.solana_address,
                    from_frame: notice(),
                }
            }
        },
        LoginStatus::Connected => match rng.random_range(0..3u32) {
            0 => ClientCommand::Disconnect { namespace: None }.into(),
            _ => ClientCommand::UpdateEmail { email: "new@b.co".into() }.into(),
        },
    };
    (command, soon)
}

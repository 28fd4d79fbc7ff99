//! Connection: per namespace, whether an account is connected, connecting or disconnected; which
//! connector holds it; the accounts and the network; per connector, connected / active / disconnected;
//! the wallets the browser discovered; and the recent wallets (at most two).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::chart::{ANY_STATE, Statechart, region, tg};
use crate::model::caip::{CaipAddress, CaipNetworkId, Namespace, NamespaceFeatures, parse_evm_chain_id};
use crate::model::connector::{
    Connector, ConnectorType, DiscoveredWallet, INJECTED_CONNECTOR_ID, MAX_CONNECTORS, MAX_ICON_BYTES, MAX_RECENT_WALLETS,
    MAX_WALLET_NAME_BYTES, MAX_WALLET_RDNS_BYTES, RecentWallet, SOLANA_CONNECTOR_PREFIX, solana_connector_id,
};
use crate::model::networks::{ChainDefinition, NetworkRef, solana_cluster_chain};
use crate::model::options::{AccountType, SessionOptions};
use crate::session::{DomainError, Event};

pub const ID: &str = "connection";

/// The most accounts (and chains) a wallet's answer or `accountsChanged` may name.
pub const MAX_WALLET_ACCOUNTS: usize = 64;

/// Connector ids the session gives out itself: the embedded wallet, the injected provider, and
/// every Wallet Standard wallet's (`solana:` and its name). An EIP-6963 announcement claiming one
/// is left out: it would take over that connector's events (a wallet announcing `auth` would
/// change the embedded account's address).
pub fn is_reserved_connector_id(id: &str) -> bool {
    id == crate::machines::embedded_wallet::AUTH_CONNECTOR_ID || id == INJECTED_CONNECTOR_ID || id.starts_with(SOLANA_CONNECTOR_PREFIX)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum ConnectionStatus {
    #[default]
    Disconnected,
    Connecting,
    Connected,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct Account {
    pub address: String,
    #[serde(rename = "type")]
    pub account_type: AccountType,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceConnection {
    pub status: ConnectionStatus,
    #[ts(type = "string | null")]
    pub connector_id: Option<String>,
    pub accounts: Vec<Account>,
    /// The active account's address (the first account).
    #[ts(type = "string | null")]
    pub address: Option<String>,
    #[ts(type = "string | null")]
    pub caip_address: Option<CaipAddress>,
    pub network: Option<NetworkRef>,
    /// The wallet request this namespace is waiting for (connect or sync).
    #[ts(type = "string | null")]
    pub pending_request: Option<String>,
    /// Re-checking a stored connection (spec: loading while syncing).
    pub syncing: bool,
    /// Why the last connect failed ("Connection rejected", "Modal closed", ...), until the next
    /// attempt: how the page learns that its connect was rejected.
    #[ts(type = "string | null")]
    pub last_error: Option<String>,
    /// The session's networks (of this namespace) the account can sign on, when its wallet says:
    /// a Solana wallet's account lists the chains it supports. Absent: any (an EVM wallet switches
    /// chains itself; the embedded wallet signs on every cluster). The Networks view offers only
    /// these, and a switch to another is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub signable_networks: Option<Vec<CaipNetworkId>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum ConnectorStatus {
    /// The connector of the active namespace.
    Connected,
    /// Holds a connection in another namespace.
    Active,
    Disconnected,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionState {
    pub namespaces: BTreeMap<Namespace, NamespaceConnection>,
    pub active_namespace: Option<Namespace>,
    // Shared, not copied, when a decision copies the region to change the namespaces (most of its
    // events), and compared by pointer to tell whether the Connect view must be derived again.
    pub connectors: Arc<[Connector]>,
    /// Derived from `namespaces` and `connectors`.
    pub connector_status: BTreeMap<String, ConnectorStatus>,
    /// Newest first.
    // Shared like `connectors`.
    pub recent_wallets: Arc<[RecentWallet]>,
    /// Derived: true while any stored connection is being synced.
    pub loading: bool,
    /// Derived: what the active namespace supports (spec section 9); nothing without one.
    pub active_features: NamespaceFeatures,
}

impl Default for ConnectionState {
    fn default() -> Self {
        Self {
            namespaces: Namespace::ALL.into_iter().map(|n| (n, NamespaceConnection::default())).collect(),
            active_namespace: None,
            connectors: Arc::from([]),
            connector_status: BTreeMap::new(),
            recent_wallets: Arc::from([]),
            loading: false,
            active_features: NamespaceFeatures::default(),
        }
    }
}

impl ConnectionState {
    pub fn namespace(&self, ns: Namespace) -> &NamespaceConnection {
        static DISCONNECTED: std::sync::OnceLock<NamespaceConnection> = std::sync::OnceLock::new();
        self.namespaces.get(&ns).unwrap_or_else(|| DISCONNECTED.get_or_init(NamespaceConnection::default))
    }

    pub fn connector(&self, id: &str) -> Option<&Connector> {
        self.connectors.iter().find(|c| c.id == id)
    }

    pub fn is_connected(&self) -> bool {
        self.namespaces.values().any(|n| n.status == ConnectionStatus::Connected)
    }

    /// Whether the active namespace holds a connected account.
    pub fn active_connected(&self) -> bool {
        self.active_namespace.is_some_and(|ns| self.namespace(ns).status == ConnectionStatus::Connected)
    }

    /// Namespaces whose connection belongs to `connector_id` (connected or connecting).
    /// Whether `connector_id` holds (or is connecting) a namespace: `namespaces_of` is not empty.
    pub fn holds_a_namespace(&self, connector_id: &str) -> bool {
        self.namespaces.values().any(|n| n.status != ConnectionStatus::Disconnected && n.connector_id.as_deref() == Some(connector_id))
    }

    pub fn namespaces_of(&self, connector_id: &str) -> Vec<Namespace> {
        self.namespaces
            .iter()
            .filter(|(_, n)| n.status != ConnectionStatus::Disconnected && n.connector_id.as_deref() == Some(connector_id))
            .map(|(ns, _)| *ns)
            .collect()
    }
}

/// What a wallet answered to a connect or sync request: `{ accounts: [...], chainId }` from an
/// EIP-1193 wallet; `{ accounts: [...], chains: [...] }` from a Wallet Standard (Solana) wallet,
/// whose accounts name the chains they support (`solana:devnet`, ...) rather than one current chain.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WalletAccounts {
    pub accounts: Vec<String>,
    #[serde(default)]
    pub chain_id: Option<String>,
    #[serde(default)]
    pub chains: Vec<String>,
}

/// A wallet's answer, read ([`read_wallet_accounts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletConnection {
    pub accounts: Vec<Account>,
    pub network: NetworkRef,
    /// The session's networks the account can sign on, when the wallet listed its chains.
    pub signable_networks: Option<Vec<CaipNetworkId>>,
}

/// Checks a wallet's answer and resolves its network against the session's networks: a chain the
/// session does not support becomes the synthetic unsupported network. `current`: the network the
/// connection was on before (a sync), which a Solana account that can sign for it keeps: the
/// session moves a Solana connection between clusters itself, so the wallet's list of chains does
/// not say which one the visitor chose.
pub fn read_wallet_accounts(
    namespace: Namespace,
    result: &serde_json::Value,
    networks: &[ChainDefinition],
    current: Option<&CaipNetworkId>,
) -> Result<WalletConnection, String> {
    let answer: WalletAccounts = serde_json::from_value(result.clone()).map_err(|e| format!("the wallet's answer is malformed: {e}"))?;
    if answer.accounts.len() > MAX_WALLET_ACCOUNTS || answer.chains.len() > MAX_WALLET_ACCOUNTS {
        return Err("the wallet returned too many accounts or chains".into());
    }
    // Each account in its one spelling (an EVM address in any case is the same account).
    let accounts = answer
        .accounts
        .iter()
        .map(|a| {
            let address =
                namespace.canonical_address(a).ok_or_else(|| format!("the wallet returned an invalid {namespace} address {a:?}"))?;
            Ok(Account { address, account_type: AccountType::Eoa })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let (network, signable_networks) = match (namespace, &answer.chain_id) {
        (Namespace::Solana, None) => {
            (resolve_solana_network(&answer.chains, networks, current)?, signable_solana_networks(&answer.chains, networks))
        }
        (_, Some(chain_id)) => (resolve_network(namespace, chain_id, networks)?, None),
        (_, None) => return Err("the wallet's answer has no chainId".into()),
    };
    Ok(WalletConnection { accounts, network, signable_networks })
}

/// Whether a Solana account that lists `chains` can sign on `network`: named by its genesis-hash
/// CAIP-2 id or its Wallet Standard name (`solana:devnet`).
fn lists_cluster(chains: &[String], network: &ChainDefinition) -> bool {
    let id = network.caip_network_id.to_string();
    let standard_name = solana_cluster_chain(&network.caip_network_id);
    chains.iter().any(|chain| *chain == id || Some(chain) == standard_name.as_ref())
}

/// The session's Solana networks an account that lists `chains` can sign on; `None` when it lists
/// none (a wallet that does not say: any).
fn signable_solana_networks(chains: &[String], networks: &[ChainDefinition]) -> Option<Vec<CaipNetworkId>> {
    if chains.is_empty() {
        return None;
    }
    let solana = networks.iter().filter(|c| c.namespace() == Namespace::Solana);
    Some(solana.filter(|c| lists_cluster(chains, c)).map(|c| c.caip_network_id.clone()).collect())
}

/// A Solana wallet's account is not "on" a network: it lists the chains it can sign for. The
/// connection takes the session's first Solana network (in the order of its `networks`) that the
/// account supports, named by its genesis-hash CAIP-2 id or its Wallet Standard name
/// (`solana:devnet`); an account that lists no chain takes the session's first Solana network; one
/// that supports none of them is on the synthetic unsupported network. `current`, when the account
/// supports it, is kept ([`read_wallet_accounts`]).
pub fn resolve_solana_network(
    chains: &[String],
    networks: &[ChainDefinition],
    current: Option<&CaipNetworkId>,
) -> Result<NetworkRef, String> {
    let solana: Vec<&ChainDefinition> = networks.iter().filter(|c| c.namespace() == Namespace::Solana).collect();
    let supports = |c: &ChainDefinition| lists_cluster(chains, c);
    let kept = solana.iter().find(|c| Some(&c.caip_network_id) == current && (chains.is_empty() || supports(c)));
    if let Some(chain) = kept.or_else(|| solana.iter().find(|c| chains.is_empty() || supports(c))) {
        return Ok(NetworkRef::of(chain));
    }
    let first = chains.first().ok_or("the session has no Solana network")?;
    let reference = first.strip_prefix("solana:").unwrap_or(first);
    if !crate::model::caip::is_caip2_reference(reference) {
        return Err(format!("invalid Solana chain {first:?}"));
    }
    Ok(NetworkRef::unsupported(CaipNetworkId::new(Namespace::Solana, reference)))
}

pub fn resolve_network(namespace: Namespace, chain_id: &str, networks: &[ChainDefinition]) -> Result<NetworkRef, String> {
    let reference = match namespace {
        Namespace::Eip155 => parse_evm_chain_id(chain_id).ok_or_else(|| format!("invalid chain id {chain_id:?}"))?.to_string(),
        _ => chain_id.to_string(),
    };
    if !crate::model::caip::is_caip2_reference(&reference) {
        return Err(format!("invalid chain id {chain_id:?}"));
    }
    let id = CaipNetworkId::new(namespace, reference);
    Ok(networks.iter().find(|c| c.caip_network_id == id).map(NetworkRef::of).unwrap_or_else(|| NetworkRef::unsupported(id)))
}

/// Builds the connector list from what the browser discovered, honouring the EIP-6963 and injected
/// switches; wallets are de-duplicated by id (the first announcement wins): EIP-6963 wallets by rdns,
/// Wallet Standard (Solana) wallets by name. A wallet of a namespace none of the session's networks
/// is in is left out (it could only connect to an unsupported network).
pub fn connectors_from(
    wallets: &[DiscoveredWallet],
    options: &SessionOptions,
    networks: &[ChainDefinition],
) -> Result<Vec<Connector>, DomainError> {
    if wallets.len() > MAX_CONNECTORS {
        return Err(DomainError::TooMany { what: "wallets".into(), max: MAX_CONNECTORS });
    }
    let mut connectors: Vec<Connector> = Vec::new();
    for (i, wallet) in wallets.iter().enumerate() {
        let field = |name: &str| format!("wallets[{i}].{name}");
        if wallet.name.trim().is_empty() || wallet.name.len() > MAX_WALLET_NAME_BYTES {
            return Err(DomainError::InvalidInput { field: field("name"), message: format!("1 to {MAX_WALLET_NAME_BYTES} characters") });
        }
        // Any page script can announce a wallet, under any name, and the Connect view shows it: a
        // name with characters that reorder or hide text could read as another wallet's
        // ("\u{202E}ksaMateM" as "MetaMask", "Dev\u{200B}Wallet" beside "Dev Wallet"). Such a
        // wallet is left out, not the whole report, so that one hostile announcement does not hide
        // the page's other wallets (the widget leaves them out before reporting, as a courtesy).
        if wallet.name.trim().chars().any(crate::model::display::is_hidden) {
            tracing::debug!(name = wallet.name.escape_debug().to_string(), "a wallet's name has hidden characters; left out");
            continue;
        }
        let namespace = wallet.namespace.unwrap_or(Namespace::Eip155);
        let id = match (namespace, wallet.kind) {
            (Namespace::Eip155, ConnectorType::Announced) => {
                if !options.enable_eip6963 {
                    continue;
                }
                match &wallet.rdns {
                    Some(rdns) if is_reserved_connector_id(rdns) => {
                        tracing::debug!(rdns, "an announced wallet claimed a reserved connector id; left out");
                        continue;
                    }
                    Some(rdns) if !rdns.is_empty() && rdns.len() <= MAX_WALLET_RDNS_BYTES => rdns.clone(),
                    _ => {
                        return Err(DomainError::InvalidInput {
                            field: field("rdns"),
                            message: format!("announced wallets carry an rdns of 1 to {MAX_WALLET_RDNS_BYTES} characters"),
                        });
                    }
                }
            }
            (Namespace::Eip155, ConnectorType::Injected) => {
                if !options.enable_injected {
                    continue;
                }
                INJECTED_CONNECTOR_ID.to_string()
            }
            (Namespace::Solana, ConnectorType::Announced) => {
                if wallet.rdns.is_some() {
                    return Err(DomainError::InvalidInput {
                        field: field("rdns"),
                        message: "Wallet Standard wallets carry no rdns".into(),
                    });
                }
                solana_connector_id(wallet.name.trim())
            }
            (Namespace::Eip155 | Namespace::Solana, other) => {
                return Err(DomainError::InvalidInput {
                    field: field("kind"),
                    message: format!("the browser reports ANNOUNCED or INJECTED wallets, not {other:?}"),
                });
            }
            (other, _) => {
                return Err(DomainError::InvalidInput {
                    field: field("namespace"),
                    message: format!("the browser discovers eip155 and solana wallets, not {other}"),
                });
            }
        };
        if !networks.iter().any(|c| c.namespace() == namespace) {
            continue;
        }
        if connectors.iter().any(|c| c.id == id) {
            continue;
        }
        let icon = wallet.icon.clone().filter(|i| i.len() <= MAX_ICON_BYTES && i.starts_with("data:image/"));
        connectors.push(Connector {
            id,
            name: wallet.name.trim().to_string(),
            kind: wallet.kind,
            rdns: wallet.rdns.clone(),
            icon,
            namespaces: vec![namespace],
        });
    }
    Ok(connectors)
}

fn disconnected() -> NamespaceConnection {
    NamespaceConnection::default()
}

pub fn evolve(mut state: ConnectionState, event: &Event) -> ConnectionState {
    match event {
        Event::ConnectorsUpdated { connectors } => state.connectors = Arc::from(connectors.as_slice()),
        Event::ConnectStarted { namespace, connector_id, request_id } => {
            let ns = state.namespaces.entry(*namespace).or_default();
            *ns = NamespaceConnection {
                status: ConnectionStatus::Connecting,
                connector_id: Some(connector_id.clone()),
                pending_request: Some(request_id.clone()),
                ..disconnected()
            };
        }
        Event::Connected { namespace, connector_id, accounts, network, signable_networks } => {
            let ns = state.namespaces.entry(*namespace).or_default();
            let address = accounts.first().map(|a| a.address.clone());
            *ns = NamespaceConnection {
                status: ConnectionStatus::Connected,
                connector_id: Some(connector_id.clone()),
                caip_address: address.clone().map(|address| CaipAddress { network: network.caip_network_id.clone(), address }),
                address,
                accounts: accounts.clone(),
                network: Some(network.clone()),
                pending_request: None,
                syncing: false,
                last_error: None,
                signable_networks: signable_networks.clone(),
            };
            state.active_namespace = Some(*namespace);
        }
        Event::SyncStarted { namespace, connector_id, request_id } => {
            let ns = state.namespaces.entry(*namespace).or_default();
            ns.status = ConnectionStatus::Connecting;
            ns.connector_id = Some(connector_id.clone());
            ns.pending_request = Some(request_id.clone());
            ns.syncing = true;
        }
        Event::Synced { namespace, accounts, network, signable_networks } => {
            let ns = state.namespaces.entry(*namespace).or_default();
            ns.status = ConnectionStatus::Connected;
            ns.address = accounts.first().map(|a| a.address.clone());
            ns.caip_address = ns.address.clone().map(|address| CaipAddress { network: network.caip_network_id.clone(), address });
            ns.accounts = accounts.clone();
            ns.network = Some(network.clone());
            ns.signable_networks = signable_networks.clone();
            ns.pending_request = None;
            ns.syncing = false;
            if state.active_namespace.is_none() {
                state.active_namespace = Some(*namespace);
            }
        }
        Event::AccountsChanged { namespace, accounts } => {
            let ns = state.namespaces.entry(*namespace).or_default();
            ns.address = accounts.first().map(|a| a.address.clone());
            ns.caip_address = match (&ns.address, &ns.network) {
                (Some(address), Some(network)) => Some(CaipAddress { network: network.caip_network_id.clone(), address: address.clone() }),
                _ => None,
            };
            ns.accounts = accounts.clone();
        }
        Event::NetworkChanged { namespace, network } => {
            let ns = state.namespaces.entry(*namespace).or_default();
            ns.caip_address = ns.address.clone().map(|address| CaipAddress { network: network.caip_network_id.clone(), address });
            ns.network = Some(network.clone());
        }
        Event::ConnectFailed { namespace, .. } | Event::SyncFailed { namespace, .. } | Event::Disconnected { namespace, .. } => {
            let last_error = match event {
                Event::ConnectFailed { message, .. } => Some(message.clone()),
                _ => None,
            };
            state.namespaces.insert(*namespace, NamespaceConnection { last_error, ..disconnected() });
            if state.active_namespace == Some(*namespace) {
                state.active_namespace = state.namespaces.iter().find(|(_, n)| n.status == ConnectionStatus::Connected).map(|(ns, _)| *ns);
            }
        }
        Event::ActiveNamespaceChanged { namespace } => state.active_namespace = Some(*namespace),
        Event::RecentWalletUsed { wallet } => {
            let others = state.recent_wallets.iter().filter(|w| w.id != wallet.id).cloned();
            let recent: Vec<RecentWallet> = std::iter::once(wallet.clone()).chain(others).take(MAX_RECENT_WALLETS).collect();
            // The same wallet again keeps the list (and its pointer): the Connect view stays.
            if *recent != *state.recent_wallets {
                state.recent_wallets = recent.into();
            }
        }
        _ => {}
    }
    state
}

/// Recomputes the derived fields: per-connector status and the loading flag.
pub fn derive(state: &mut ConnectionState) {
    let active_connector = state
        .active_namespace
        .and_then(|ns| state.namespaces.get(&ns))
        .filter(|n| n.status == ConnectionStatus::Connected)
        .and_then(|n| n.connector_id.clone());
    let mut status = BTreeMap::new();
    for connector in state.connectors.iter() {
        status.insert(connector.id.clone(), ConnectorStatus::Disconnected);
    }
    for n in state.namespaces.values() {
        if let (ConnectionStatus::Connected, Some(id)) = (n.status, &n.connector_id) {
            status.insert(id.clone(), ConnectorStatus::Active);
        }
    }
    if let Some(id) = active_connector {
        status.insert(id, ConnectorStatus::Connected);
    }
    state.connector_status = status;
    state.loading = state.namespaces.values().any(|n| n.syncing);
    state.active_features = state.active_namespace.map(Namespace::features).unwrap_or_default();
}

pub fn chart() -> Statechart {
    let regions = Namespace::ALL
        .into_iter()
        .map(|ns| {
            let g = |from: &str, event: &str, to: &str| tg(from, event, to, "/namespace", ns.as_str());
            region(
                ns.as_str(),
                &format!("/connection/namespaces/{}/status", ns.as_str()),
                "disconnected",
                &["disconnected", "connecting", "connected"],
                vec![
                    g("disconnected", "ConnectStarted", "connecting"),
                    g("connecting", "Connected", "connected"),
                    g("connecting", "ConnectFailed", "disconnected"),
                    g("connected", "SyncStarted", "connecting"),
                    g("connecting", "Synced", "connected"),
                    g("connecting", "SyncFailed", "disconnected"),
                    g(ANY_STATE, "Disconnected", "disconnected"),
                ],
            )
        })
        .collect();
    Statechart {
        id: ID.into(),
        description: "Per chain namespace: disconnected, connecting (connect or sync) or connected.".into(),
        regions,
    }
}

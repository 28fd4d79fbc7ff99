//! Connectors: the ways a visitor can connect, as the browser discovered them (EIP-6963 announcements,
//! a legacy injected provider) or as the host app configured them (custom wallets).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::caip::Namespace;

/// Connector types of the spec (section 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ConnectorType {
    MultiChain,
    Announced,
    Injected,
    External,
    WalletConnect,
    Auth,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct Connector {
    /// The EIP-6963 rdns for announced wallets, `injected` for a legacy `window.ethereum`, the wallet
    /// id for custom wallets.
    pub id: String,
    pub name: String,
    pub kind: ConnectorType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub rdns: Option<String>,
    /// A small `data:` image (EIP-6963 icons), dropped when larger than [`MAX_ICON_BYTES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub icon: Option<String>,
    pub namespaces: Vec<Namespace>,
}

pub const MAX_ICON_BYTES: usize = 8 * 1024;
pub const MAX_CONNECTORS: usize = 32;
/// A reported wallet's name, trimmed: 1 to this many bytes of UTF-8.
pub const MAX_WALLET_NAME_BYTES: usize = 64;
/// An announced (EIP-6963) wallet's rdns, its connector id: 1 to this many bytes.
pub const MAX_WALLET_RDNS_BYTES: usize = 128;
/// A wallet's error message (`ResolveWalletRequest`): the session keeps at most this many characters
/// of it (it is never shown; a host whose request it answers is given it). Any page script can be a
/// wallet, and a 70 kB message would otherwise be written to the log as it came.
pub const MAX_WALLET_ERROR_CHARS: usize = 1024;
/// A wallet's answer, as JSON, that the widget sends on: at most this many bytes. A command over
/// the gateway's frame limit (`limits.max_frame_bytes`, 64 KiB by default) closes the socket (1009)
/// and is dropped, and the request it answered would wait for ever; so a larger answer (5,000
/// accounts) is sent as an error instead. 1 KiB below the default limit leaves room for the command
/// around it (its type, id, request id and outcome's fields).
pub const MAX_WALLET_ANSWER_BYTES: usize = 63 * 1024;
/// The legacy `window.ethereum` provider's connector id.
pub const INJECTED_CONNECTOR_ID: &str = "injected";
/// A Wallet Standard (Solana) wallet's connector id is this and its name.
pub const SOLANA_CONNECTOR_PREFIX: &str = "solana:";

/// A wallet the browser discovered, as the client reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DiscoveredWallet {
    pub name: String,
    /// EIP-6963 reverse-DNS identifier; absent for a legacy injected provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub rdns: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub icon: Option<String>,
    /// `ANNOUNCED` (EIP-6963, or a Wallet Standard wallet) or `INJECTED` (legacy `window.ethereum`).
    pub kind: ConnectorType,
    /// The chain namespace the wallet was found for: `eip155` (EIP-6963 and injected, the default)
    /// or `solana` (a Wallet Standard wallet with a `solana:` chain; announced, no rdns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub namespace: Option<Namespace>,
}

/// The connector id of a Wallet Standard wallet: `solana:` and its name (Wallet Standard wallets
/// carry no rdns; the standard's registry keeps one wallet per name in practice).
pub fn solana_connector_id(name: &str) -> String {
    format!("{SOLANA_CONNECTOR_PREFIX}{name}")
}

/// A recently used wallet (spec: id and rdns), newest first; at most [`MAX_RECENT_WALLETS`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct RecentWallet {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub rdns: Option<String>,
    pub name: String,
}

pub const MAX_RECENT_WALLETS: usize = 2;

/// Connector groups of the Connect view, in their default order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum ConnectorGroup {
    WalletConnect,
    Recent,
    Injected,
    Featured,
    Custom,
    External,
    Recommended,
}

impl ConnectorGroup {
    pub const DEFAULT_ORDER: [ConnectorGroup; 7] = [
        ConnectorGroup::WalletConnect,
        ConnectorGroup::Recent,
        ConnectorGroup::Injected,
        ConnectorGroup::Featured,
        ConnectorGroup::Custom,
        ConnectorGroup::External,
        ConnectorGroup::Recommended,
    ];
}

/// Connect methods of the Connect view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum ConnectMethod {
    Email,
    Social,
    Wallet,
}

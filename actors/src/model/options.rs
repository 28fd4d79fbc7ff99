//! The host app's options for a session (spec section 3), validated once when the session starts.
//!
//! Unknown fields are refused with the field's name, so a typo in a host app's configuration is
//! reported instead of silently ignored.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::caip::{CaipNetworkId, Namespace};
use super::connector::{ConnectMethod, ConnectorGroup};
use super::networks::{self, ChainDefinition, DEFAULT_NETWORK};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum ThemeMode {
    Light,
    #[default]
    Dark,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "lowercase")]
pub enum SocialProvider {
    Google,
    X,
    Farcaster,
    Discord,
    Apple,
    Github,
    Facebook,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum AccountType {
    Eoa,
    SmartAccount,
    Payment,
}

impl AccountType {
    /// The spec's default account type per namespace.
    pub fn default_for(namespace: Namespace) -> AccountType {
        match namespace {
            Namespace::Eip155 => AccountType::SmartAccount,
            Namespace::Bip122 => AccountType::Payment,
            Namespace::Polkadot | Namespace::Solana | Namespace::Cosmos => AccountType::Eoa,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum WalletFeature {
    Onramp,
    Swaps,
    Receive,
    Send,
}

/// Feature flags (spec section 3). Email and social login are off by default: they need an
/// embedded-wallet provider that a deployment configures explicitly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Features {
    pub email: bool,
    pub socials: Vec<SocialProvider>,
    pub email_show_wallets: bool,
    pub swaps: bool,
    pub onramp: bool,
    pub activity: bool,
    pub send: bool,
    pub receive: bool,
    pub pay: bool,
    pub analytics: bool,
    pub all_wallets: bool,
    pub legal_checkbox: bool,
    pub smart_sessions: bool,
    pub collapse_wallets: bool,
    /// The spec's feature list names it `reownBranding`; both spellings are taken.
    #[serde(alias = "reownBranding")]
    pub branding: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub connector_type_order: Option<Vec<ConnectorGroup>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub connect_methods_order: Option<Vec<ConnectMethod>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub wallet_features_order: Option<Vec<WalletFeature>>,
}

impl Default for Features {
    fn default() -> Self {
        Self {
            email: false,
            socials: vec![],
            email_show_wallets: true,
            swaps: true,
            onramp: true,
            activity: true,
            send: true,
            receive: true,
            pay: false,
            analytics: false,
            all_wallets: true,
            legal_checkbox: false,
            smart_sessions: false,
            collapse_wallets: false,
            branding: true,
            connector_type_order: None,
            connect_methods_order: None,
            wallet_features_order: None,
        }
    }
}

/// The spec's default socials order.
pub const DEFAULT_SOCIALS: [SocialProvider; 7] = [
    SocialProvider::Google,
    SocialProvider::X,
    SocialProvider::Farcaster,
    SocialProvider::Discord,
    SocialProvider::Apple,
    SocialProvider::Github,
    SocialProvider::Facebook,
];

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct AppMetadata {
    pub name: String,
    pub description: String,
    pub url: String,
    pub icons: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CustomWallet {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub homepage: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub image_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub rdns: Option<String>,
}

/// A network the host app supports: a catalogue id (`"eip155:1"`) or a full definition (for chains
/// the catalogue does not list, such as a local development node).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(untagged)]
pub enum NetworkOption {
    Known(CaipNetworkId),
    Custom(ChainDefinition),
}

/// Sign-in (SIWX) options.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SiwxOptions {
    /// When true, a connected visitor must sign in: closing the sign-in view disconnects.
    pub required: bool,
    /// Statement shown in the message.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub statement: Option<String>,
    /// Sign out (revoke the session) when the wallet disconnects.
    pub sign_out_on_disconnect: bool,
    /// Validity of a sign-in, written as the message's Expiration Time (60 s to 30 days; default
    /// one day).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "number")]
    pub expires_in_seconds: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SessionOptions {
    pub networks: Vec<NetworkOption>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub default_network: Option<CaipNetworkId>,
    pub metadata: AppMetadata,
    pub features: Features,
    pub include_wallet_ids: Vec<String>,
    pub exclude_wallet_ids: Vec<String>,
    pub featured_wallet_ids: Vec<String>,
    pub custom_wallets: Vec<CustomWallet>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub terms_conditions_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub privacy_policy_url: Option<String>,
    pub enable_wallet_connect: bool,
    pub enable_eip6963: bool,
    pub enable_injected: bool,
    pub enable_wallets: bool,
    pub enable_network_switch: bool,
    pub allow_unsupported_chain: bool,
    pub default_account_types: BTreeMap<Namespace, AccountType>,
    pub theme_mode: ThemeMode,
    pub theme_variables: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub siwx: Option<SiwxOptions>,
    /// The older name of `siwx` (same settings); setting both is refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub siwe_config: Option<SiwxOptions>,
    pub debug: bool,
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self {
            networks: vec![],
            default_network: None,
            metadata: AppMetadata::default(),
            features: Features::default(),
            include_wallet_ids: vec![],
            exclude_wallet_ids: vec![],
            featured_wallet_ids: vec![],
            custom_wallets: vec![],
            terms_conditions_url: None,
            privacy_policy_url: None,
            // WalletConnect needs a relay service this deployment does not run; hosts opt in.
            enable_wallet_connect: false,
            enable_eip6963: true,
            enable_injected: true,
            enable_wallets: true,
            enable_network_switch: true,
            allow_unsupported_chain: false,
            default_account_types: BTreeMap::new(),
            theme_mode: ThemeMode::Dark,
            theme_variables: BTreeMap::new(),
            siwx: None,
            siwe_config: None,
            debug: false,
        }
    }
}

/// Theme variables a host may set.
pub const THEME_VARIABLES: &[&str] = &[
    "--vst-accent",
    "--vst-color-mix",
    "--vst-color-mix-strength",
    "--vst-font-family",
    "--vst-font-size-master",
    "--vst-border-radius-master",
    "--vst-z-index",
];

/// A refused option, naming the field (as the host wrote it) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize, TS)]
#[error("option `{field}`: {message}")]
pub struct OptionsError {
    pub field: String,
    pub message: String,
}

const MAX_LIST: usize = 64;
const MAX_TEXT: usize = 512;

/// Refuses a list that names an entry twice (`field[i]` is the second mention).
fn repeats_refused<T: PartialEq + Serialize>(field: &str, list: &[T]) -> Result<(), OptionsError> {
    for (i, entry) in list.iter().enumerate() {
        if list[..i].contains(entry) {
            let name = serde_json::to_value(entry).map(|v| v.to_string()).unwrap_or_default();
            return Err(OptionsError { field: format!("{field}[{i}]"), message: format!("{name} is listed twice") });
        }
    }
    Ok(())
}

impl SessionOptions {
    /// Checks what serde cannot and resolves the networks against the catalogue.
    /// The sign-in settings, under either name.
    pub fn sign_in(&self) -> Option<&SiwxOptions> {
        self.siwx.as_ref().or(self.siwe_config.as_ref())
    }

    pub fn validate(&self) -> Result<Vec<ChainDefinition>, OptionsError> {
        let err = |field: &str, message: String| Err(OptionsError { field: field.into(), message });
        if self.siwx.is_some() && self.siwe_config.is_some() {
            return err("siwx", crate::machines::siwx::BOTH_CONFIGS.into());
        }
        if let Some(siwx) = self.sign_in() {
            if let Some(s) = siwx.expires_in_seconds
                && !(60..=30 * 24 * 3600).contains(&s)
            {
                return err("siwx.expiresInSeconds", format!("{s} is not between 60 and 2592000"));
            }
            if siwx.statement.as_ref().is_some_and(|s| s.contains('\n') || s.len() > MAX_TEXT) {
                return err("siwx.statement", format!("one line of at most {MAX_TEXT} characters"));
            }
        }
        for (field, len) in [
            ("networks", self.networks.len()),
            ("includeWalletIds", self.include_wallet_ids.len()),
            ("excludeWalletIds", self.exclude_wallet_ids.len()),
            ("featuredWalletIds", self.featured_wallet_ids.len()),
            ("customWallets", self.custom_wallets.len()),
            ("themeVariables", self.theme_variables.len()),
            ("metadata.icons", self.metadata.icons.len()),
        ] {
            if len > MAX_LIST {
                return err(field, format!("at most {MAX_LIST} entries, got {len}"));
            }
        }
        // Each group once: the Connect view lists a group's entries wherever the group is named,
        // so a group named 1,000 times in a 50 KB hello made a 100 MB state.
        repeats_refused("features.socials", &self.features.socials)?;
        repeats_refused("features.connectorTypeOrder", self.features.connector_type_order.as_deref().unwrap_or_default())?;
        repeats_refused("features.connectMethodsOrder", self.features.connect_methods_order.as_deref().unwrap_or_default())?;
        repeats_refused("features.walletFeaturesOrder", self.features.wallet_features_order.as_deref().unwrap_or_default())?;
        for (i, wallet) in self.custom_wallets.iter().enumerate() {
            let longest = [Some(&wallet.id), Some(&wallet.name), wallet.homepage.as_ref(), wallet.rdns.as_ref()].into_iter().flatten();
            if longest.into_iter().any(|text| text.len() > MAX_TEXT) {
                return err(&format!("customWallets[{i}]"), format!("id, name, homepage and rdns are at most {MAX_TEXT} characters"));
            }
            if let Some(url) = &wallet.image_url {
                let field = format!("customWallets[{i}].imageUrl");
                if url.len() > crate::model::connector::MAX_ICON_BYTES {
                    return err(&field, format!("at most {} bytes", crate::model::connector::MAX_ICON_BYTES));
                }
                // The Connect view draws it as the wallet's image: an https: image or an inline
                // data:image/ one, nothing else (an http: image is a tracker on the visitor's
                // connection, and a javascript: or other scheme has no business there).
                let image = url.starts_with("https://") || url.starts_with("data:image/");
                if !image || url.chars().any(char::is_control) {
                    return err(&field, "an https: or data:image/ URL".into());
                }
            }
        }
        let texts = self
            .include_wallet_ids
            .iter()
            .chain(&self.exclude_wallet_ids)
            .chain(&self.featured_wallet_ids)
            .chain(&self.metadata.icons)
            .chain([&self.metadata.name, &self.metadata.description, &self.metadata.url])
            .chain(self.theme_variables.values());
        for text in texts {
            if text.len() > MAX_TEXT {
                return err("options", format!("a value is longer than {MAX_TEXT} characters"));
            }
        }
        for (key, value) in &self.theme_variables {
            if !THEME_VARIABLES.contains(&key.as_str()) {
                return err(&format!("themeVariables.{key}"), format!("unknown theme variable; known: {}", THEME_VARIABLES.join(", ")));
            }
            if let Err(expected) = theme_value_checked(key, value) {
                return err(&format!("themeVariables.{key}"), expected.into());
            }
        }
        for (field, url) in [("termsConditionsUrl", &self.terms_conditions_url), ("privacyPolicyUrl", &self.privacy_policy_url)] {
            if let Some(url) = url {
                if !(url.starts_with("https://") || url.starts_with("http://")) || url.len() > MAX_TEXT {
                    return err(field, "must be an http(s) URL".into());
                }
            }
        }
        let mut resolved: Vec<ChainDefinition> = Vec::new();
        for (i, network) in self.networks.iter().enumerate() {
            let chain = match network {
                NetworkOption::Known(id) => match networks::lookup(id) {
                    Some(chain) => chain,
                    None => {
                        return err(&format!("networks[{i}]"), format!("{id} is not a known network; give a full chain definition"));
                    }
                },
                NetworkOption::Custom(chain) => {
                    if chain.name.is_empty() || chain.name.len() > 64 {
                        return err(&format!("networks[{i}].name"), "1 to 64 characters".into());
                    }
                    custom_chain_checked(chain)
                        .map_err(|(field, message)| OptionsError { field: format!("networks[{i}].{field}"), message })?;
                    chain.clone()
                }
            };
            if resolved.iter().any(|c| c.caip_network_id == chain.caip_network_id) {
                return err(&format!("networks[{i}]"), format!("{} is listed twice", chain.caip_network_id));
            }
            resolved.push(chain);
        }
        if resolved.is_empty() {
            let default: CaipNetworkId = DEFAULT_NETWORK.parse().expect("valid default");
            resolved.push(networks::lookup(&default).expect("the default network is in the catalogue"));
        }
        if let Some(default) = &self.default_network {
            if !resolved.iter().any(|c| &c.caip_network_id == default) {
                return err("defaultNetwork", format!("{default} is not one of `networks`"));
            }
        }
        Ok(resolved)
    }
}

/// A theme variable's value, by what the theme does with it (docs/client.md, "Theme contract"):
/// the widget sets it as a custom property (`style.setProperty`), so a free-form value could load
/// an image from anywhere (`url(`), close the declaration, or carry escapes and control characters.
/// Each variable takes only the form it is read in: a colour (`#hex`, a name, or `rgb()`, `hsl()`
/// and the like with numbers inside), a percentage as a number from 0 to 100, a font stack (names,
/// quoted or not, between commas), a length (a number in px, rem, em, pt or %), an integer.
/// Else what was expected.
fn theme_value_checked(name: &str, value: &str) -> Result<(), &'static str> {
    let number = |text: &str| {
        !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit() || b == b'.') && text.parse::<f64>().is_ok_and(f64::is_finite)
    };
    let (ok, expected) = match name {
        "--vst-accent" | "--vst-color-mix" => (
            is_colour(value),
            "a colour: #rgb, #rrggbb (or with alpha), a colour name, or rgb(), hsl(), hwb(), lab(), lch(), oklab() or oklch() with numbers",
        ),
        "--vst-color-mix-strength" => {
            (number(value) && value.parse::<f64>().is_ok_and(|n| (0.0..=100.0).contains(&n)), "a number from 0 to 100")
        }
        "--vst-font-family" => (
            !value.is_empty()
                && value.chars().all(|c| c.is_alphanumeric() || matches!(c, ' ' | ',' | '-' | '_' | '.' | '"' | '\''))
                && value.matches('"').count() % 2 == 0
                && value.matches('\'').count() % 2 == 0,
            "font names between commas (letters, digits, spaces, - _ . and quotes)",
        ),
        "--vst-font-size-master" | "--vst-border-radius-master" => (
            value == "0" || ["px", "rem", "em", "pt", "%"].iter().any(|unit| value.strip_suffix(unit).is_some_and(number)),
            "a length: a number in px, rem, em, pt or %",
        ),
        "--vst-z-index" => {
            (value.strip_prefix('-').unwrap_or(value).bytes().all(|b| b.is_ascii_digit()) && value.parse::<i32>().is_ok(), "an integer")
        }
        // Every name of THEME_VARIABLES is above; a new one must say what it takes.
        _ => (false, "a known theme variable"),
    };
    if ok { Ok(()) } else { Err(expected) }
}

/// `#` and 3, 4, 6 or 8 hex digits; a colour keyword (letters only); or a colour function whose
/// arguments are numbers, units, `none`, commas, slashes and spaces (nothing that opens another
/// function).
fn is_colour(value: &str) -> bool {
    if let Some(hex) = value.strip_prefix('#') {
        return matches!(hex.len(), 3 | 4 | 6 | 8) && hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    if !value.is_empty() && value.len() <= 32 && value.bytes().all(|b| b.is_ascii_alphabetic()) {
        return true;
    }
    const FUNCTIONS: [&str; 9] = ["rgb", "rgba", "hsl", "hsla", "hwb", "lab", "lch", "oklab", "oklch"];
    let Some((function, rest)) = value.split_once('(') else { return false };
    let Some(arguments) = rest.strip_suffix(')') else { return false };
    FUNCTIONS.contains(&function.to_ascii_lowercase().as_str())
        && !arguments.trim().is_empty()
        && arguments.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b',' | b'%' | b'/' | b' ' | b'-' | b'+'))
}

/// A host's own chain definition beyond its name: an EVM chain id in its one spelling (decimal,
/// no leading zero, 1 to 2^53 − 1: EIP-2294's bound, as wallets take it) and endpoints a wallet
/// may be given (`wallet_addEthereumChain`) and a link may open: http(s) URLs (ws(s) too for
/// RPC), never `javascript:` or `data:`.
fn custom_chain_checked(chain: &ChainDefinition) -> Result<(), (&'static str, String)> {
    const MAX_EVM_CHAIN_ID: u64 = (1 << 53) - 1;
    if chain.caip_network_id.namespace == crate::model::caip::Namespace::Eip155 {
        let reference = &chain.caip_network_id.reference;
        let id = reference.parse::<u64>().ok().filter(|id| (1..=MAX_EVM_CHAIN_ID).contains(id) && id.to_string() == *reference);
        if id.is_none() {
            return Err(("caipNetworkId", format!("an EVM chain id is a decimal from 1 to {MAX_EVM_CHAIN_ID} without leading zeros")));
        }
    }
    let url = |schemes: &[&str], text: &str| text.len() <= MAX_TEXT && schemes.iter().any(|scheme| text.starts_with(scheme));
    for (field, urls, schemes) in [
        ("rpcUrls", &chain.rpc_urls, &["https://", "http://", "wss://", "ws://"][..]),
        ("blockExplorers", &chain.block_explorers, &["https://", "http://"][..]),
    ] {
        if urls.len() > MAX_LIST {
            return Err((field, format!("at most {MAX_LIST} entries")));
        }
        if let Some(bad) = urls.iter().find(|u| !url(schemes, u)) {
            let shown: String = bad.chars().take(40).collect();
            return Err((
                field,
                format!("{shown:?} is not an {} URL of at most {MAX_TEXT} characters", schemes.join(" or ").replace("://", "")),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: serde_json::Value) -> Result<SessionOptions, String> {
        serde_json::from_value(json).map_err(|e| e.to_string())
    }

    #[test]
    fn unknown_options_are_refused_by_name() {
        let e = parse(serde_json::json!({ "netwrks": [] })).unwrap_err();
        assert!(e.contains("netwrks"), "{e}");
        let e = parse(serde_json::json!({ "features": { "emial": true } })).unwrap_err();
        assert!(e.contains("emial"), "{e}");
    }

    #[test]
    fn the_spec_s_reown_branding_flag_is_the_branding_flag() {
        let options = parse(serde_json::json!({ "features": { "reownBranding": false } })).unwrap();
        assert!(!options.features.branding);
        assert!(parse(serde_json::json!({ "features": { "branding": false } })).is_ok_and(|o| !o.features.branding));
    }

    #[test]
    fn networks_resolve_known_ids_and_custom_definitions() {
        let options = parse(serde_json::json!({
            "networks": ["eip155:1", {
                "caipNetworkId": "eip155:31337", "name": "Anvil",
                "nativeCurrency": { "name": "Ether", "symbol": "ETH", "decimals": 18 },
                "rpcUrls": ["http://127.0.0.1:8545"]
            }]
        }))
        .unwrap();
        let resolved = options.validate().unwrap();
        assert_eq!(resolved[0].name, "Ethereum");
        assert_eq!(resolved[1].caip_network_id.to_string(), "eip155:31337");
    }

    #[test]
    fn a_custom_chain_has_one_spelling_of_its_evm_id_and_only_http_or_ws_endpoints() {
        let custom = |id: &str, rpc: &str, explorer: &str| {
            parse(serde_json::json!({ "networks": [{
                "caipNetworkId": id, "name": "Mine",
                "nativeCurrency": { "name": "Ether", "symbol": "ETH", "decimals": 18 },
                "rpcUrls": [rpc], "blockExplorers": [explorer]
            }] }))
            .unwrap()
            .validate()
            .map(|_| ())
            .map_err(|e| e.field)
        };
        // The positive probe: a plain definition passes (ws RPC too).
        assert_eq!(custom("eip155:31337", "http://127.0.0.1:8545", "https://scan.example"), Ok(()));
        assert_eq!(custom("eip155:31337", "wss://node.example", "https://scan.example"), Ok(()));
        for id in ["eip155:01", "eip155:0", "eip155:18446744073709551616", "eip155:9007199254740992", "eip155:0x1"] {
            assert_eq!(custom(id, "http://127.0.0.1:8545", "https://scan.example"), Err("networks[0].caipNetworkId".into()), "{id}");
        }
        for rpc in ["javascript:alert(1)", "data:text/html,x", "file:///etc/passwd", ""] {
            assert_eq!(custom("eip155:31337", rpc, "https://scan.example"), Err("networks[0].rpcUrls".into()), "{rpc}");
        }
        for explorer in ["javascript:alert(1)", "wss://scan.example", " https://scan.example"] {
            assert_eq!(custom("eip155:31337", "http://127.0.0.1:8545", explorer), Err("networks[0].blockExplorers".into()), "{explorer}");
        }
    }

    #[test]
    fn no_networks_means_the_default_chain() {
        let resolved = SessionOptions::default().validate().unwrap();
        assert_eq!(resolved.len(), 1);
        assert_eq!(resolved[0].caip_network_id.to_string(), DEFAULT_NETWORK);
    }

    #[test]
    fn refusals_name_the_field() {
        let unknown_network = parse(serde_json::json!({ "networks": ["eip155:424242"] })).unwrap();
        assert_eq!(unknown_network.validate().unwrap_err().field, "networks[0]");
        let bad_default = parse(serde_json::json!({ "networks": ["eip155:1"], "defaultNetwork": "eip155:10" })).unwrap();
        assert_eq!(bad_default.validate().unwrap_err().field, "defaultNetwork");
        let bad_theme = parse(serde_json::json!({ "themeVariables": { "--x": "1" } })).unwrap();
        assert_eq!(bad_theme.validate().unwrap_err().field, "themeVariables.--x");
    }

    #[test]
    fn given_a_group_named_twice_in_an_order_when_validated_then_it_is_refused_and_each_once_passes() {
        let once = parse(serde_json::json!({ "features": { "connectorTypeOrder": ["injected", "walletConnect", "recent"] } })).unwrap();
        assert!(once.validate().is_ok());
        let twice = parse(serde_json::json!({ "features": { "connectorTypeOrder": ["injected", "walletConnect", "injected"] } })).unwrap();
        let e = twice.validate().unwrap_err();
        assert_eq!((e.field.as_str(), e.message.as_str()), ("features.connectorTypeOrder[2]", "\"injected\" is listed twice"));
        let socials = parse(serde_json::json!({ "features": { "socials": ["google", "google"] } })).unwrap();
        assert_eq!(socials.validate().unwrap_err().field, "features.socials[1]");
    }

    #[test]
    fn given_a_custom_wallet_with_an_oversized_field_when_validated_then_it_is_refused_by_index() {
        let wallet = |name: String, image: String| serde_json::json!({ "customWallets": [{ "id": "a", "name": "A" }, { "id": "b", "name": name, "imageUrl": image }] });
        assert!(parse(wallet("B".into(), "data:image/png;base64,AA".into())).unwrap().validate().is_ok());
        assert_eq!(parse(wallet("B".repeat(513), String::new())).unwrap().validate().unwrap_err().field, "customWallets[1]");
        let image = format!("data:image/png;base64,{}", "A".repeat(9000));
        assert_eq!(parse(wallet("B".into(), image)).unwrap().validate().unwrap_err().field, "customWallets[1].imageUrl");
    }

    #[test]
    fn given_a_custom_wallet_image_when_validated_then_only_an_https_or_data_image_url_is_taken() {
        // An outside review: any string was kept (http: trackers, javascript:, other schemes).
        let image = |url: &str| {
            parse(serde_json::json!({ "customWallets": [{ "id": "w", "name": "W", "imageUrl": url }] }))
                .unwrap()
                .validate()
                .map(|_| ())
                .map_err(|e| e.field)
        };
        for url in ["https://wallet.example/logo.png", "data:image/png;base64,iVBORw0KGgo=", "data:image/svg+xml,%3Csvg%2F%3E"] {
            assert_eq!(image(url), Ok(()), "{url}");
        }
        for url in [
            "http://127.0.0.1:9/track.png",
            "javascript:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "ftp://wallet.example/logo.png",
            "//wallet.example/logo.png",
            " https://wallet.example/logo.png",
            "https://wallet.example/\u{0}logo.png",
            "",
        ] {
            assert_eq!(image(url), Err("customWallets[0].imageUrl".into()), "{url:?}");
        }
    }

    #[test]
    fn given_theme_variables_when_validated_then_each_takes_only_the_form_the_theme_reads() {
        // An outside review: values were free-form and set with style.setProperty (url(...) loads
        // an image from anywhere; `;`, braces, escapes and control characters have no place in a
        // colour, a length or a font stack).
        let theme = |name: &str, value: &str| {
            parse(serde_json::json!({ "themeVariables": { name: value } })).unwrap().validate().map(|_| ()).map_err(|e| e.field)
        };
        let taken: [(&str, &[&str]); 7] = [
            (
                "--vst-accent",
                &[
                    "#3b5bdb",
                    "#FFF",
                    "#3b5bdb80",
                    "rebeccapurple",
                    "rgb(1, 2, 3)",
                    "rgb(1 2 3 / 50%)",
                    "hsl(210deg 50% 40%)",
                    "oklch(0.7 0.1 200)",
                ],
            ),
            ("--vst-color-mix", &["#000000", "rgba(255, 0, 0, 0.5)"]),
            ("--vst-color-mix-strength", &["0", "50", "12.5", "100"]),
            (
                "--vst-font-family",
                &[
                    "system-ui, -apple-system, \"Segoe UI\", Roboto, \"Helvetica Neue\", Arial, sans-serif",
                    "Courier New, monospace",
                    "'Noto Sans JP', sans-serif",
                ],
            ),
            ("--vst-font-size-master", &["10px", "0.625rem", "1em", "8pt", "0"]),
            ("--vst-border-radius-master", &["4px", "0", "50%"]),
            ("--vst-z-index", &["999", "2147483647", "-1"]),
        ];
        for (name, values) in taken {
            for value in values {
                assert_eq!(theme(name, value), Ok(()), "{name}: {value}");
            }
        }
        let hostile = [
            "url(https://tracker.example/x.png)",
            "expression(alert(1))",
            "red;background:red",
            "red}body{color:red",
            "\\75rl(x)",
            "<style>",
            "red\u{0}",
            "#fff\n",
        ];
        for name in THEME_VARIABLES {
            for value in hostile {
                assert_eq!(theme(name, value), Err(format!("themeVariables.{name}")), "{name}: {value:?}");
            }
        }
        let refused: [(&str, &[&str]); 6] = [
            ("--vst-accent", &["#12345", "rgb(calc(1) 2 3)", "rgb(1,2,3) url(x)", "var(--x)", ""]),
            ("--vst-color-mix-strength", &["101", "-1", "50%", "1e3", "NaN"]),
            ("--vst-font-family", &["\"Unclosed, serif", "Arial, /* x */ serif", ""]),
            ("--vst-font-size-master", &["10", "10vw", "-2px", "calc(10px)"]),
            ("--vst-border-radius-master", &["4 px", "px"]),
            ("--vst-z-index", &["1.5", "99999999999", "+1", "-"]),
        ];
        for (name, values) in refused {
            for value in values {
                assert_eq!(theme(name, value), Err(format!("themeVariables.{name}")), "{name}: {value:?}");
            }
        }
    }
}

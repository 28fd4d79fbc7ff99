//! The Connect view's content, derived from the options, the discovered connectors and the recent
//! wallets (spec section 2): which connect methods show and in what order, and which connector groups
//! show, in what order, with what entries. Computed here so every client renders the same thing.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::model::caip::Namespace;
use crate::model::connector::{ConnectMethod, Connector, ConnectorGroup, ConnectorType, RecentWallet};
use crate::model::options::SessionOptions;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ConnectorEntry {
    /// The connector to select, when the wallet is present in this browser.
    #[ts(type = "string | null")]
    pub connector_id: Option<String>,
    /// The wallet's id (rdns, custom wallet id or featured id).
    pub wallet_id: String,
    pub name: String,
    #[ts(type = "string | null")]
    pub icon: Option<String>,
    /// Present in this browser, so selecting it connects now.
    pub installed: bool,
    #[ts(type = "string | null")]
    pub homepage: Option<String>,
    /// The chain namespaces the wallet connects (none known for a custom wallet's listing).
    pub namespaces: Vec<Namespace>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ConnectorGroupView {
    pub group: ConnectorGroup,
    pub entries: Vec<ConnectorEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ConnectView {
    pub methods: Vec<ConnectMethod>,
    /// Only groups with entries, in order.
    pub groups: Vec<ConnectorGroupView>,
}

/// WalletConnect's connector id: while it holds a namespace, the WalletConnect group is hidden.
pub const WALLETCONNECT_CONNECTOR_ID: &str = "walletConnect";

fn excluded(options: &SessionOptions, id: &str, rdns: Option<&str>, name: &str) -> bool {
    options.exclude_wallet_ids.iter().any(|x| x == id || Some(x.as_str()) == rdns || x.eq_ignore_ascii_case(name))
}

fn entry_of(connector: &Connector) -> ConnectorEntry {
    ConnectorEntry {
        connector_id: Some(connector.id.clone()),
        wallet_id: connector.rdns.clone().unwrap_or_else(|| connector.id.clone()),
        name: connector.name.clone(),
        icon: connector.icon.clone(),
        installed: true,
        homepage: None,
        namespaces: connector.namespaces.clone(),
    }
}

fn matches(connector: &Connector, wallet_id: &str) -> bool {
    connector.id == wallet_id || connector.rdns.as_deref() == Some(wallet_id)
}

/// Derives the Connect view. `walletconnect_connected` hides the WalletConnect group.
pub fn derive(options: &SessionOptions, connectors: &[Connector], recent: &[RecentWallet], walletconnect_connected: bool) -> ConnectView {
    let visible: Vec<&Connector> = if options.enable_wallets {
        connectors.iter().filter(|c| !excluded(options, &c.id, c.rdns.as_deref(), &c.name)).collect()
    } else {
        vec![]
    };
    let featured_ids = &options.featured_wallet_ids;

    let recent_entries: Vec<ConnectorEntry> =
        recent.iter().filter_map(|w| visible.iter().find(|c| c.id == w.id)).map(|c| entry_of(c)).collect();
    let featured: Vec<ConnectorEntry> = featured_ids
        .iter()
        .filter_map(|id| {
            if let Some(c) = visible.iter().find(|c| matches(c, id)) {
                return Some(entry_of(c));
            }
            options.custom_wallets.iter().find(|w| &w.id == id).filter(|w| !excluded(options, &w.id, w.rdns.as_deref(), &w.name)).map(|w| {
                ConnectorEntry {
                    connector_id: None,
                    wallet_id: w.id.clone(),
                    name: w.name.clone(),
                    icon: w.image_url.clone(),
                    installed: false,
                    homepage: w.homepage.clone(),
                    namespaces: vec![],
                }
            })
        })
        .collect();
    let shown_elsewhere = |c: &Connector| recent_entries.iter().chain(&featured).any(|e| e.connector_id.as_deref() == Some(c.id.as_str()));
    let injected: Vec<ConnectorEntry> = visible
        .iter()
        .filter(|c| matches!(c.kind, ConnectorType::Announced | ConnectorType::Injected | ConnectorType::MultiChain))
        .filter(|c| !shown_elsewhere(c))
        .map(|c| entry_of(c))
        .collect();
    let custom: Vec<ConnectorEntry> = if options.enable_wallets {
        options
            .custom_wallets
            .iter()
            .filter(|w| !featured_ids.contains(&w.id) && !excluded(options, &w.id, w.rdns.as_deref(), &w.name))
            .map(|w| ConnectorEntry {
                connector_id: None,
                wallet_id: w.id.clone(),
                name: w.name.clone(),
                icon: w.image_url.clone(),
                installed: false,
                homepage: w.homepage.clone(),
                namespaces: vec![],
            })
            .collect()
    } else {
        vec![]
    };
    let external: Vec<ConnectorEntry> = visible.iter().filter(|c| c.kind == ConnectorType::External).map(|c| entry_of(c)).collect();
    // Shown only with a WalletConnect connector to answer it: this deployment runs no relay, so
    // none is ever registered, and `enableWalletConnect` alone would draw a button whose connect
    // is refused (docs/spec-coverage.md).
    let wallet_connect: Vec<ConnectorEntry> = if options.enable_wallet_connect && !walletconnect_connected {
        visible.iter().filter(|c| c.kind == ConnectorType::WalletConnect).map(|c| entry_of(c)).collect()
    } else {
        vec![]
    };

    let order = options.features.connector_type_order.clone().unwrap_or_else(|| ConnectorGroup::DEFAULT_ORDER.to_vec());
    let groups: Vec<ConnectorGroupView> = order
        .into_iter()
        .filter_map(|group| {
            let entries = match group {
                ConnectorGroup::WalletConnect => wallet_connect.clone(),
                ConnectorGroup::Recent => recent_entries.clone(),
                ConnectorGroup::Injected => injected.clone(),
                ConnectorGroup::Featured => featured.clone(),
                ConnectorGroup::Custom => custom.clone(),
                ConnectorGroup::External => external.clone(),
                // Recommendations come from a wallet directory this deployment does not query.
                ConnectorGroup::Recommended => vec![],
            };
            (!entries.is_empty()).then_some(ConnectorGroupView { group, entries })
        })
        .collect();

    let enabled = |m: &ConnectMethod| match m {
        ConnectMethod::Email => options.features.email,
        ConnectMethod::Social => !options.features.socials.is_empty(),
        ConnectMethod::Wallet => options.enable_wallets,
    };
    let wallet_shown = groups.iter().flat_map(|g| &g.entries).any(|e| {
        e.connector_id
            .as_ref()
            .and_then(|id| connectors.iter().find(|c| &c.id == id))
            .is_some_and(|c| matches!(c.kind, ConnectorType::Announced | ConnectorType::Injected))
    });
    let methods = match &options.features.connect_methods_order {
        Some(order) => order.clone(),
        None if wallet_shown => vec![ConnectMethod::Wallet, ConnectMethod::Email, ConnectMethod::Social],
        None => vec![ConnectMethod::Email, ConnectMethod::Social, ConnectMethod::Wallet],
    };
    let mut seen = Vec::new();
    let methods = methods
        .into_iter()
        .filter(|m| {
            enabled(m) && !seen.contains(m) && {
                seen.push(*m);
                true
            }
        })
        .collect();
    ConnectView { methods, groups }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::options::{CustomWallet, SocialProvider};

    fn announced(rdns: &str, name: &str) -> Connector {
        Connector {
            id: rdns.into(),
            name: name.into(),
            kind: ConnectorType::Announced,
            rdns: Some(rdns.into()),
            icon: None,
            namespaces: vec![Namespace::Eip155],
        }
    }

    fn with_email_and_socials() -> SessionOptions {
        let mut o = SessionOptions::default();
        o.features.email = true;
        o.features.socials = vec![SocialProvider::Google];
        o
    }

    fn group_names(view: &ConnectView) -> Vec<ConnectorGroup> {
        view.groups.iter().map(|g| g.group).collect()
    }

    #[test]
    fn given_no_wallet_when_deriving_then_methods_are_email_social_wallet() {
        let o = with_email_and_socials();
        let mut o2 = o.clone();
        o2.custom_wallets = vec![CustomWallet { id: "w".into(), name: "W".into(), homepage: None, image_url: None, rdns: None }];
        let view = derive(&o2, &[], &[], false);
        assert_eq!(view.methods, vec![ConnectMethod::Email, ConnectMethod::Social, ConnectMethod::Wallet]);
    }

    #[test]
    fn given_an_announced_wallet_when_deriving_then_wallet_comes_first() {
        let view = derive(&with_email_and_socials(), &[announced("io.example", "Example")], &[], false);
        assert_eq!(view.methods, vec![ConnectMethod::Wallet, ConnectMethod::Email, ConnectMethod::Social]);
    }

    #[test]
    fn disabled_methods_are_left_out() {
        let view = derive(&SessionOptions::default(), &[], &[], false);
        assert_eq!(view.methods, vec![ConnectMethod::Wallet]);
    }

    fn wallet_connect() -> Connector {
        Connector {
            id: WALLETCONNECT_CONNECTOR_ID.into(),
            name: "WalletConnect".into(),
            kind: ConnectorType::WalletConnect,
            rdns: None,
            icon: None,
            namespaces: vec![Namespace::Eip155],
        }
    }

    #[test]
    fn groups_follow_the_default_order_and_only_non_empty_ones_show() {
        let mut o = SessionOptions::default();
        o.enable_wallet_connect = true;
        o.custom_wallets = vec![CustomWallet { id: "c".into(), name: "Custom".into(), homepage: None, image_url: None, rdns: None }];
        let connectors = [wallet_connect(), announced("io.a", "A"), announced("io.b", "B")];
        let recent = [RecentWallet { id: "io.b".into(), rdns: Some("io.b".into()), name: "B".into() }];
        let view = derive(&o, &connectors, &recent, false);
        assert_eq!(
            group_names(&view),
            vec![ConnectorGroup::WalletConnect, ConnectorGroup::Recent, ConnectorGroup::Injected, ConnectorGroup::Custom]
        );
        // A recent wallet is not repeated among the injected ones.
        assert_eq!(view.groups[2].entries.len(), 1);
        assert_eq!(view.groups[2].entries[0].name, "A");
    }

    #[test]
    fn walletconnect_hides_when_already_connected_through_it() {
        let mut o = SessionOptions::default();
        o.enable_wallet_connect = true;
        assert_eq!(group_names(&derive(&o, &[wallet_connect()], &[], false)), vec![ConnectorGroup::WalletConnect]);
        assert!(group_names(&derive(&o, &[wallet_connect()], &[], true)).is_empty());
    }

    #[test]
    fn given_enable_wallet_connect_without_a_walletconnect_connector_then_no_button_that_cannot_connect() {
        let mut o = SessionOptions::default();
        o.enable_wallet_connect = true;
        let view = derive(&o, &[announced("io.a", "A")], &[], false);
        assert_eq!(group_names(&view), vec![ConnectorGroup::Injected]);
    }

    #[test]
    fn excluded_wallets_are_hidden_by_rdns_or_name_and_featured_ones_move_to_featured() {
        let mut o = SessionOptions::default();
        o.exclude_wallet_ids = vec!["io.a".into(), "bee".into()];
        o.featured_wallet_ids = vec!["io.c".into()];
        let connectors = [announced("io.a", "A"), announced("io.b", "Bee"), announced("io.c", "C"), announced("io.d", "D")];
        let view = derive(&o, &connectors, &[], false);
        assert_eq!(group_names(&view), vec![ConnectorGroup::Injected, ConnectorGroup::Featured]);
        assert_eq!(view.groups[0].entries.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), vec!["D"]);
        assert_eq!(view.groups[1].entries[0].name, "C");
    }

    #[test]
    fn a_custom_group_order_is_honoured() {
        let mut o = SessionOptions::default();
        o.features.connector_type_order = Some(vec![ConnectorGroup::Custom, ConnectorGroup::Injected]);
        o.custom_wallets = vec![CustomWallet { id: "c".into(), name: "Custom".into(), homepage: None, image_url: None, rdns: None }];
        let view = derive(&o, &[announced("io.a", "A")], &[], false);
        assert_eq!(group_names(&view), vec![ConnectorGroup::Custom, ConnectorGroup::Injected]);
    }
}

//! Wallets: the ones the page discovered, connecting one, the wallet's answers to the session's
//! requests and its own events (accounts, chain, disconnect), and disconnecting.

use super::{CONNECTION_REJECTED, Decision, FAILED_TO_CONNECT, UNKNOWN_ERROR, sign_in};
use crate::machines::connection::{self, ConnectionStatus, WalletConnection};
use crate::machines::requests::{RequestKind, WalletOutcome};
use crate::machines::router::{NavigationMode, RouteParams, View};
use crate::machines::toasts::ToastVariant;
use crate::model::caip::Namespace;
use crate::model::connector::{DiscoveredWallet, MAX_WALLET_ERROR_CHARS, RecentWallet};
use crate::session::{DomainError, Event};

/// The page's discovered wallets (EIP-6963 and the like), as connectors in the spec's order.
pub(super) fn report(d: &mut Decision, wallets: &[DiscoveredWallet]) -> Result<(), DomainError> {
    let connectors = connection::connectors_from(wallets, &d.state.options, &d.state.networks)?;
    let connectors = super::embedded::keep_auth_connector(d, connectors);
    if *connectors != *d.state.connection.connectors {
        d.push(Event::ConnectorsUpdated { connectors });
    }
    Ok(())
}

pub(super) fn select_connector(d: &mut Decision, connector_id: &str) -> Result<(), DomainError> {
    let connector =
        d.state.connection.connector(connector_id).cloned().ok_or_else(|| DomainError::UnknownConnector(connector_id.to_string()))?;
    let namespace = connector.namespaces.first().copied().unwrap_or(Namespace::Eip155);
    match d.state.connection.namespace(namespace).status {
        ConnectionStatus::Connected => return Err(DomainError::AlreadyConnected(namespace)),
        ConnectionStatus::Connecting => d.abandon_pending(namespace, "Connection cancelled"),
        ConnectionStatus::Disconnected => {}
    }
    let request_id = d.issue_request(connector_id, namespace, RequestKind::Connect)?;
    d.push(Event::ConnectStarted { namespace, connector_id: connector_id.to_string(), request_id });
    d.open_modal();
    let params = RouteParams { connector_id: Some(connector_id.to_string()), ..Default::default() };
    d.navigate(View::ConnectingWallet, Some(params), NavigationMode::Push);
    Ok(())
}

/// `Disconnect`: one namespace, or every connected one; the modal closes on Connect.
pub(super) fn disconnect_requested(d: &mut Decision, namespace: Option<Namespace>) -> Result<(), DomainError> {
    let targets: Vec<Namespace> = match namespace {
        Some(ns) if d.state.connection.namespace(ns).status != ConnectionStatus::Disconnected => vec![ns],
        Some(_) => return Err(DomainError::NotConnected),
        None => {
            Namespace::ALL.into_iter().filter(|ns| d.state.connection.namespace(*ns).status != ConnectionStatus::Disconnected).collect()
        }
    };
    if targets.is_empty() {
        return Err(DomainError::NotConnected);
    }
    for ns in targets {
        disconnect(d, ns, "user");
    }
    d.close_modal();
    d.navigate(View::Connect, None, NavigationMode::Reset);
    Ok(())
}

/// A browser wallet's event names the connector it is about; the embedded wallet's (`auth`) has
/// no browser provider: its account changes come from the embedded service only.
fn from_browser_wallet(connector_id: &str) -> Result<(), DomainError> {
    if connector_id == crate::machines::embedded_wallet::AUTH_CONNECTOR_ID {
        return Err(DomainError::InvalidInput {
            field: "connectorId".into(),
            message: "the embedded wallet has no browser provider".into(),
        });
    }
    Ok(())
}

/// The wallet's `accountsChanged`: no account left disconnects; new accounts may need a new sign-in.
pub(super) fn accounts_changed(d: &mut Decision, connector_id: &str, accounts: &[String]) -> Result<(), DomainError> {
    from_browser_wallet(connector_id)?;
    if accounts.len() > connection::MAX_WALLET_ACCOUNTS {
        return Err(DomainError::TooMany { what: "accounts".into(), max: connection::MAX_WALLET_ACCOUNTS });
    }
    for ns in d.state.connection.namespaces_of(connector_id) {
        if d.state.connection.namespace(ns).status != ConnectionStatus::Connected {
            continue;
        }
        if accounts.is_empty() {
            disconnect(d, ns, "wallet");
            if d.state.router.current() == View::Account {
                d.navigate(View::Connect, None, NavigationMode::Reset);
            }
            continue;
        }
        // Each account in its one spelling (an EVM address in any case is the same account).
        let accounts: Vec<connection::Account> = accounts
            .iter()
            .map(|a| {
                let address = ns.canonical_address(a).ok_or_else(|| DomainError::InvalidInput {
                    field: "accounts".into(),
                    message: format!("{a:?} is not a {ns} address"),
                })?;
                Ok(connection::Account { address, account_type: crate::model::options::AccountType::Eoa })
            })
            .collect::<Result<_, DomainError>>()?;
        if accounts != d.state.connection.namespace(ns).accounts {
            d.push(Event::AccountsChanged { namespace: ns, accounts });
            sign_in::request_if_needed(d);
        }
    }
    Ok(())
}

/// The wallet's `chainChanged`: the network must be one of the session's.
pub(super) fn chain_changed(d: &mut Decision, connector_id: &str, chain_id: &str) -> Result<(), DomainError> {
    from_browser_wallet(connector_id)?;
    for ns in d.state.connection.namespaces_of(connector_id) {
        if d.state.connection.namespace(ns).status != ConnectionStatus::Connected {
            continue;
        }
        let network = connection::resolve_network(ns, chain_id, &d.state.networks)
            .map_err(|message| DomainError::InvalidInput { field: "chainId".into(), message })?;
        if Some(&network) != d.state.connection.namespace(ns).network.as_ref() {
            d.push(Event::NetworkChanged { namespace: ns, network });
            sign_in::request_if_needed(d);
        }
    }
    Ok(())
}

/// The wallet's own `disconnect` event.
pub(super) fn wallet_disconnected(d: &mut Decision, connector_id: &str) -> Result<(), DomainError> {
    from_browser_wallet(connector_id)?;
    for ns in d.state.connection.namespaces_of(connector_id) {
        disconnect(d, ns, "wallet");
    }
    Ok(())
}

/// Spec: disconnecting resets account and network state and the status becomes disconnected.
pub(super) fn disconnect(d: &mut Decision, namespace: Namespace, reason: &str) {
    let conn = d.state.connection.namespace(namespace).clone();
    if conn.status == ConnectionStatus::Disconnected {
        return;
    }
    if let Some(request_id) = conn.pending_request {
        if d.state.requests.get(&request_id).is_some() {
            d.end_request(Event::WalletRequestCancelled { id: request_id, reason: "disconnected".into() });
        }
    }
    sign_in::abandon_challenge_of(d, namespace);
    d.push(Event::Disconnected { namespace, reason: reason.into() });
    sign_in::sign_out_on_disconnect(d, namespace);
    super::embedded::after_disconnect(d);
}

/// What the visitor is shown when a wallet fails a request, other than by their own refusal: the
/// spec's default for an error (§8, "Unknown error"), never the wallet's own words. Any page script
/// can be a wallet and write anything there: text that reads other than it is stored (bidi
/// overrides: "Approve \u{202E}cod.evil//:sptth\u{202C}" reads "Approve https://live.doc"), or a
/// phishing line ("Recover them now at https://... (enter your seed phrase)") in the widget's own
/// error toast. The wallet's message stays in the request's recorded outcome (and goes to a host
/// whose request it answers), not on screen.
pub(super) fn wallet_error_message(_outcome: &WalletOutcome) -> String {
    UNKNOWN_ERROR.into()
}

pub(super) fn resolve_request(d: &mut Decision, request_id: &str, outcome: WalletOutcome) -> Result<(), DomainError> {
    let request = d.state.requests.get(request_id).cloned().ok_or_else(|| DomainError::UnknownRequest(request_id.to_string()))?;
    // The wallet's message is recorded, not shown: at most MAX_WALLET_ERROR_CHARS of it (a hostile
    // wallet's 60 kB message would otherwise go to the log, and to a host, as it came).
    let outcome = match outcome {
        WalletOutcome::Error { code, message } if message.chars().nth(MAX_WALLET_ERROR_CHARS).is_some() => {
            WalletOutcome::Error { code, message: message.chars().take(MAX_WALLET_ERROR_CHARS).collect() }
        }
        outcome => outcome,
    };
    d.end_request(Event::WalletRequestSettled { id: request.id.clone(), outcome: outcome.clone() });
    let ns = request.namespace;
    let conn = d.state.connection.namespace(ns).clone();
    let waiting = conn.status == ConnectionStatus::Connecting && conn.pending_request.as_deref() == Some(request_id);
    match request.kind {
        RequestKind::Connect if waiting => {
            let code = match &outcome {
                WalletOutcome::Error { code, .. } => Some(*code),
                WalletOutcome::Ok { .. } => None,
            };
            let answer = match &outcome {
                WalletOutcome::Ok { result } => connection::read_wallet_accounts(ns, result, &d.state.networks, None)
                    .and_then(|read| if read.accounts.is_empty() { Err("the wallet returned no account".into()) } else { Ok(read) })
                    .map_err(|_| FAILED_TO_CONNECT.to_string()),
                // Spec §8's phrases, not the wallet's words (see `wallet_error_message`).
                e if e.is_user_rejection() => Err(CONNECTION_REJECTED.to_string()),
                _ => Err(FAILED_TO_CONNECT.to_string()),
            };
            match answer {
                Ok(WalletConnection { accounts, network, signable_networks }) => {
                    let connector = d.state.connection.connector(&request.connector_id).cloned();
                    let connector_id = request.connector_id.clone();
                    d.push(Event::Connected { namespace: ns, connector_id, accounts, network, signable_networks });
                    d.push(Event::RecentWalletUsed {
                        wallet: RecentWallet {
                            id: request.connector_id.clone(),
                            rdns: connector.as_ref().and_then(|c| c.rdns.clone()),
                            name: connector.map(|c| c.name).unwrap_or_else(|| request.connector_id.clone()),
                        },
                    });
                    // Spec: connecting with no sign-in session opens SIWXSignMessage.
                    if !sign_in::request_if_needed(d) {
                        d.close_modal();
                        d.navigate(View::Account, None, NavigationMode::Reset);
                    }
                }
                Err(message) => {
                    d.push(Event::ConnectFailed {
                        namespace: ns,
                        connector_id: request.connector_id.clone(),
                        code,
                        message: message.clone(),
                    });
                    d.toast(&message, ToastVariant::Error);
                    d.navigate(View::Connect, None, NavigationMode::Reset);
                }
            }
        }
        RequestKind::Sync if waiting => {
            let synced = match &outcome {
                WalletOutcome::Ok { result } => {
                    let current = d.state.connection.namespace(ns).network.as_ref().map(|n| &n.caip_network_id);
                    connection::read_wallet_accounts(ns, result, &d.state.networks, current).and_then(|read| {
                        if read.accounts.is_empty() { Err("the wallet no longer grants an account".into()) } else { Ok(read) }
                    })
                }
                e => Err(wallet_error_message(e)),
            };
            match synced {
                Ok(WalletConnection { accounts, network, signable_networks }) => {
                    d.push(Event::Synced { namespace: ns, accounts, network, signable_networks })
                }
                Err(message) => d.push(Event::SyncFailed { namespace: ns, message }),
            }
        }
        RequestKind::SignMessage { .. } => sign_in::signature_received(d, &request, outcome),
        RequestKind::SignTransaction { .. } if super::send::owns(d, &request) => super::send::solana_signed(d, outcome),
        RequestKind::Rpc { .. } if super::host::owns(d, &request.id) => super::host::answered(d, &request.id, outcome),
        RequestKind::Rpc { .. } if super::send::owns(d, &request) => super::send::answered(d, outcome),
        RequestKind::Rpc { .. } if super::network::owns(d, &request) => super::network::answered(d, &request, outcome),
        // A late answer to a request the session stopped waiting for, or an RPC result: recorded.
        _ => {}
    }
    Ok(())
}

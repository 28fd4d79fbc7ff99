//! The runtime's EIP-1271 effect: asks the contract account, over its chain's JSON-RPC endpoints,
//! whether it accepts a sign-in signature.
//!
//! Which endpoints (decision 0913): a chain configured under `[networks]` is asked through the
//! chain service (the network's endpoints in order, with its RPC policy: retries, fallback,
//! timeouts); `[siwx] rpc_urls` serves only the chains `[networks]` does not have. When both name a
//! chain and the `[siwx]` URL is not one of the network's, the network's endpoints are used and a
//! warning is logged at startup.

use std::collections::BTreeMap;
use std::time::Duration;

use alloy::primitives::Address;
use vestibule_actors::machines::siwx::ContractCheck;
use vestibule_actors::runtime::effects::{CheckFuture, ContractSignatureChecker};
use vestibule_actors::siwx::verify::{decode_signature, eip191_hash};

use alloy::transports::http::reqwest::Url;
use vestibule_chain::ChainService;

use super::Eip1271Checker;
use crate::config::SiwxSettings;

pub struct RpcContractChecker {
    by_chain: BTreeMap<String, Eip1271Checker>,
    timeout: Duration,
}

/// Where a chain's contract checks go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckEndpoint {
    /// The chain service's network of that id.
    Network,
    /// The `[siwx] rpc_urls` entry.
    Siwx(String),
}

/// The endpoints of contract checks by chain, and the chains whose `[siwx] rpc_urls` entry is
/// ignored because `[networks]` has the chain without that URL.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CheckPlan {
    pub endpoints: BTreeMap<String, CheckEndpoint>,
    pub ignored_siwx: Vec<String>,
}

/// The precedence: `[networks]` (eip155 ones, by CAIP-2 id with their endpoints), then
/// `[siwx] rpc_urls` for the chains it lacks.
pub fn check_plan(networks: &BTreeMap<String, Vec<Url>>, siwx_urls: &BTreeMap<String, String>) -> CheckPlan {
    let mut plan = CheckPlan::default();
    for chain in networks.keys().filter(|c| c.starts_with("eip155:")) {
        plan.endpoints.insert(chain.clone(), CheckEndpoint::Network);
    }
    for (chain, url) in siwx_urls {
        match networks.get(chain) {
            Some(urls) => {
                let listed = Url::parse(url).is_ok_and(|url| urls.contains(&url));
                if !listed {
                    plan.ignored_siwx.push(chain.clone());
                }
            }
            None => {
                plan.endpoints.insert(chain.clone(), CheckEndpoint::Siwx(url.clone()));
            }
        }
    }
    plan
}

impl RpcContractChecker {
    /// Contract checks over `chain`'s eip155 networks, and over `[siwx] rpc_urls` for other
    /// chains (see the module's documentation). Logs the plan, and a warning per ignored entry.
    pub fn new(settings: &SiwxSettings, chain: &ChainService) -> anyhow::Result<Self> {
        let networks: BTreeMap<String, Vec<Url>> =
            chain.networks().into_iter().filter_map(|n| Some((n.to_string(), chain.settings(n)?.rpc_urls.clone()))).collect();
        let plan = check_plan(&networks, &settings.rpc_urls);
        for ignored in &plan.ignored_siwx {
            // URLs may hold API keys: only scheme, host and port are logged.
            let redact = |u: &str| Url::parse(u).map_or_else(|_| "?".to_string(), |u| vestibule_chain::rpc::http::redact(&u));
            tracing::warn!(
                chain = %ignored,
                siwx = %redact(&settings.rpc_urls[ignored]),
                networks = ?networks[ignored].iter().map(vestibule_chain::rpc::http::redact).collect::<Vec<_>>(),
                "[siwx] rpc_urls and [networks] name this chain with different endpoints: sign-in contract checks use the network's"
            );
        }
        let mut by_chain = BTreeMap::new();
        for (id, endpoint) in &plan.endpoints {
            let checker = match endpoint {
                CheckEndpoint::Network => {
                    let network = id.parse().map_err(|e| anyhow::anyhow!("networks.{id}: {e}"))?;
                    Eip1271Checker::over_client(chain.client(network)?, format!("network {id}"))
                }
                CheckEndpoint::Siwx(url) => Eip1271Checker::new(url).map_err(|e| anyhow::anyhow!("siwx.rpc_urls.{id}: {e}"))?,
            };
            by_chain.insert(id.clone(), checker);
        }
        tracing::info!(
            chains = ?by_chain.iter().map(|(id, c)| format!("{id} via {}", c.endpoint())).collect::<Vec<_>>(),
            "sign-in contract (EIP-1271) checks"
        );
        Ok(Self { by_chain, timeout: settings.check_timeout })
    }

    /// The chains contract checks can be made on.
    pub fn chains(&self) -> Vec<String> {
        self.by_chain.keys().cloned().collect()
    }
}

impl ContractSignatureChecker for RpcContractChecker {
    fn check(&self, check: ContractCheck) -> CheckFuture {
        let checker = self.by_chain.get(&check.chain).cloned();
        let timeout = self.timeout;
        Box::pin(async move {
            let checker = checker.ok_or_else(|| format!("no RPC endpoint is configured for {}", check.chain))?;
            let address: Address = check.address.parse().map_err(|e| format!("address: {e}"))?;
            let signature =
                decode_signature(&check.signature, vestibule_actors::siwx::Namespace::Eip155).ok_or("the signature is not hex")?;
            let hash = eip191_hash(check.message.as_bytes());
            match tokio::time::timeout(timeout, checker.contract_accepts(address, hash, &signature)).await {
                Ok(Ok(true)) => Ok(()),
                Ok(Ok(false)) => Err("no contract at the address accepts the signature".into()),
                Ok(Err(e)) => Err(format!("the chain could not be asked: {e}")),
                Err(_) => Err(format!("the chain did not answer within {timeout:?}")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(list: &[&str]) -> Vec<Url> {
        list.iter().map(|u| Url::parse(u).unwrap()).collect()
    }

    #[test]
    fn networks_come_first_and_siwx_fills_the_other_chains() {
        let networks: BTreeMap<String, Vec<Url>> = [
            ("eip155:1".to_string(), urls(&["https://a.example/key", "https://b.example"])),
            ("eip155:10".to_string(), urls(&["https://op.example"])),
            ("solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1".to_string(), urls(&["http://127.0.0.1:8899"])),
        ]
        .into();
        let siwx: BTreeMap<String, String> = [
            ("eip155:1".to_string(), "https://b.example/".to_string()),
            ("eip155:10".to_string(), "https://elsewhere.example".to_string()),
            ("eip155:8453".to_string(), "https://base.example".to_string()),
        ]
        .into();
        let plan = check_plan(&networks, &siwx);
        assert_eq!(
            plan.endpoints,
            [
                ("eip155:1".to_string(), CheckEndpoint::Network),
                ("eip155:10".to_string(), CheckEndpoint::Network),
                ("eip155:8453".to_string(), CheckEndpoint::Siwx("https://base.example".into())),
            ]
            .into()
        );
        assert_eq!(plan.ignored_siwx, ["eip155:10"], "a URL the network lists is no conflict; another one is");
        assert_eq!(check_plan(&BTreeMap::new(), &siwx).endpoints.len(), 3, "without [networks], [siwx] alone");
    }
}

//! The runtime's EIP-1271 effect: asks the contract account, over the JSON-RPC endpoint the server
//! configuration names for its chain, whether it accepts a sign-in signature.

use std::collections::BTreeMap;
use std::time::Duration;

use alloy::primitives::Address;
use vestibule_actors::machines::siwx::ContractCheck;
use vestibule_actors::runtime::effects::{CheckFuture, ContractSignatureChecker};
use vestibule_actors::siwx::verify::{decode_signature, eip191_hash};

use super::Eip1271Checker;
use crate::config::SiwxSettings;

pub struct RpcContractChecker {
    by_chain: BTreeMap<String, Eip1271Checker>,
    timeout: Duration,
}

impl RpcContractChecker {
    pub fn from_settings(settings: &SiwxSettings) -> anyhow::Result<Self> {
        let mut by_chain = BTreeMap::new();
        for (chain, url) in &settings.rpc_urls {
            let checker = Eip1271Checker::new(url).map_err(|e| anyhow::anyhow!("siwx.rpc_urls.{chain}: {e}"))?;
            by_chain.insert(chain.clone(), checker);
        }
        Ok(Self { by_chain, timeout: settings.check_timeout })
    }
}

impl ContractSignatureChecker for RpcContractChecker {
    fn check(&self, check: ContractCheck) -> CheckFuture {
        let checker = self.by_chain.get(&check.chain).cloned();
        let timeout = self.timeout;
        Box::pin(async move {
            let checker = checker.ok_or_else(|| format!("no RPC endpoint is configured for {}", check.chain))?;
            let address: Address = check.address.parse().map_err(|e| format!("address: {e}"))?;
            let signature = decode_signature(&check.signature, vestibule_actors::siwx::Namespace::Eip155)
                .ok_or("the signature is not hex")?;
            let hash = eip191_hash(check.message.as_bytes());
            match tokio::time::timeout(timeout, checker.is_valid_signature(address, hash, &signature)).await {
                Ok(Ok(true)) => Ok(()),
                Ok(Ok(false)) => Err("the contract refused the signature".into()),
                Ok(Err(e)) => Err(format!("the chain could not be asked: {e}")),
                Err(_) => Err(format!("the chain did not answer within {timeout:?}")),
            }
        })
    }
}

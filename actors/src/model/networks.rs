//! Chain definitions: the catalogue of networks the spec lists, plus networks a host app defines itself.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::caip::{CaipNetworkId, Namespace};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NativeCurrency {
    pub name: String,
    pub symbol: String,
    pub decimals: u8,
}

/// A chain definition (spec section 3). `rpc_urls` and `block_explorers` hold the default URL of each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChainDefinition {
    pub caip_network_id: CaipNetworkId,
    pub name: String,
    pub native_currency: NativeCurrency,
    #[serde(default)]
    pub rpc_urls: Vec<String>,
    #[serde(default)]
    pub block_explorers: Vec<String>,
    #[serde(default)]
    pub testnet: bool,
}

impl ChainDefinition {
    pub fn namespace(&self) -> Namespace {
        self.caip_network_id.namespace
    }
}

/// The network a connected account is on, as the modal shows it. `supported` is false for the
/// synthetic unsupported network that a chain outside the session's networks becomes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct NetworkRef {
    pub caip_network_id: CaipNetworkId,
    pub name: String,
    pub supported: bool,
}

impl NetworkRef {
    pub fn of(chain: &ChainDefinition) -> Self {
        Self { caip_network_id: chain.caip_network_id.clone(), name: chain.name.clone(), supported: true }
    }

    /// The synthetic network an unsupported chain switches to.
    pub fn unsupported(caip_network_id: CaipNetworkId) -> Self {
        Self { caip_network_id, name: "Unsupported Network".into(), supported: false }
    }
}

pub const DEFAULT_NETWORK: &str = "eip155:1";

pub const SOLANA_MAINNET: &str = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
pub const SOLANA_DEVNET: &str = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1";
pub const SOLANA_TESTNET: &str = "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z";
/// Full genesis hashes of the three Solana clusters (what `getGenesisHash` answers); a CAIP-2
/// reference is the first 32 characters (CAIP-30).
pub const SOLANA_GENESIS_HASHES: [(&str, &str); 3] = [
    ("mainnet", "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"),
    ("devnet", "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG"),
    ("testnet", "4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY"),
];

/// The Wallet Standard name of a Solana CAIP-2 network (`solana:devnet` for
/// `solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1`), for the three clusters.
pub fn solana_cluster_chain(id: &CaipNetworkId) -> Option<String> {
    if id.namespace != Namespace::Solana {
        return None;
    }
    SOLANA_GENESIS_HASHES
        .iter()
        .find(|(_, genesis)| genesis.starts_with(&id.reference) && id.reference.len() == 32)
        .map(|(cluster, _)| format!("solana:{cluster}"))
}

pub const BITCOIN_MAINNET: &str = "bip122:000000000019d6689c085ae165831e93";
pub const BITCOIN_TESTNET: &str = "bip122:000000000933ea01ad0ee984209779ba";

/// (chain id, name, currency symbol, testnet) of every EVM network the spec lists; all use 18 decimals.
const EVM_CHAINS: &[(u64, &str, &str, &str, bool)] = &[
    (1, "Ethereum", "Ether", "ETH", false),
    (5, "Goerli", "Goerli Ether", "ETH", true),
    (11155111, "Sepolia", "Sepolia Ether", "ETH", true),
    (10, "OP Mainnet", "Ether", "ETH", false),
    (420, "Optimism Goerli", "Goerli Ether", "ETH", true),
    (42161, "Arbitrum One", "Ether", "ETH", false),
    (421613, "Arbitrum Goerli", "Goerli Ether", "ETH", true),
    (137, "Polygon", "POL", "POL", false),
    (80001, "Polygon Mumbai", "MATIC", "MATIC", true),
    (42220, "Celo", "CELO", "CELO", false),
    (1313161554, "Aurora", "Ether", "ETH", false),
    (1313161555, "Aurora Testnet", "Ether", "ETH", true),
    (56, "BNB Smart Chain", "BNB", "BNB", false),
    (97, "BNB Smart Chain Testnet", "BNB", "tBNB", true),
    (43114, "Avalanche", "Avalanche", "AVAX", false),
    (43113, "Avalanche Fuji", "Avalanche Fuji", "AVAX", true),
    (324, "ZKsync Era", "Ether", "ETH", false),
    (280, "ZKsync Era Testnet", "Ether", "ETH", true),
    (100, "Gnosis", "xDAI", "XDAI", false),
    (8453, "Base", "Ether", "ETH", false),
    (84531, "Base Goerli", "Goerli Ether", "ETH", true),
    (84532, "Base Sepolia", "Sepolia Ether", "ETH", true),
    (7777777, "Zora", "Ether", "ETH", false),
    (999, "Zora Goerli", "Zora Goerli", "ETH", true),
];

/// (chain id, public JSON-RPC endpoint, block explorer) of the catalogue's live EVM networks, as
/// their operators publish them. The endpoint is what a wallet that does not know the chain is
/// asked to add (`wallet_addEthereumChain`: EIP-3085 wants at least one RPC URL, and MetaMask
/// refuses an empty list, so a switch to such a chain failed); the explorer is where a sent
/// transaction links. Never the gateway's own endpoints (`[networks]`), which may carry keys.
/// Retired testnets (Goerli and its rollups, Mumbai, ...) have none.
const PUBLIC_ENDPOINTS: &[(u64, &str, &str)] = &[
    (1, "https://ethereum-rpc.publicnode.com", "https://etherscan.io"),
    (11155111, "https://ethereum-sepolia-rpc.publicnode.com", "https://sepolia.etherscan.io"),
    (10, "https://mainnet.optimism.io", "https://optimistic.etherscan.io"),
    (42161, "https://arb1.arbitrum.io/rpc", "https://arbiscan.io"),
    (137, "https://polygon-rpc.com", "https://polygonscan.com"),
    (42220, "https://forno.celo.org", "https://celoscan.io"),
    (1313161554, "https://mainnet.aurora.dev", "https://explorer.aurora.dev"),
    (56, "https://bsc-dataseed.bnbchain.org", "https://bscscan.com"),
    (97, "https://data-seed-prebsc-1-s1.bnbchain.org:8545", "https://testnet.bscscan.com"),
    (43114, "https://api.avax.network/ext/bc/C/rpc", "https://snowtrace.io"),
    (43113, "https://api.avax-test.network/ext/bc/C/rpc", "https://testnet.snowtrace.io"),
    (324, "https://mainnet.era.zksync.io", "https://explorer.zksync.io"),
    (100, "https://rpc.gnosischain.com", "https://gnosisscan.io"),
    (8453, "https://mainnet.base.org", "https://basescan.org"),
    (84532, "https://sepolia.base.org", "https://sepolia.basescan.org"),
    (7777777, "https://rpc.zora.energy", "https://explorer.zora.energy"),
];

/// Every network the catalogue knows, EVM first.
pub fn catalogue() -> Vec<ChainDefinition> {
    let evm = EVM_CHAINS.iter().map(|&(id, name, currency, symbol, testnet)| {
        let endpoints = PUBLIC_ENDPOINTS.iter().find(|(chain, ..)| *chain == id);
        ChainDefinition {
            caip_network_id: CaipNetworkId::eip155(id),
            name: name.into(),
            native_currency: NativeCurrency { name: currency.into(), symbol: symbol.into(), decimals: 18 },
            rpc_urls: endpoints.map(|(_, rpc, _)| vec![rpc.to_string()]).unwrap_or_default(),
            block_explorers: endpoints.map(|(.., explorer)| vec![explorer.to_string()]).unwrap_or_default(),
            testnet,
        }
    });
    // The Solana Foundation's public endpoint and explorer of each cluster (the explorer names the
    // cluster in its query; the widget keeps it when it links a transaction).
    let sol = |id: &str, name: &str, cluster: &str, testnet| ChainDefinition {
        caip_network_id: id.parse().expect("catalogue ids are valid"),
        name: name.into(),
        native_currency: NativeCurrency { name: "Solana".into(), symbol: "SOL".into(), decimals: 9 },
        rpc_urls: vec![format!("https://api.{cluster}.solana.com")],
        block_explorers: vec![match cluster {
            "mainnet-beta" => "https://explorer.solana.com".to_string(),
            _ => format!("https://explorer.solana.com/?cluster={cluster}"),
        }],
        testnet,
    };
    let btc = |id: &str, name: &str, testnet| ChainDefinition {
        caip_network_id: id.parse().expect("catalogue ids are valid"),
        name: name.into(),
        native_currency: NativeCurrency { name: "Bitcoin".into(), symbol: "BTC".into(), decimals: 8 },
        rpc_urls: vec![],
        block_explorers: vec![],
        testnet,
    };
    evm.chain([
        sol(SOLANA_MAINNET, "Solana", "mainnet-beta", false),
        sol(SOLANA_DEVNET, "Solana Devnet", "devnet", true),
        sol(SOLANA_TESTNET, "Solana Testnet", "testnet", true),
        btc(BITCOIN_MAINNET, "Bitcoin", false),
        btc(BITCOIN_TESTNET, "Bitcoin Testnet", true),
    ])
    .collect()
}

pub fn lookup(id: &CaipNetworkId) -> Option<ChainDefinition> {
    catalogue().into_iter().find(|c| &c.caip_network_id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_has_every_listed_network_once() {
        let all = catalogue();
        assert_eq!(all.len(), 24 + 3 + 2);
        let mut ids: Vec<_> = all.iter().map(|c| c.caip_network_id.to_string()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), all.len());
        assert_eq!(lookup(&"eip155:42161".parse().unwrap()).unwrap().name, "Arbitrum One");
        assert_eq!(lookup(&SOLANA_MAINNET.parse().unwrap()).unwrap().native_currency.decimals, 9);
    }

    #[test]
    fn every_live_evm_mainnet_has_a_public_https_endpoint_and_explorer_a_wallet_can_be_asked_to_add() {
        let evm: Vec<_> = catalogue().into_iter().filter(|c| c.namespace() == Namespace::Eip155).collect();
        for chain in evm.iter().filter(|c| !c.testnet) {
            assert_eq!(chain.rpc_urls.len(), 1, "{}", chain.caip_network_id);
            assert_eq!(chain.block_explorers.len(), 1, "{}", chain.caip_network_id);
            for url in chain.rpc_urls.iter().chain(&chain.block_explorers) {
                let host = url.strip_prefix("https://").unwrap_or_default();
                assert!(!host.is_empty() && !host.starts_with('/') && !url.contains(char::is_whitespace), "{url}");
            }
        }
        // Every entry names a catalogue chain (a typo would leave its chain without endpoints).
        for (id, ..) in PUBLIC_ENDPOINTS {
            assert!(evm.iter().any(|c| c.caip_network_id == CaipNetworkId::eip155(*id)), "{id}");
        }
    }

    #[test]
    fn solana_catalogue_ids_are_the_genesis_hash_prefixes() {
        for (id, cluster) in [(SOLANA_MAINNET, "mainnet"), (SOLANA_DEVNET, "devnet"), (SOLANA_TESTNET, "testnet")] {
            let id: CaipNetworkId = id.parse().unwrap();
            let genesis = SOLANA_GENESIS_HASHES.iter().find(|(c, _)| *c == cluster).unwrap().1;
            assert_eq!(id.reference, genesis[..32]);
            assert_eq!(solana_cluster_chain(&id), Some(format!("solana:{cluster}")));
        }
        assert_eq!(solana_cluster_chain(&"eip155:1".parse().unwrap()), None);
        let devnet = lookup(&SOLANA_DEVNET.parse().unwrap()).unwrap();
        assert_eq!(devnet.rpc_urls, ["https://api.devnet.solana.com"]);
        assert_eq!(devnet.block_explorers, ["https://explorer.solana.com/?cluster=devnet"]);
        assert_eq!(lookup(&SOLANA_MAINNET.parse().unwrap()).unwrap().block_explorers, ["https://explorer.solana.com"]);
    }
}

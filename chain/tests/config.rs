//! The configuration as an operator writes it (TOML, read with figment as the gateway does).

use std::time::Duration;

use figment::Figment;
use figment::providers::{Format, Toml};
use vestibule_chain::config::ActivitySourceKind;
use vestibule_chain::{ChainConfig, NetworkId};

fn parse(toml: &str) -> Result<ChainConfig, Box<figment::Error>> {
    Figment::from(Toml::string(toml)).extract().map_err(Box::new)
}

#[test]
fn a_full_configuration_reads_and_validates() {
    let config = parse(
        r#"
        [networks."eip155:31337"]
        rpc_urls = ["http://127.0.0.1:8545", "http://127.0.0.1:8546"]
        tokens = [
            { address = "0x5FbDB2315678afecb367f032d93F642f64180aa3" },
            { address = "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512", symbol = "USDC", decimals = 6, name = "USD Coin" },
        ]
        activity = { source = "otterscan", page_size = 10 }

        [networks."eip155:31338"]
        rpc_urls = ["http://127.0.0.1:9545"]
        native_currency = { name = "Test Ether", symbol = "TETH", decimals = 18 }
        activity = { source = "none" }

        [rpc]
        attempt_timeout = "5s"
        call_timeout = "20s"

        [prices]
        source = "static"
        usd = { "eip155:31337/native" = "3000.50" }
        "#,
    )
    .unwrap();
    assert_eq!(config.rpc.attempt_timeout, Duration::from_secs(5));
    assert_eq!(config.rpc.max_retries, 3, "unset policy fields keep the spec's values");
    let networks = config.validate().unwrap();
    assert_eq!(networks.iter().map(|n| n.id).collect::<Vec<_>>(), [NetworkId::eip155(31337), NetworkId::eip155(31338)]);
    assert_eq!(networks[0].rpc_urls.len(), 2);
    assert_eq!(networks[0].tokens[1].decimals, Some(6));
    assert_eq!(networks[0].activity.page_size, 10);
    assert_eq!(networks[1].activity.source, ActivitySourceKind::None);
    assert_eq!(networks[1].native_currency.symbol, "TETH");
}

#[test]
fn unknown_keys_are_errors_that_name_them() {
    let error = parse("[networks.\"eip155:1\"]\nrpc_urls = [\"http://a\"]\nrpc_url = \"http://b\"\n").unwrap_err();
    let text = error.to_string();
    assert!(text.contains("rpc_url"), "{text}");
    let error = parse("[rpc]\nretries = 5\n").unwrap_err();
    assert!(error.to_string().contains("retries"), "{error}");
}

#[test]
fn validation_names_the_field_at_fault() {
    let config = parse("[networks.\"eip155:1\"]\nrpc_urls = [\"http://a\"]\ntokens = [{ address = \"USDC\" }]\n").unwrap();
    assert_eq!(
        config.validate().unwrap_err().to_string(),
        r#"networks."eip155:1".tokens[0].address: not an address (0x and 40 hex digits)"#
    );
}

//! EVM values the session's decisions need, as pure functions: exact amounts typed in the Send
//! view, the EVM address rule (spec §5), the calldata of an ERC-20 `transfer`, and the spec's
//! transaction error catalogue (§8). The chain service (`vestibule-chain`) has the same rules for
//! its own callers; `gateway/tests/evm_rules.rs` checks that both give the same answers (decision
//! 1001: the session crate does not link the chain service's HTTP stack).

use alloy_primitives::{Address, U256};

/// Why a typed amount is not an amount of the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AmountError {
    #[error("not a number")]
    NotANumber,
    #[error("more than {decimals} decimals")]
    TooManyDecimals { decimals: u8 },
    #[error("too large")]
    Overflow,
}

/// Decimal text (`"1.5"`, `"0.000001"`, `"12"`) into base units of a token with `decimals`:
/// digits with at most one point, no sign, exponent or separators, at most `decimals` fraction
/// digits (never silently truncated).
pub fn parse_amount(text: &str, decimals: u8) -> Result<U256, AmountError> {
    let text = text.trim();
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !digits(whole) || !digits(fraction) {
        return Err(AmountError::NotANumber);
    }
    let fraction = fraction.trim_end_matches('0');
    if fraction.len() > usize::from(decimals) {
        return Err(AmountError::TooManyDecimals { decimals });
    }
    let mut units = U256::ZERO;
    let ten = U256::from(10u8);
    let padded = format!("{fraction:0<width$}", width = usize::from(decimals));
    for b in whole.bytes().chain(padded.bytes()) {
        units = units.checked_mul(ten).and_then(|u| u.checked_add(U256::from(b - b'0'))).ok_or(AmountError::Overflow)?;
    }
    Ok(units)
}

/// Base units as decimal text with every digit, without trailing zeros: `1.5`, `12`.
pub fn format_units(units: U256, decimals: u8) -> String {
    let digits = units.to_string();
    let d = usize::from(decimals);
    if d == 0 {
        return digits;
    }
    let padded = format!("{digits:0>width$}", width = d + 1);
    let (whole, fraction) = padded.split_at(padded.len() - d);
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() { whole.to_string() } else { format!("{whole}.{fraction}") }
}

/// Spec §5: an EVM address is an optional `0x` prefix and 40 hex digits. All lower or all upper
/// case says nothing more; mixed case is an EIP-55 checksum and must be right, as wallets check it
/// (a typo in a pasted receiver would otherwise send to an address nobody holds).
pub fn parse_evm_address(text: &str) -> Option<Address> {
    let text = text.trim();
    let hex = text.strip_prefix("0x").unwrap_or(text);
    if hex.len() != 40 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let address: Address = format!("0x{hex}").parse().ok()?;
    let has = |case: fn(&u8) -> bool| hex.bytes().any(|b| b.is_ascii_alphabetic() && case(&b));
    let mixed_case = has(u8::is_ascii_lowercase) && has(u8::is_ascii_uppercase);
    if mixed_case && address.to_checksum(None)[2..] != *hex {
        return None;
    }
    Some(address)
}

/// A JSON-RPC quantity: `0x` and hex digits without leading zeros.
pub fn quantity(value: U256) -> String {
    format!("{value:#x}")
}

/// The calldata of ERC-20 `transfer(address to, uint256 amount)`.
pub fn erc20_transfer_data(to: Address, amount: U256) -> String {
    let mut data = String::with_capacity(2 + 8 + 128);
    data.push_str("0xa9059cbb");
    data.push_str(&format!("{:0>64}", alloy_primitives::hex::encode(to.as_slice())));
    data.push_str(&format!("{:064x}", amount));
    data
}

/// Spec §8 "Transaction errors": what a wallet or node said when a transaction failed, as the
/// catalogue's message. Wallets and nodes word these differently; the phrases they share decide.
pub fn transaction_error_message(code: Option<i64>, message: &str) -> &'static str {
    let m = message.to_ascii_lowercase();
    let has = |phrases: &[&str]| phrases.iter().any(|p| m.contains(p));
    if matches!(code, Some(4001 | 5000)) {
        "user rejected the request"
    } else if code == Some(3) || has(&["execution reverted", "revert"]) {
        "execution reverted"
    } else if has(&[
        "max priority fee per gas higher than max fee per gas",
        "tip higher than fee cap",
        "maxpriorityfeepergas higher than maxfeepergas",
    ]) {
        "tip above fee cap"
    } else if has(&["fee cap higher than 2^256", "max fee per gas higher than 2^256", "fee cap too high"]) {
        "fee cap too high"
    } else if has(&[
        "fee cap less than block base fee",
        "max fee per gas less than block base fee",
        "fee cap too low",
        "transaction is outdated",
    ]) {
        "fee cap too low"
    } else if has(&["nonce has max value", "nonce max value"]) {
        "nonce at its maximum"
    } else if has(&["nonce too high"]) {
        "nonce too high"
    } else if has(&["nonce too low", "transaction already imported", "already known"]) {
        "nonce too low"
    } else if has(&["insufficient funds"]) {
        "insufficient funds"
    } else if has(&["intrinsic gas too high", "gas limit reached", "exceeds block gas limit"]) {
        "intrinsic gas too high"
    } else if has(&["intrinsic gas too low", "gas too low"]) {
        "intrinsic gas too low"
    } else if has(&["transaction type not supported", "type not supported", "unsupported transaction type"]) {
        "transaction type unsupported"
    } else if has(&["http request failed"]) {
        "HTTP request failed"
    } else if has(&["timed out", "timeout"]) {
        "request timed out"
    } else {
        "unknown RPC error"
    }
}

/// Sums fiat values written with two decimals (`"12.34"`); `None` when none is given or one is not
/// such a value.
pub fn sum_fiat<'a>(values: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut cents: u128 = 0;
    let mut any = false;
    for v in values {
        let (whole, fraction) = v.split_once('.').unwrap_or((v, "0"));
        let whole: u128 = whole.parse().ok()?;
        let fraction: u128 = format!("{fraction:0<2}").get(..2)?.parse().ok()?;
        cents = cents.checked_add(whole.checked_mul(100)?.checked_add(fraction)?)?;
        any = true;
    }
    any.then(|| format!("{}.{:02}", cents / 100, cents % 100))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_parse_exactly_in_the_tokens_decimals() {
        assert_eq!(parse_amount("1.5", 18), Ok(U256::from(1_500_000_000_000_000_000u128)));
        assert_eq!(parse_amount(" 12 ", 6), Ok(U256::from(12_000_000u64)));
        assert_eq!(parse_amount(".5", 1), Ok(U256::from(5u8)));
        assert_eq!(parse_amount("0.10", 1), Ok(U256::from(1u8)));
        assert_eq!(parse_amount("0.001", 2), Err(AmountError::TooManyDecimals { decimals: 2 }));
        for bad in ["", ".", "-1", "1e3", "1,000", "1.2.3", "abc"] {
            assert_eq!(parse_amount(bad, 18), Err(AmountError::NotANumber), "{bad}");
        }
        assert_eq!(parse_amount(&"9".repeat(80), 0), Err(AmountError::Overflow));
        assert_eq!(format_units(U256::from(1_500_000u64), 6), "1.5");
        assert_eq!(format_units(U256::from(12u8), 0), "12");
        assert_eq!(format_units(U256::from(1u8), 18), "0.000000000000000001");
    }

    #[test]
    fn an_erc20_transfer_is_its_selector_and_two_words() {
        let to = parse_evm_address("70997970c51812dc3a010c7d01b50e0d17dc79c8").unwrap();
        let data = erc20_transfer_data(to, U256::from(12_500_000u64));
        assert_eq!(&data[..10], "0xa9059cbb");
        assert_eq!(data.len(), 2 + 8 + 128);
        assert!(data.ends_with("0000bebc20"));
        assert!(data.contains("70997970c51812dc3a010c7d01b50e0d17dc79c8"));
        assert_eq!(quantity(U256::from(255u8)), "0xff");
        assert_eq!(quantity(U256::ZERO), "0x0");
    }

    #[test]
    fn addresses_follow_the_spec_rule() {
        assert!(parse_evm_address("0x70997970C51812DC3A010C7D01B50E0D17DC79C8").is_some());
        assert!(parse_evm_address("0x70997970c51812dc3a010c7d01b50e0d17dc79c8").is_some());
        assert!(parse_evm_address("0x70997970C51812dc3A010C7d01b50e0d17dc79C8").is_some(), "its EIP-55 checksum");
        assert!(parse_evm_address("70997970C51812dc3A010C7d01b50e0d17dc79C8").is_some(), "without 0x");
        assert!(parse_evm_address("0x70997970C51812dc3A010C7d01b50e0d17dc79c8").is_none(), "one letter's case wrong");
        assert!(parse_evm_address("0X70997970c51812dc3a010c7d01b50e0d17dc79c8").is_none());
        assert!(parse_evm_address("0x1234").is_none());
    }

    #[test]
    fn fiat_values_add_up_to_the_cent() {
        assert_eq!(sum_fiat(["1.25", "2.5", "3"]).as_deref(), Some("6.75"));
        assert_eq!(sum_fiat(std::iter::empty()), None);
    }
}

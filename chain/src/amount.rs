//! Exact amounts: integers of base units with the token's decimals, parsed from and shown as
//! decimal text without floating point. Display floors (spec §5: balances floored to 3 decimals,
//! fiat to 2), so what is shown is never more than what is held.

use std::fmt;

use alloy::primitives::{U256, U512};
use serde::{Deserialize, Serialize};

/// An amount of a token: `raw` base units, `decimals` of them to one token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Amount {
    pub raw: U256,
    pub decimals: u8,
}

impl Amount {
    pub const fn new(raw: U256, decimals: u8) -> Self {
        Self { raw, decimals }
    }

    /// Parses decimal text (`"1.5"`) into base units; see [`parse_amount`].
    pub fn parse(text: &str, decimals: u8) -> Result<Self, AmountError> {
        Ok(Self { raw: parse_amount(text, decimals)?, decimals })
    }

    pub fn is_zero(&self) -> bool {
        self.raw.is_zero()
    }

    /// Every digit, without trailing zeros: `1.5`, `0.000000000000000001`, `12`.
    pub fn to_exact_string(&self) -> String {
        format_decimal(U512::from(self.raw), self.decimals, self.decimals)
    }

    /// Floored to at most `places` decimals, without trailing zeros: 1.23456 → `1.234`,
    /// 0.0009 → `0`, 2.1 → `2.1`. Balances use 3 ([`BALANCE_DISPLAY_DECIMALS`]).
    pub fn floor_to(&self, places: u8) -> String {
        format_decimal(U512::from(self.raw), self.decimals, places)
    }

    /// This amount's value at `price` per whole token, floored to the cent.
    pub fn fiat_value(&self, price: &Price) -> FiatValue {
        // raw × price_units / 10^(decimals + price_scale) in cents: × 100 first, then one floor.
        let numerator = U512::from(self.raw) * U512::from(price.units) * U512::from(100u8);
        let denominator = pow10(u32::from(self.decimals) + u32::from(price.scale));
        FiatValue { cents: numerator / denominator }
    }
}

/// Balances are shown floored to this many decimals (spec §5 Display, §9).
pub const BALANCE_DISPLAY_DECIMALS: u8 = 3;

/// A price of one whole token in a fiat currency, exact: `units / 10^scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Price {
    pub units: U256,
    pub scale: u8,
}

impl Price {
    /// Parses decimal text (`"3012.55"`); at most 18 decimals.
    pub fn parse(text: &str) -> Result<Self, AmountError> {
        let fraction_digits = text.trim().split_once('.').map_or(0, |(_, f)| f.trim_end_matches('0').len());
        let scale = u8::try_from(fraction_digits).ok().filter(|s| *s <= 18).ok_or(AmountError::TooManyDecimals { decimals: 18 })?;
        Ok(Self { units: parse_amount(text, scale)?, scale })
    }
}

impl fmt::Display for Price {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_decimal(U512::from(self.units), self.scale, self.scale))
    }
}

/// A fiat value in cents (floored), shown with exactly 2 decimals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FiatValue {
    pub cents: U512,
}

impl fmt::Display for FiatValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hundred = U512::from(100u8);
        write!(f, "{}.{:02}", self.cents / hundred, (self.cents % hundred).to::<u8>())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AmountError {
    #[error("the amount is empty")]
    Empty,
    #[error("the amount must be digits with at most one decimal point")]
    NotDecimal,
    #[error("the amount has more than {decimals} decimals")]
    TooManyDecimals { decimals: u8 },
    #[error("the amount is too large")]
    TooLarge,
}

/// Decimal text to base units, exactly: digits with at most one `.` (`"1.5"`, `"0.25"`, `".5"`,
/// `"7."`), surrounding whitespace ignored. No sign, exponent, separators or hex. More fractional
/// digits than `decimals` is an error rather than a silent truncation (an amount to send must be
/// the amount typed).
pub fn parse_amount(text: &str, decimals: u8) -> Result<U256, AmountError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(AmountError::Empty);
    }
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) || (whole.is_empty() && fraction.is_empty()) {
        return Err(AmountError::NotDecimal);
    }
    let fraction = fraction.trim_end_matches('0');
    if fraction.len() > usize::from(decimals) {
        return Err(AmountError::TooManyDecimals { decimals });
    }
    let mut raw = U256::ZERO;
    let ten = U256::from(10u8);
    let padding = usize::from(decimals) - fraction.len();
    for digit in whole.bytes().chain(fraction.bytes()).chain(std::iter::repeat_n(b'0', padding)) {
        raw = raw.checked_mul(ten).and_then(|r| r.checked_add(U256::from(digit - b'0'))).ok_or(AmountError::TooLarge)?;
    }
    Ok(raw)
}

fn pow10(exponent: u32) -> U512 {
    U512::from(10u8).pow(U512::from(exponent))
}

/// `raw / 10^decimals` floored to `places` decimals, trailing zeros (and a bare point) dropped.
fn format_decimal(raw: U512, decimals: u8, places: u8) -> String {
    let places = places.min(decimals);
    let kept = raw / pow10(u32::from(decimals - places));
    let unit = pow10(u32::from(places));
    let whole = kept / unit;
    if places == 0 {
        return whole.to_string();
    }
    let fraction = format!("{:0>width$}", (kept % unit).to_string(), width = usize::from(places));
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() { whole.to_string() } else { format!("{whole}.{fraction}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn u(n: u128) -> U256 {
        U256::from(n)
    }

    #[test]
    fn parses_decimal_text_exactly() {
        assert_eq!(parse_amount("1.5", 18), Ok(u(1_500_000_000_000_000_000)));
        assert_eq!(parse_amount("0.000001", 6), Ok(u(1)));
        assert_eq!(parse_amount(" 42 ", 0), Ok(u(42)));
        assert_eq!(parse_amount(".5", 1), Ok(u(5)));
        assert_eq!(parse_amount("7.", 2), Ok(u(700)));
        assert_eq!(parse_amount("1.500", 1), Ok(u(15)), "trailing zeros are not extra decimals");
        assert_eq!(parse_amount("0", 18), Ok(U256::ZERO));
    }

    #[test]
    fn refuses_what_is_not_an_exact_amount() {
        assert_eq!(parse_amount("", 18), Err(AmountError::Empty));
        assert_eq!(parse_amount("  ", 18), Err(AmountError::Empty));
        for bad in ["-1", "+1", "1e3", "1,5", "0x10", "1.2.3", ".", "1 000", "½", "NaN"] {
            assert_eq!(parse_amount(bad, 18), Err(AmountError::NotDecimal), "{bad}");
        }
        assert_eq!(parse_amount("1.0000001", 6), Err(AmountError::TooManyDecimals { decimals: 6 }));
        assert_eq!(parse_amount("0.5", 0), Err(AmountError::TooManyDecimals { decimals: 0 }));
        let max = U256::MAX.to_string();
        assert_eq!(parse_amount(&max, 0), Ok(U256::MAX));
        assert_eq!(parse_amount(&format!("{max}0"), 0), Err(AmountError::TooLarge));
        assert_eq!(parse_amount("1", 78), Err(AmountError::TooLarge));
    }

    #[test]
    fn balances_floor_to_three_decimals() {
        let eth = |raw: u128| Amount::new(u(raw), 18);
        assert_eq!(eth(1_234_567_890_000_000_000).floor_to(3), "1.234");
        assert_eq!(eth(1_999_999_999_999_999_999).floor_to(3), "1.999");
        assert_eq!(eth(2_100_000_000_000_000_000).floor_to(3), "2.1");
        assert_eq!(eth(900_000_000_000_000).floor_to(3), "0");
        assert_eq!(eth(10_000_000_000_000_000_000_000).floor_to(3), "10000");
        assert_eq!(Amount::new(u(1234), 2).floor_to(3), "12.34");
        assert_eq!(Amount::new(u(7), 0).floor_to(3), "7");
        assert_eq!(eth(1).to_exact_string(), "0.000000000000000001");
    }

    #[test]
    fn fiat_is_floored_to_the_cent() {
        let price = Price::parse("3012.555").unwrap();
        // 1.5 ETH × 3012.555 = 4518.8325 → 4518.83
        assert_eq!(Amount::parse("1.5", 18).unwrap().fiat_value(&price).to_string(), "4518.83");
        assert_eq!(Amount::parse("0.001", 6).unwrap().fiat_value(&Price::parse("1").unwrap()).to_string(), "0.00");
        assert_eq!(Amount::parse("2", 6).unwrap().fiat_value(&Price::parse("0.5").unwrap()).to_string(), "1.00");
        assert_eq!(Amount::new(U256::MAX, 0).fiat_value(&Price::parse("1").unwrap()).cents, U512::from(U256::MAX) * U512::from(100u8));
        assert_eq!(price.to_string(), "3012.555");
    }

    proptest! {
        #[test]
        fn exact_text_parses_back_to_the_same_amount(raw in any::<u128>(), decimals in 0u8..=30) {
            let amount = Amount::new(U256::from(raw), decimals);
            prop_assert_eq!(Amount::parse(&amount.to_exact_string(), decimals), Ok(amount));
        }

        #[test]
        fn floored_text_never_exceeds_the_amount(raw in any::<u128>(), decimals in 0u8..=30, places in 0u8..=6) {
            let amount = Amount::new(U256::from(raw), decimals);
            let shown = Amount::parse(&amount.floor_to(places), decimals).unwrap();
            prop_assert!(shown.raw <= amount.raw);
            // and is less than one display step below it
            let step = U256::from(10u8).pow(U256::from(decimals.saturating_sub(places)));
            prop_assert!(amount.raw - shown.raw < step);
        }
    }
}

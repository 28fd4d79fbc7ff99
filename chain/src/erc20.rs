//! The ERC-20 calls and event the service uses.

use alloy::primitives::{Bytes, FixedBytes, U256};
use alloy::sol;
use alloy::sol_types::SolCall;

sol! {
    /// The parts of ERC-20 (EIP-20) that balances, activity and sends use.
    interface IERC20 {
        function balanceOf(address owner) external view returns (uint256);
        function decimals() external view returns (uint8);
        function symbol() external view returns (string);
        function name() external view returns (string);
        function transfer(address to, uint256 amount) external returns (bool);
        event Transfer(address indexed from, address indexed to, uint256 value);
    }

    /// Tokens of the first years of ERC-20 (MKR, SAI) return their symbol as `bytes32`.
    interface IERC20Bytes32Symbol {
        function symbol() external view returns (bytes32);
    }

    /// `symbol()`/`name()` read as the bytes of their ABI string (the encodings are the same), so
    /// that text which is not UTF-8 is refused rather than decoded lossily.
    interface IERC20RawText {
        function symbol() external view returns (bytes);
        function name() external view returns (bytes);
    }
}

/// `keccak256("Transfer(address,address,uint256)")`: topic 0 of ERC-20 and ERC-721 transfers
/// (ERC-721 indexes the token id too, so its log has four topics, ERC-20's three).
pub const TRANSFER_TOPIC: FixedBytes<32> = <IERC20::Transfer as alloy::sol_types::SolEvent>::SIGNATURE_HASH;

/// The longest token symbol accepted from a contract, in characters (after trimming).
pub const MAX_SYMBOL_CHARS: usize = 32;
/// The longest token name accepted from a contract, in characters (after trimming).
pub const MAX_NAME_CHARS: usize = 64;
/// The most decimals accepted from a contract's `decimals()`. No listed token has more than 24;
/// with 36 an amount's exact text stays under 80 characters ([`crate::amount::Amount`] works to
/// 77), and fiat values stay exact.
pub const MAX_TOKEN_DECIMALS: u8 = 36;

/// A token symbol from `symbol()`'s return data: an ABI string, or a NUL-padded `bytes32`. `None`
/// (the token's metadata is unknown) unless it is UTF-8 that [`token_text`] accepts within
/// [`MAX_SYMBOL_CHARS`]: whatever a contract returns ends up in every session that meets the token.
pub fn decode_symbol(data: &Bytes) -> Option<String> {
    // A longer answer cannot hold an acceptable symbol (4 bytes a character at most): refused
    // before it is decoded.
    if data.len() > abi_text_len(MAX_SYMBOL_CHARS) {
        return None;
    }
    if let Ok(bytes) = IERC20RawText::symbolCall::abi_decode_returns(data) {
        return token_text(std::str::from_utf8(&bytes).ok()?, MAX_SYMBOL_CHARS);
    }
    let bytes = IERC20Bytes32Symbol::symbolCall::abi_decode_returns(data).ok()?;
    token_text(std::str::from_utf8(bytes.as_slice()).ok()?.trim_end_matches('\0'), MAX_SYMBOL_CHARS)
}

/// A token name from `name()`'s return data (an ABI string), with the rules of [`decode_symbol`]
/// and [`MAX_NAME_CHARS`].
pub fn decode_name(data: &Bytes) -> Option<String> {
    if data.len() > abi_text_len(MAX_NAME_CHARS) {
        return None;
    }
    let bytes = IERC20RawText::nameCall::abi_decode_returns(data).ok()?;
    token_text(std::str::from_utf8(&bytes).ok()?, MAX_NAME_CHARS)
}

/// Decimals from `decimals()`'s return data: a `uint8` of at most [`MAX_TOKEN_DECIMALS`]. The
/// whole word is read (ABI decoding of a `uint8` would keep only its low byte: 256 would be 0).
pub fn decode_decimals(data: &Bytes) -> Option<u8> {
    let word = U256::try_from_be_slice(data.get(..32)?)?;
    u8::try_from(word).ok().filter(|d| *d <= MAX_TOKEN_DECIMALS)
}

/// The ABI encoding's length of a string of `chars` characters, at 4 UTF-8 bytes each: offset,
/// length, and the bytes padded to 32.
const fn abi_text_len(chars: usize) -> usize {
    64 + (chars * 4).div_ceil(32) * 32
}

/// `text` trimmed, if it is what a symbol or a name may be: not empty, at most `max_chars`
/// characters, printable: no control characters, no line or paragraph separators or other
/// whitespace than the space, no invisible formatting (zero-width characters, bidirectional
/// overrides and isolates, the BOM), no noncharacters or private use.
pub fn token_text(text: &str, max_chars: usize) -> Option<String> {
    let text = text.trim();
    let printable = |c: char| {
        !(c.is_control()
            || (c.is_whitespace() && c != ' ')
            || matches!(c,
                '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}' | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}' | '\u{FFF0}'..='\u{FFFF}'
                | '\u{E000}'..='\u{F8FF}' | '\u{FDD0}'..='\u{FDEF}' | '\u{E0000}'..='\u{E0FFF}'
                | '\u{F0000}'..='\u{10FFFF}'))
    };
    let fits = !text.is_empty() && text.chars().count() <= max_chars && text.chars().all(printable);
    fits.then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::{B256, keccak256};
    use alloy::sol_types::SolValue;

    #[test]
    fn the_transfer_topic_is_the_event_signature_hash() {
        assert_eq!(TRANSFER_TOPIC, keccak256("Transfer(address,address,uint256)"));
    }

    #[test]
    fn symbols_decode_from_strings_and_bytes32() {
        assert_eq!(decode_symbol(&"VDT".to_string().abi_encode().into()), Some("VDT".into()));
        let mut padded = [0u8; 32];
        padded[..3].copy_from_slice(b"MKR");
        assert_eq!(decode_symbol(&B256::from(padded).abi_encode().into()), Some("MKR".into()));
        assert_eq!(decode_symbol(&Bytes::new()), None);
    }

    fn abi_string(text: &str) -> Bytes {
        text.to_string().abi_encode().into()
    }

    fn abi_bytes(bytes: &[u8]) -> Bytes {
        alloy::primitives::Bytes::copy_from_slice(bytes).abi_encode().into()
    }

    #[test]
    fn symbols_are_trimmed_and_bounded_in_characters() {
        assert_eq!(decode_symbol(&abi_string(" \tUSDC \n")), Some("USDC".into()), "surrounding whitespace is trimmed");
        assert_eq!(decode_symbol(&abi_string("  USDC  ")), Some("USDC".into()));
        assert_eq!(decode_symbol(&abi_string(&"S".repeat(32))), Some("S".repeat(32)));
        assert_eq!(decode_symbol(&abi_string(&"S".repeat(33))), None);
        // 32 characters of 4 bytes each still fit; the review's 300,000 bytes do not.
        assert_eq!(decode_symbol(&abi_string(&"🦀".repeat(32))), Some("🦀".repeat(32)));
        assert_eq!(decode_symbol(&abi_string(&"A".repeat(300_000))), None);
        assert_eq!(decode_symbol(&abi_string("")), None);
        assert_eq!(decode_symbol(&abi_string("   ")), None);
        assert_eq!(decode_symbol(&abi_string("Ünï €")), Some("Ünï €".into()));
    }

    #[test]
    fn symbols_that_are_not_printable_utf8_are_unknown() {
        assert_eq!(decode_symbol(&abi_bytes(b"\xff\xfe(BAD")), None, "not UTF-8: refused, not decoded lossily");
        for bad in ["US\nDC", "US\u{0}DC", "USD\u{202E}C", "US\u{200B}DC", "\u{FEFF}USDC", "US\u{2028}DC", "US\u{E000}"] {
            assert_eq!(decode_symbol(&abi_string(bad)), None, "{bad:?}");
        }
        let mut padded = [0u8; 32];
        padded[..4].copy_from_slice(b"M\0KR");
        assert_eq!(decode_symbol(&B256::from(padded).abi_encode().into()), None, "a NUL inside a bytes32 symbol");
        padded[..4].copy_from_slice(b"\xffMKR");
        assert_eq!(decode_symbol(&B256::from(padded).abi_encode().into()), None);
    }

    #[test]
    fn names_are_bounded_like_symbols() {
        assert_eq!(decode_name(&abi_string(" USD Coin ")), Some("USD Coin".into()));
        assert_eq!(decode_name(&abi_string(&"n".repeat(64))), Some("n".repeat(64)));
        assert_eq!(decode_name(&abi_string(&"n".repeat(65))), None);
        assert_eq!(decode_name(&abi_bytes(b"\xc3\x28")), None);
    }

    #[test]
    fn decimals_above_36_are_unknown() {
        let word = |d: u64| -> Bytes { alloy::primitives::U256::from(d).abi_encode().into() };
        assert_eq!(decode_decimals(&word(18)), Some(18));
        assert_eq!(decode_decimals(&word(36)), Some(36));
        assert_eq!(decode_decimals(&word(37)), None);
        assert_eq!(decode_decimals(&word(255)), None);
        assert_eq!(decode_decimals(&word(256)), None);
        assert_eq!(decode_decimals(&Bytes::new()), None);
    }
}

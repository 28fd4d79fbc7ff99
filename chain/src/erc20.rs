//! The ERC-20 calls and event the service uses.

use alloy::primitives::{Bytes, FixedBytes};
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
}

/// `keccak256("Transfer(address,address,uint256)")`: topic 0 of ERC-20 and ERC-721 transfers
/// (ERC-721 indexes the token id too, so its log has four topics, ERC-20's three).
pub const TRANSFER_TOPIC: FixedBytes<32> = <IERC20::Transfer as alloy::sol_types::SolEvent>::SIGNATURE_HASH;

/// A token symbol from `symbol()`'s return data: an ABI string, or a NUL-padded `bytes32`.
pub fn decode_symbol(data: &Bytes) -> Option<String> {
    if let Ok(symbol) = IERC20::symbolCall::abi_decode_returns(data) {
        return Some(symbol);
    }
    let bytes = IERC20Bytes32Symbol::symbolCall::abi_decode_returns(data).ok()?;
    let text = std::str::from_utf8(bytes.as_slice()).ok()?.trim_end_matches('\0');
    (!text.is_empty()).then(|| text.to_string())
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
}

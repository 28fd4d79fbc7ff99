// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.20;

/// @title OwnedWallet
/// @notice Vestibule's test contract account: one owner key, EIP-1271 signature validation.
/// @dev A signature is valid for `hash` when it is a 65-byte (r, s, v) ECDSA signature of `hash`
///      itself by the owner, with v in {0, 1, 27, 28} and a low s. For a Sign-In With Ethereum
///      message, `hash` is the message's EIP-191 hash, so the owner's personal_sign signature is
///      the contract's signature. Test code only: it holds no funds and executes nothing.
contract OwnedWallet {
    /// @dev bytes4(keccak256("isValidSignature(bytes32,bytes)")), EIP-1271's magic value.
    bytes4 private constant MAGIC_VALUE = 0x1626ba7e;
    bytes4 private constant INVALID_SIGNATURE = 0xffffffff;
    /// @dev Half the secp256k1 group order: a larger s is the malleable twin of a valid one.
    uint256 private constant HALF_ORDER = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    address public immutable owner;

    constructor(address owner_) {
        require(owner_ != address(0), "OwnedWallet: zero owner");
        owner = owner_;
    }

    /// @notice EIP-1271: whether `signature` is this account's signature of `hash`.
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        if (signature.length != 65) return INVALID_SIGNATURE;
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (v < 27) v += 27;
        if (v != 27 && v != 28) return INVALID_SIGNATURE;
        if (uint256(s) > HALF_ORDER) return INVALID_SIGNATURE;
        address signer = ecrecover(hash, v, r, s);
        if (signer == address(0) || signer != owner) return INVALID_SIGNATURE;
        return MAGIC_VALUE;
    }
}

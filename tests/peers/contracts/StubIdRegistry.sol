// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.20;

/// @title StubIdRegistry
/// @notice Vestibule's stand-in for Farcaster's IdRegistry in tests: only `custodyOf(uint256)`,
///         the one read Sign In With Farcaster needs, with custody addresses any caller may set.
///         Its runtime code is placed at the IdRegistry's address with anvil_setCode (so there is
///         no constructor state: everything lives in the mapping). Test code only.
contract StubIdRegistry {
    mapping(uint256 => address) public custodyOf;

    function setCustody(uint256 fid, address custody) external {
        custodyOf[fid] = custody;
    }
}

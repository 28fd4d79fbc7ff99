// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.20;

import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";

/// @title DemoToken
/// @notice Vestibule's demo and test ERC-20: OpenZeppelin's ERC20 with a fixed supply minted to one
///         holder at deployment. The decimals are chosen at deployment, so tests can deploy a token
///         with 0 decimals (which balances leave out) next to an ordinary one.
contract DemoToken is ERC20 {
    uint8 private immutable _decimals;

    constructor(uint8 decimals_, address holder, uint256 supply) ERC20("Vestibule Demo Token", "VDT") {
        _decimals = decimals_;
        _mint(holder, supply);
    }

    function decimals() public view override returns (uint8) {
        return _decimals;
    }
}

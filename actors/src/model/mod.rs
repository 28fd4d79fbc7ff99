//! Value types shared by the machines: CAIP identifiers, networks, connectors and the host's options.

pub mod caip;
pub mod connector;
pub mod display;
pub mod evm;
pub mod networks;
pub mod options;

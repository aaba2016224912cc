//! Backends behind the component-manager traits: one module per provider.
//!
//! - [`sim`]: simulated devices in process (`flow dev`, tests).
//! - [`psm`]: power shelves through the Powershelf Manager over gRPC.

pub mod psm;
pub mod sim;

use std::sync::Arc;

pub use psm::{PmcCredentials, PsmManager, PsmSettings};
pub use sim::{SimConfig, SimDevices, SimEvent};

/// What building providers needs from outside: the one simulator every `sim` entry shares, and
/// where PSM is.
#[derive(Debug, Clone)]
pub struct Providers {
    pub sim: Arc<SimDevices>,
    pub psm: PsmSettings,
}

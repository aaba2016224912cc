//! Operation codes: the one closed set of names an operation goes by (`power_on`, `upgrade`, ...),
//! stored with each task, written on rules and their rack associations, and used as filters.
//! It depends on nothing, so rules, tasks and the API can all name operations by it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The code of an operation: one per operation the API offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationCode {
    PowerOn,
    PowerOff,
    ForcePowerOff,
    Restart,
    ForceRestart,
    WarmReset,
    ColdReset,
    BmcReset,
    Upgrade,
    /// A firmware upgrade to an older version an operator names.
    Downgrade,
    /// A firmware upgrade back to the version recorded before the last upgrade.
    Rollback,
    BringUp,
    Ingest,
}

impl OperationCode {
    /// Every code, in the order the API document and error messages list them.
    pub const ALL: [OperationCode; 13] = [
        Self::PowerOn,
        Self::PowerOff,
        Self::ForcePowerOff,
        Self::Restart,
        Self::ForceRestart,
        Self::WarmReset,
        Self::ColdReset,
        Self::BmcReset,
        Self::Upgrade,
        Self::Downgrade,
        Self::Rollback,
        Self::BringUp,
        Self::Ingest,
    ];

    /// The wire and storage form, the same string serde writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PowerOn => "power_on",
            Self::PowerOff => "power_off",
            Self::ForcePowerOff => "force_power_off",
            Self::Restart => "restart",
            Self::ForceRestart => "force_restart",
            Self::WarmReset => "warm_reset",
            Self::ColdReset => "cold_reset",
            Self::BmcReset => "bmc_reset",
            Self::Upgrade => "upgrade",
            Self::Downgrade => "downgrade",
            Self::Rollback => "rollback",
            Self::BringUp => "bring_up",
            Self::Ingest => "ingest",
        }
    }

    /// The code whose rules this one runs: a downgrade and a rollback are firmware upgrades to
    /// an older version, so they fall back to `upgrade`'s rules (rack association, default,
    /// built-in) where none is set for their own code; every other code is its own.
    pub fn rule_code(self) -> OperationCode {
        match self {
            Self::Downgrade | Self::Rollback => Self::Upgrade,
            other => other,
        }
    }

    /// Every code's wire form joined by `, `, for messages that list what is accepted.
    pub fn expected() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }
}

impl fmt::Display for OperationCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of parsing an unknown operation code; it names the accepted ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownOperation(pub String);

impl fmt::Display for UnknownOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown operation '{}' (expected one of: {})",
            self.0,
            OperationCode::expected()
        )
    }
}

impl std::error::Error for UnknownOperation {}

impl FromStr for OperationCode {
    type Err = UnknownOperation;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownOperation(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{assert_from_str_reads_as_str, assert_serde_writes_as_str};

    #[test]
    fn every_code_round_trips_through_serde_from_str_and_as_str() {
        assert_serde_writes_as_str(OperationCode::ALL, OperationCode::as_str);
        assert_from_str_reads_as_str(OperationCode::ALL, OperationCode::as_str);
        assert!("reboot".parse::<OperationCode>().is_err());
    }
}

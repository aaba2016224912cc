//! Expected vs actual: compare the inventory with what the component managers see, live
//! ([`validate`]) or periodically into the drift table ([`sync`]), never overwriting what an
//! operator wrote.
//!
//! A device is *missing* when its manager answered without it, *unexpected* when the manager
//! has it and Flow does not, *mismatched* when compared fields differ, and *unreachable* when
//! its manager (or the device) did not answer: an outage is never read as "everything missing".
//! A whole NVLink domain is *domain_mixed* when its racks run different firmware on trays of one
//! type (see [`domains`]).

pub mod compare;
pub mod domains;
pub mod expected;
pub mod observe;
pub mod sightings;
pub mod store;
pub mod sync;
pub mod validate;
pub mod walk;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::ComponentType;

/// How an observed device differs from the inventory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiffKind {
    /// Expected, but its manager does not have it.
    Missing,
    /// Its manager has it, Flow does not expect it.
    Unexpected,
    /// Both have it and compared fields differ.
    Mismatch,
    /// Its manager or the device did not answer.
    Unreachable,
    /// Its manager or the device answered but refused (credentials, discovery failed), or
    /// reported an external id another component holds (a `409` conflict naming both).
    Rejected,
    /// The racks of one NVLink domain run different firmware versions on trays of one type.
    DomainMixed,
}

impl DiffKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Unexpected => "unexpected",
            Self::Mismatch => "mismatch",
            Self::Unreachable => "unreachable",
            Self::Rejected => "rejected",
            Self::DomainMixed => "domain_mixed",
        }
    }

    pub fn parse(input: &str) -> Option<Self> {
        match input.trim().to_ascii_lowercase().as_str() {
            "missing" => Some(Self::Missing),
            "unexpected" => Some(Self::Unexpected),
            "mismatch" => Some(Self::Mismatch),
            "unreachable" => Some(Self::Unreachable),
            "rejected" => Some(Self::Rejected),
            "domain_mixed" => Some(Self::DomainMixed),
            _ => None,
        }
    }
}

/// One compared field whose values differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldDiff {
    pub field: String,
    pub expected: String,
    pub actual: String,
}

/// One difference between the inventory and a manager.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diff {
    pub kind: DiffKind,
    pub component_type: ComponentType,
    /// The Flow component; `None` for unexpected devices and a whole unreachable source.
    pub component_id: Option<Uuid>,
    pub rack_id: Option<Uuid>,
    /// The device's id in its manager, when known.
    pub external_id: Option<String>,
    /// The address the manager knows the device by (unexpected devices).
    pub address: Option<String>,
    pub fields: Vec<FieldDiff>,
    /// Why it is unreachable or was refused.
    pub message: Option<String>,
}

/// Counts of one comparison (or of recorded drift).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Expected devices their manager reports as expected.
    pub matched: u64,
    pub missing: u64,
    pub unexpected: u64,
    pub mismatch: u64,
    pub unreachable: u64,
    pub rejected: u64,
    /// NVLink domains (per component type) whose racks run different firmware.
    pub domain_mixed: u64,
    /// Expected devices whose type has no manager that can report what it sees.
    pub unchecked: u64,
}

impl Summary {
    /// Counts one diff.
    pub fn count(&mut self, kind: DiffKind) {
        match kind {
            DiffKind::Missing => self.missing += 1,
            DiffKind::Unexpected => self.unexpected += 1,
            DiffKind::Mismatch => self.mismatch += 1,
            DiffKind::Unreachable => self.unreachable += 1,
            DiffKind::Rejected => self.rejected += 1,
            DiffKind::DomainMixed => self.domain_mixed += 1,
        }
    }
}

/// The answer of a validation: counts and every difference.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validation {
    pub summary: Summary,
    pub diffs: Vec<Diff>,
}

impl Validation {
    /// Nothing compared yet; `unchecked` devices have no manager that reports what it sees.
    pub fn new(unchecked: u64) -> Self {
        Self {
            summary: Summary {
                unchecked,
                ..Summary::default()
            },
            diffs: Vec::new(),
        }
    }

    /// Adds one source's answer: its matched count and its differences.
    pub fn add(&mut self, matched: u64, diffs: Vec<Diff>) {
        self.summary.matched += matched;
        for diff in diffs {
            self.summary.count(diff.kind);
            self.diffs.push(diff);
        }
    }
}

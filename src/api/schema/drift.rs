//! Validation and drift bodies: expected vs actual, live or as the last sync recorded it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::common::ComponentTypeDoc;
use super::target::TargetSpecDoc;
use crate::domain::operation::TargetSpec;
use crate::drift::store::{DriftCounts, DriftRecord};
use crate::drift::{Diff, DiffKind, FieldDiff, Summary, Validation};
use crate::error::{Result, Violations};

/// What to validate: the components a target spec names, or (no body, or no `target_spec`)
/// every component, together with devices the managers have that Flow does not expect.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"target_spec": {"racks": [{"name": "g10", "component_types": ["powershelf"]}]}}))]
pub struct ValidationRequest {
    pub target_spec: Option<TargetSpecDoc>,
}

impl ValidationRequest {
    /// The validated targets; `None` means everything.
    pub fn into_domain(self) -> Result<Option<TargetSpec>> {
        let Some(spec) = self.target_spec else {
            return Ok(None);
        };
        let mut v = Violations::default();
        let targets = spec.to_domain(&mut v);
        if spec.racks.as_ref().is_some_and(Vec::is_empty) {
            v.push("target_spec.racks", "must name at least one rack");
        }
        if spec.components.as_ref().is_some_and(Vec::is_empty) {
            v.push("target_spec.components", "must name at least one component");
        }
        v.finish()?;
        Ok(Some(targets))
    }
}

/// `missing` (expected, its manager does not have it), `unexpected` (its manager has it, Flow
/// does not), `mismatch` (compared fields differ), `unreachable` (the manager or device did not
/// answer), `rejected` (it answered but refused: credentials, discovery failed; or it reported an
/// external id another component holds, a `409 conflict` naming both in `message`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DiffKindDoc {
    Missing,
    Unexpected,
    Mismatch,
    Unreachable,
    Rejected,
    /// An NVLink domain's racks run different firmware on trays of one type; `fields` has one
    /// entry per rack (`rack:<name>`, the versions it runs), `address` names the domain.
    #[serde(rename = "domain_mixed")]
    DomainMixed,
}

impl From<DiffKind> for DiffKindDoc {
    fn from(k: DiffKind) -> Self {
        match k {
            DiffKind::Missing => Self::Missing,
            DiffKind::Unexpected => Self::Unexpected,
            DiffKind::Mismatch => Self::Mismatch,
            DiffKind::Unreachable => Self::Unreachable,
            DiffKind::Rejected => Self::Rejected,
            DiffKind::DomainMixed => Self::DomainMixed,
        }
    }
}

impl From<DiffKindDoc> for DiffKind {
    fn from(k: DiffKindDoc) -> Self {
        match k {
            DiffKindDoc::Missing => Self::Missing,
            DiffKindDoc::Unexpected => Self::Unexpected,
            DiffKindDoc::Mismatch => Self::Mismatch,
            DiffKindDoc::Unreachable => Self::Unreachable,
            DiffKindDoc::Rejected => Self::Rejected,
            DiffKindDoc::DomainMixed => Self::DomainMixed,
        }
    }
}

/// A compared field: the inventory's value and the manager's.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FieldDiffDoc {
    #[schema(example = "firmware_version")]
    pub field: String,
    #[schema(example = "1.2.0")]
    pub expected: String,
    #[schema(example = "1.1.9")]
    pub actual: String,
}

impl From<FieldDiff> for FieldDiffDoc {
    fn from(f: FieldDiff) -> Self {
        Self {
            field: f.field,
            expected: f.expected,
            actual: f.actual,
        }
    }
}

/// One difference between the inventory and a component manager.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DiffDoc {
    pub kind: DiffKindDoc,
    /// The Flow component; absent for an unexpected device or a whole unreachable manager.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rack_id: Option<Uuid>,
    /// The device's id in its manager, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// The address the manager knows an unexpected device by (for a power shelf, its PMC MAC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    #[serde(rename = "type")]
    pub kind_of_component: ComponentTypeDoc,
    /// Differing fields (`mismatch` only).
    pub fields: Vec<FieldDiffDoc>,
    /// Why the manager or device is unreachable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl From<Diff> for DiffDoc {
    fn from(d: Diff) -> Self {
        Self {
            kind: d.kind.into(),
            component_id: d.component_id,
            rack_id: d.rack_id,
            external_id: d.external_id,
            address: d.address,
            kind_of_component: d.component_type.into(),
            fields: d.fields.into_iter().map(Into::into).collect(),
            message: d.message,
        }
    }
}

/// Counts of a validation.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct ValidationSummaryDoc {
    /// Expected components their manager reports as expected.
    #[serde(rename = "match")]
    pub matched: u64,
    pub missing: u64,
    pub unexpected: u64,
    pub mismatch: u64,
    pub unreachable: u64,
    pub rejected: u64,
    /// NVLink domains (per tray type) whose racks run different firmware.
    pub domain_mixed: u64,
    /// Expected components whose type has no manager that reports what it sees.
    pub unchecked: u64,
}

impl From<Summary> for ValidationSummaryDoc {
    fn from(s: Summary) -> Self {
        Self {
            matched: s.matched,
            missing: s.missing,
            unexpected: s.unexpected,
            mismatch: s.mismatch,
            unreachable: s.unreachable,
            rejected: s.rejected,
            domain_mixed: s.domain_mixed,
            unchecked: s.unchecked,
        }
    }
}

/// Expected vs actual, as the component managers answered just now.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({
    "summary": {"match": 5, "missing": 1, "unexpected": 1, "mismatch": 1, "unreachable": 0, "rejected": 0, "domain_mixed": 0, "unchecked": 1},
    "diffs": [
        {"kind": "missing", "component_id": "0192f3a0-0000-7000-8000-000000000005",
         "rack_id": "0192f3a0-0000-7000-8000-000000000001", "type": "powershelf", "fields": []},
        {"kind": "mismatch", "component_id": "0192f3a0-0000-7000-8000-000000000006",
         "rack_id": "0192f3a0-0000-7000-8000-000000000001", "external_id": "02:00:00:01:00:06", "type": "powershelf",
         "fields": [{"field": "firmware_version", "expected": "1.2.0", "actual": "1.1.9"}]},
        {"kind": "unexpected", "external_id": "02:00:00:09:00:01", "address": "02:00:00:09:00:01",
         "type": "powershelf", "fields": []}
    ]
}))]
pub struct ValidationDoc {
    pub summary: ValidationSummaryDoc,
    pub diffs: Vec<DiffDoc>,
}

impl From<Validation> for ValidationDoc {
    fn from(v: Validation) -> Self {
        Self {
            summary: v.summary.into(),
            diffs: v.diffs.into_iter().map(Into::into).collect(),
        }
    }
}

/// A recorded difference, as the last drift sync of its source left it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({
    "id": "0192f3a0-0000-7000-8000-0000000000d1", "source": "powershelf/psm", "kind": "mismatch",
    "component_id": "0192f3a0-0000-7000-8000-000000000006", "rack_id": "0192f3a0-0000-7000-8000-000000000001",
    "external_id": "02:00:00:01:00:06", "type": "powershelf",
    "fields": [{"field": "firmware_version", "expected": "1.2.0", "actual": "1.1.9"}],
    "stale": false, "since": "2026-11-30T14:00:00Z", "checked_at": "2026-11-30T14:05:00Z"
}))]
pub struct DriftDoc {
    pub id: Uuid,
    /// `<type>/<manager>`, e.g. `powershelf/psm`.
    pub source: String,
    #[serde(flatten)]
    pub diff: DiffDoc,
    /// The source did not answer the last sync; this is what it reported before.
    pub stale: bool,
    /// When this difference was first recorded.
    pub since: DateTime<Utc>,
    /// The last sync that confirmed it.
    pub checked_at: DateTime<Utc>,
}

impl From<DriftRecord> for DriftDoc {
    fn from(r: DriftRecord) -> Self {
        Self {
            id: r.id,
            source: r.source,
            diff: r.diff.into(),
            stale: r.stale,
            since: r.since,
            checked_at: r.checked_at,
        }
    }
}

/// Recorded drift of a rack's components, by kind (from the last drift sync).
#[derive(Debug, Clone, Copy, Default, Serialize, ToSchema)]
#[schema(example = json!({"missing": 0, "unexpected": 0, "mismatch": 1, "unreachable": 0, "rejected": 0, "stale": 0}))]
pub struct DriftSummaryDoc {
    pub missing: u64,
    pub unexpected: u64,
    pub mismatch: u64,
    pub unreachable: u64,
    pub rejected: u64,
    /// How many of these come from a manager that did not answer the last sync.
    pub stale: u64,
}

impl From<DriftCounts> for DriftSummaryDoc {
    fn from(c: DriftCounts) -> Self {
        Self {
            missing: c.missing,
            unexpected: c.unexpected,
            mismatch: c.mismatch,
            unreachable: c.unreachable,
            rejected: c.rejected,
            stale: c.stale,
        }
    }
}

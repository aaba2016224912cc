//! The NVLink-domain rule of firmware operations: every rack of a domain must run one firmware
//! recipe, so a firmware operation (upgrade, downgrade, rollback: the firmware task family)
//! whose racks cover only part of a domain is refused with `409` `domain_split`, naming each
//! domain and the racks left out, unless the request says `allow_split_domain`. An allowed split
//! is recorded in the audit log with the submission. Kept apart from the planner so the other
//! submission checks can change without touching it.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use serde::Serialize;
use uuid::Uuid;

use crate::db::entities::racks;
use crate::domain::operation::{OperationSpec, TaskType};
use crate::error::{Code, Error, FieldError, Result};
use crate::ids::{OperationRequestId, RackId};

/// A domain the targeted racks cover only in part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Split {
    pub domain_id: Uuid,
    pub domain: String,
    /// Names of the domain's live racks that are not targeted, in name order.
    pub left_out: Vec<String>,
}

/// The domains of `targeted` that those racks cover only in part.
pub async fn splits(db: &impl ConnectionTrait, targeted: &[RackId]) -> Result<Vec<Split>> {
    let ids: BTreeSet<Uuid> = targeted.iter().map(|r| Uuid::from(*r)).collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows = racks::Entity::find()
        .filter(racks::Column::Id.is_in(ids.iter().copied()))
        .filter(racks::Column::NvlDomainId.is_not_null())
        .all(db)
        .await?;
    let domains: BTreeSet<Uuid> = rows.iter().filter_map(|r| r.nvl_domain_id).collect();
    let mut out = Vec::new();
    for domain_id in domains {
        let members = crate::inventory::targets::live_racks_of(db, domain_id.into()).await?;
        let left_out: Vec<String> = members
            .into_iter()
            .filter(|m| !ids.contains(&m.id))
            .map(|m| m.name)
            .collect();
        if left_out.is_empty() {
            continue;
        }
        let name = crate::inventory::nvl::name_of(db, domain_id).await?;
        out.push(Split {
            domain_id,
            domain: name,
            left_out,
        });
    }
    Ok(out)
}

/// Whether the rule applies to the operation at all.
pub fn applies(spec: &OperationSpec) -> bool {
    spec.operation.task_type() == TaskType::FirmwareControl
}

/// Refuses a firmware operation that splits a domain unless the spec allows it; answers the
/// allowed splits (empty when nothing is split or the rule does not apply).
pub async fn check(
    db: &impl ConnectionTrait,
    spec: &OperationSpec,
    targeted: &[RackId],
) -> Result<Vec<Split>> {
    if !applies(spec) {
        return Ok(Vec::new());
    }
    let found = splits(db, targeted).await?;
    if found.is_empty() || spec.allow_split_domain {
        return Ok(found);
    }
    Err(refusal(&found))
}

/// The `409` `domain_split` answer: one error per domain, naming the racks left out.
pub fn refusal(found: &[Split]) -> Error {
    let names: Vec<&str> = found.iter().map(|s| s.domain.as_str()).collect();
    let errors = found
        .iter()
        .map(|s| {
            FieldError::new(
                format!("nvl_domains.{}", s.domain),
                format!("racks left out: {}", s.left_out.join(", ")),
            )
        })
        .collect();
    Error::Conflict {
        code: Code::DomainSplit,
        message: format!(
            "the firmware operation covers only part of NVLink domain {}; target every rack of \
             it (nvl_domains) or set allow_split_domain",
            names.join(", ")
        ),
        errors,
    }
}

/// Records an allowed split in the audit log under the submission's request id.
pub async fn audit_override(
    db: &impl ConnectionTrait,
    request_id: OperationRequestId,
    found: &[Split],
    now: DateTime<Utc>,
) -> Result<()> {
    if found.is_empty() {
        return Ok(());
    }
    let by_domain: BTreeMap<&str, &[String]> = found
        .iter()
        .map(|s| (s.domain.as_str(), s.left_out.as_slice()))
        .collect();
    let doc = serde_json::json!({
        "allow_split_domain": true,
        "split_domains": by_domain,
    });
    let change = crate::audit::Change::new("operation_request", request_id).after(Some(doc));
    crate::audit::record(db, change, now).await
}

/// The racks of `targeted` whose NVLink domain `targeted` covers whole (or that are in none):
/// a schedule submits its racks one by one, and those may go with `allow_split_domain`, since
/// the schedule as a whole leaves none of their domain out.
pub async fn covered_whole(
    db: &impl ConnectionTrait,
    targeted: &[RackId],
) -> Result<BTreeSet<RackId>> {
    let split: BTreeSet<Uuid> = splits(db, targeted)
        .await?
        .into_iter()
        .map(|s| s.domain_id)
        .collect();
    let rows = racks::Entity::find()
        .filter(racks::Column::Id.is_in(targeted.iter().map(|r| Uuid::from(*r))))
        .all(db)
        .await?;
    Ok(rows
        .into_iter()
        .filter(|r| r.nvl_domain_id.is_none_or(|d| !split.contains(&d)))
        .map(|r| RackId::from(r.id))
        .collect())
}

/// [`check`] of the racks of a resolved request.
pub async fn check_work(
    db: &impl ConnectionTrait,
    spec: &OperationSpec,
    work: &[crate::inventory::targets::RackWork],
) -> Result<Vec<Split>> {
    let racks: Vec<RackId> = work.iter().map(|r| r.rack_id).collect();
    check(db, spec, &racks).await
}

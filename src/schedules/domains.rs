//! NVLink domains in a schedule's scope. A domain target is kept as its racks, each scope row
//! naming the domain. At every fire, inside the claim's transaction, those rows are brought in
//! line with the domain's live racks at that moment: racks attached since then join (every
//! component), racks detached or deleted leave. A schedule on a domain acts on the domain as it
//! is when it fires, with each rack's overlap check kept on its own row.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use sea_orm::ConnectionTrait;
use uuid::Uuid;

use super::model::{ResolvedRack, Scope};
use super::store;
use crate::audit::{self, Change};
use crate::domain::operation::DomainRef;
use crate::error::{Error, Result, Violations};
use crate::ids::{NvlDomainId, RackId, ScheduleId};
use crate::inventory::targets::{domain_racks, live_racks_of};

/// The live racks of each domain asked for; an unknown or empty domain is a field error.
pub(super) async fn resolve(
    db: &impl ConnectionTrait,
    domains: &[DomainRef],
    v: &mut Violations,
) -> Result<Vec<ResolvedRack>> {
    let mut out = Vec::new();
    for (i, domain) in domains.iter().enumerate() {
        let field = format!("target_spec.nvl_domains[{i}]");
        let racks = match domain_racks(db, domain).await {
            Err(Error::NotFound { .. }) => {
                v.push(field, format!("nvl domain {domain} not found"));
                continue;
            }
            other => other?,
        };
        if racks.is_empty() {
            v.push(field, format!("nvl domain {domain} has no live racks"));
        }
        out.extend(racks.into_iter().map(|r| ResolvedRack {
            rack_id: r.id.into(),
            component_types: Vec::new(),
            nvl_domain_id: r.nvl_domain_id.map(Into::into),
        }));
    }
    Ok(out)
}

/// Brings the domain rows of `schedule`'s scope in line with their domains' live racks (call
/// inside the fire's claim). Racks already in scope by name stay as they are. Audited when
/// anything changed.
pub(super) async fn follow(
    db: &impl ConnectionTrait,
    schedule: ScheduleId,
    now: DateTime<Utc>,
) -> Result<()> {
    let scopes = store::scopes(db, schedule).await?;
    let domains: HashSet<NvlDomainId> = scopes.iter().filter_map(|s| s.nvl_domain_id).collect();
    let (mut joined, mut left) = (Vec::new(), Vec::new());
    for domain in domains {
        let live: Vec<RackId> = live_racks_of(db, domain)
            .await?
            .into_iter()
            .map(|r| r.id.into())
            .collect();
        for scope in scopes.iter().filter(|s| s.nvl_domain_id == Some(domain)) {
            if !live.contains(&scope.rack_id) {
                store::delete_scope(db, scope.id).await?;
                left.push(scope.rack_id);
            }
        }
        for rack in live {
            if !scopes.iter().any(|s| s.rack_id == rack) {
                store::insert_scope(db, &joined_scope(schedule, rack, domain, now)).await?;
                joined.push(rack);
            }
        }
    }
    if joined.is_empty() && left.is_empty() {
        return Ok(());
    }
    let after = serde_json::json!({"scope_racks_joined": joined, "scope_racks_left": left});
    audit::record(
        db,
        Change::new("schedule", schedule).after(Some(after)),
        now,
    )
    .await
}

fn joined_scope(
    schedule: ScheduleId,
    rack: RackId,
    domain: NvlDomainId,
    now: DateTime<Utc>,
) -> Scope {
    Scope {
        id: Uuid::now_v7(),
        schedule_id: schedule,
        rack_id: rack,
        component_types: Vec::new(),
        last_task_id: None,
        nvl_domain_id: Some(domain),
        created_at: now,
    }
}

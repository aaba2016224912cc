//! Holds: a workload scheduler's (Slurm prolog, a Kubernetes controller) "a job runs here, do
//! not touch" on a rack, a component or an NVLink domain. A hold counts until it is deleted or
//! its `expires_at` passes: an expired hold stops counting by itself, nothing has to sweep it.
//! Every create and delete is audited in its own transaction.

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::live::{component_row, domain_row, resolve_rack};
use super::rack_lock;
use crate::audit::{self, Change};
use crate::db::entities::{components, holds};
use crate::db::page::{Count, Page, count_matches, decode_key, encode_key};
use crate::error::{Error, Result};
use crate::ids::{ComponentId, HoldId, NvlDomainId, RackId};

/// What a hold names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldTarget {
    Rack(RackId),
    Component(ComponentId),
    NvlDomain(NvlDomainId),
}

/// A target as a caller names it, before it is looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoldRef {
    /// A rack by id or name.
    Rack(String),
    Component(Uuid),
    /// An NVLink domain by id or name.
    NvlDomain(String),
}

/// A stored hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    pub id: HoldId,
    pub target: HoldTarget,
    pub owner: String,
    pub reason: String,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
}

impl Hold {
    /// Whether the hold still counts at `now`.
    pub fn is_active(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_none_or(|at| at > now)
    }
}

/// A hold to create.
#[derive(Debug, Clone)]
pub struct NewHold {
    pub target: HoldRef,
    pub owner: String,
    pub reason: String,
    pub expires_at: Option<DateTime<Utc>>,
}

/// Which holds a list shows; every filter is optional.
#[derive(Debug, Clone, Default)]
pub struct HoldFilter {
    /// Holds on this rack or on one of its components.
    pub rack: Option<RackId>,
    pub component: Option<ComponentId>,
    pub owner: Option<String>,
    /// `true`: only those that count now; `false`: only expired ones.
    pub active: Option<bool>,
}

impl From<holds::Model> for Hold {
    fn from(m: holds::Model) -> Self {
        let target = match (m.rack_id, m.component_id, m.nvl_domain_id) {
            (Some(rack), _, _) => HoldTarget::Rack(rack.into()),
            (None, Some(component), _) => HoldTarget::Component(component.into()),
            (None, None, domain) => HoldTarget::NvlDomain(domain.unwrap_or_default().into()),
        };
        Self {
            id: m.id.into(),
            target,
            owner: m.owner,
            reason: m.reason,
            created_by: m.created_by,
            created_at: m.created_at,
            expires_at: m.expires_at,
        }
    }
}

/// Looks the target up: a rack, component or domain that does not exist is a 404 naming it.
async fn resolve(db: &impl ConnectionTrait, target: &HoldRef) -> Result<HoldTarget> {
    Ok(match target {
        HoldRef::Rack(id_or_name) => {
            HoldTarget::Rack(resolve_rack(db, id_or_name).await?.id.into())
        }
        HoldRef::Component(id) => {
            let row = component_row(db, *id)
                .await?
                .ok_or_else(|| Error::not_found("component", id))?;
            HoldTarget::Component(row.id.into())
        }
        HoldRef::NvlDomain(id_or_name) => {
            let row = domain_row(db, id_or_name)
                .await?
                .ok_or_else(|| Error::not_found("nvl domain", id_or_name))?;
            HoldTarget::NvlDomain(row.id.into())
        }
    })
}

/// Creates a hold (audited); `expires_at` must be after `now` (a 400 on `expires_at`).
pub async fn create(db: &DatabaseConnection, new: &NewHold, now: DateTime<Utc>) -> Result<Hold> {
    if new.expires_at.is_some_and(|at| at <= now) {
        return Err(Error::invalid("expires_at", "must be in the future"));
    }
    let txn = crate::db::begin_write(db).await?;
    let target = resolve(&txn, &new.target).await?;
    lock_held(&txn, target).await?;
    let hold = Hold {
        id: HoldId::new(),
        target,
        owner: new.owner.clone(),
        reason: new.reason.clone(),
        created_by: audit::actor(),
        created_at: now,
        expires_at: new.expires_at,
    };
    let (rack, component, domain) = match target {
        HoldTarget::Rack(id) => (Some(id.uuid()), None, None),
        HoldTarget::Component(id) => (None, Some(id.uuid()), None),
        HoldTarget::NvlDomain(id) => (None, None, Some(id.uuid())),
    };
    holds::Entity::insert(holds::ActiveModel {
        id: Set(hold.id.uuid()),
        rack_id: Set(rack),
        component_id: Set(component),
        nvl_domain_id: Set(domain),
        owner: Set(hold.owner.clone()),
        reason: Set(hold.reason.clone()),
        created_by: Set(hold.created_by.clone()),
        created_at: Set(now),
        expires_at: Set(hold.expires_at),
    })
    .exec_without_returning(&txn)
    .await?;
    let after = audit::snapshot::<holds::Entity>(&txn, hold.id.uuid()).await?;
    audit::record(&txn, Change::new("hold", hold.id).after(after), now).await?;
    txn.commit().await?;
    Ok(hold)
}

/// Takes the lock of every rack the hold stands on, so a submission deciding one of them either
/// sees this hold or has written its task before it exists.
async fn lock_held(db: &impl ConnectionTrait, target: HoldTarget) -> Result<()> {
    match target {
        HoldTarget::Rack(id) => rack_lock::lock(db, id).await,
        HoldTarget::Component(id) => rack_lock::lock_rack_of(db, id).await,
        HoldTarget::NvlDomain(id) => rack_lock::lock_domain(db, id).await,
    }
}

/// One hold, expired or not.
pub async fn get(db: &impl ConnectionTrait, id: HoldId) -> Result<Hold> {
    holds::Entity::find_by_id(id.uuid())
        .one(db)
        .await?
        .map(Into::into)
        .ok_or_else(|| Error::not_found("hold", id))
}

/// Deletes a hold (audited). With `only_by`, only a hold created by that actor is deleted (an
/// operator's own): the condition is part of the `DELETE`, so it is one compare-and-delete.
/// Answers whether a row went; a missing hold is a 404.
pub async fn delete(
    db: &DatabaseConnection,
    id: HoldId,
    only_by: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool> {
    let txn = crate::db::begin_write(db).await?;
    let before = audit::snapshot::<holds::Entity>(&txn, id.uuid())
        .await?
        .ok_or_else(|| Error::not_found("hold", id))?;
    let mut delete = holds::Entity::delete_many().filter(holds::Column::Id.eq(id.uuid()));
    if let Some(actor) = only_by {
        delete = delete.filter(holds::Column::CreatedBy.eq(actor));
    }
    if delete.exec(&txn).await?.rows_affected == 0 {
        return Ok(false);
    }
    audit::record(&txn, Change::new("hold", id).before(Some(before)), now).await?;
    txn.commit().await?;
    Ok(true)
}

/// One page of holds in creation order (ids are time-ordered), filtered.
pub async fn list(
    db: &impl ConnectionTrait,
    filter: &HoldFilter,
    limit: u64,
    cursor: Option<&str>,
    count: Count,
    now: DateTime<Utc>,
) -> Result<Page<Hold>> {
    let mut cond = Condition::all();
    if let Some(rack) = filter.rack {
        let ids: Vec<Uuid> = components::Entity::find()
            .select_only()
            .column(components::Column::Id)
            .filter(components::Column::RackId.eq(rack.uuid()))
            .into_tuple()
            .all(db)
            .await?;
        cond = cond.add(
            Condition::any()
                .add(holds::Column::RackId.eq(rack.uuid()))
                .add(holds::Column::ComponentId.is_in(ids)),
        );
    }
    if let Some(component) = filter.component {
        cond = cond.add(holds::Column::ComponentId.eq(component.uuid()));
    }
    if let Some(owner) = &filter.owner {
        cond = cond.add(holds::Column::Owner.eq(owner.clone()));
    }
    match filter.active {
        Some(true) => cond = cond.add(active_at(now)),
        Some(false) => cond = cond.add(holds::Column::ExpiresAt.lte(now)),
        None => {}
    }
    let query = holds::Entity::find().filter(cond);
    let total = count_matches(db, &query, count).await?;
    let query = match cursor.filter(|c| !c.is_empty()) {
        Some(c) => query.filter(holds::Column::Id.gt(decode_key::<Uuid>(c)?)),
        None => query,
    };
    let rows = query
        .order_by_asc(holds::Column::Id)
        .limit(limit + 1)
        .all(db)
        .await?;
    let items = rows.into_iter().map(Hold::from).collect();
    Ok(Page::from_rows_by(items, limit, total, |h: &Hold| {
        encode_key(&h.id.uuid())
    }))
}

/// Holds that count at `now`: no expiry, or one still ahead.
fn active_at(now: DateTime<Utc>) -> Condition {
    Condition::any()
        .add(holds::Column::ExpiresAt.is_null())
        .add(holds::Column::ExpiresAt.gt(now))
}

/// The holds counting at `now` on any of these racks, components or domains.
pub async fn active_on(
    db: &impl ConnectionTrait,
    racks: &[RackId],
    components: &[ComponentId],
    domains: &[NvlDomainId],
    now: DateTime<Utc>,
) -> Result<Vec<Hold>> {
    let on = Condition::any()
        .add(holds::Column::RackId.is_in(racks.iter().map(|r| r.uuid())))
        .add(holds::Column::ComponentId.is_in(components.iter().map(|c| c.uuid())))
        .add(holds::Column::NvlDomainId.is_in(domains.iter().map(|d| d.uuid())));
    let rows = holds::Entity::find()
        .filter(on)
        .filter(active_at(now))
        .order_by_asc(holds::Column::Id)
        .all(db)
        .await?;
    Ok(rows.into_iter().map(Into::into).collect())
}

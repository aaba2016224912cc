//! Health reports: what other systems (a health monitor, a fleet checker) say about one
//! component, one report per source. A `PUT` replaces that source's whole report; an alert
//! classified [`PREVENT_OPERATIONS`] makes the component not ready for operations. Other
//! classifications are kept as given (other systems define their own) but block nothing.
//! Every change is audited in its own transaction.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter,
    QueryOrder,
};
use serde::{Deserialize, Serialize};

use super::live::component_row;
use crate::audit::{self, Change};
use crate::db::entities::health_reports;
use crate::error::{Error, Result};
use crate::ids::ComponentId;

/// The classification that makes a component not ready.
pub const PREVENT_OPERATIONS: &str = "PreventOperations";

/// One alert of a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Alert {
    pub id: String,
    pub message: String,
    #[serde(default)]
    pub classifications: Vec<String>,
}

impl Alert {
    /// Whether this alert stops operations on its component.
    pub fn prevents_operations(&self) -> bool {
        self.classifications.iter().any(|c| c == PREVENT_OPERATIONS)
    }
}

/// One source's report on one component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthReport {
    pub component_id: ComponentId,
    pub source: String,
    pub alerts: Vec<Alert>,
    pub updated_by: String,
    pub updated_at: DateTime<Utc>,
}

impl From<health_reports::Model> for HealthReport {
    fn from(m: health_reports::Model) -> Self {
        Self {
            component_id: m.component_id.into(),
            source: m.source,
            // The column is only ever written from `Vec<Alert>`.
            alerts: serde_json::from_value(m.alerts).unwrap_or_default(),
            updated_by: m.updated_by,
            updated_at: m.updated_at,
        }
    }
}

async fn live_component(db: &impl ConnectionTrait, id: ComponentId) -> Result<()> {
    component_row(db, id.uuid())
        .await?
        .map(|_| ())
        .ok_or_else(|| Error::not_found("component", id))
}

fn key(component: ComponentId, source: &str) -> String {
    format!("{component}/{source}")
}

async fn row(
    db: &impl ConnectionTrait,
    component: ComponentId,
    source: &str,
) -> Result<Option<health_reports::Model>> {
    Ok(
        health_reports::Entity::find_by_id((component.uuid(), source.to_string()))
            .one(db)
            .await?,
    )
}

fn doc(m: &health_reports::Model) -> serde_json::Value {
    serde_json::to_value(HealthReport::from(m.clone())).unwrap_or_default()
}

/// Replaces `source`'s report on the component (one upsert); answers the stored report and
/// whether it is new. A component that does not exist is a 404.
pub async fn put(
    db: &DatabaseConnection,
    component: ComponentId,
    source: &str,
    alerts: &[Alert],
    now: DateTime<Utc>,
) -> Result<(HealthReport, bool)> {
    let txn = crate::db::begin_write(db).await?;
    live_component(&txn, component).await?;
    // A new PreventOperations alert must not slip past a submission deciding this rack.
    super::rack_lock::lock_rack_of(&txn, component).await?;
    let before = row(&txn, component, source).await?;
    let alerts_json = serde_json::to_value(alerts).map_err(|e| Error::Internal(e.to_string()))?;
    health_reports::Entity::insert(health_reports::ActiveModel {
        component_id: Set(component.uuid()),
        source: Set(source.to_string()),
        alerts: Set(alerts_json),
        updated_by: Set(audit::actor()),
        updated_at: Set(now),
    })
    .on_conflict(
        OnConflict::columns([
            health_reports::Column::ComponentId,
            health_reports::Column::Source,
        ])
        .update_columns([
            health_reports::Column::Alerts,
            health_reports::Column::UpdatedBy,
            health_reports::Column::UpdatedAt,
        ])
        .to_owned(),
    )
    .exec_without_returning(&txn)
    .await?;
    let after = row(&txn, component, source)
        .await?
        .ok_or_else(|| Error::Internal("a health report vanished in its transaction".into()))?;
    let change = Change::new("health_report", key(component, source))
        .before(before.as_ref().map(doc))
        .after(Some(doc(&after)));
    audit::record(&txn, change, now).await?;
    txn.commit().await?;
    Ok((after.into(), before.is_none()))
}

/// Every report on the component, by source; a component that does not exist is a 404.
pub async fn list(db: &impl ConnectionTrait, component: ComponentId) -> Result<Vec<HealthReport>> {
    live_component(db, component).await?;
    of(db, &[component]).await
}

/// Every report on any of `components`.
pub async fn of(
    db: &impl ConnectionTrait,
    components: &[ComponentId],
) -> Result<Vec<HealthReport>> {
    let rows = health_reports::Entity::find()
        .filter(health_reports::Column::ComponentId.is_in(components.iter().map(|c| c.uuid())))
        .order_by_asc(health_reports::Column::ComponentId)
        .order_by_asc(health_reports::Column::Source)
        .all(db)
        .await?;
    Ok(rows.into_iter().map(Into::into).collect())
}

/// Removes `source`'s report (audited); a missing report is a 404 naming it.
pub async fn delete(
    db: &DatabaseConnection,
    component: ComponentId,
    source: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let txn = crate::db::begin_write(db).await?;
    let before = row(&txn, component, source)
        .await?
        .ok_or_else(|| Error::not_found("health report", key(component, source)))?;
    health_reports::Entity::delete_many()
        .filter(health_reports::Column::ComponentId.eq(component.uuid()))
        .filter(health_reports::Column::Source.eq(source))
        .exec(&txn)
        .await?;
    let change = Change::new("health_report", key(component, source)).before(Some(doc(&before)));
    audit::record(&txn, change, now).await?;
    txn.commit().await?;
    Ok(())
}

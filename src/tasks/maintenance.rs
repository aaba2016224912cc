//! Maintenance marking: while a task runs, the components it operates on are under planned
//! work. Component and rack reads answer `in_maintenance` with the task, the console hatches
//! them, and `/metrics` exposes `flow_component_in_maintenance` for Alertmanager to inhibit
//! alerts on them. Nothing is stored for it: the running tasks are the record, so the mark
//! ends exactly when the task does, however it ends.

use std::collections::HashMap;

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};

use super::model::{TaskComponent, TaskStatus};
use super::store::corrupt;
use crate::db::entities::{components, racks, tasks};
use crate::error::Result;
use crate::ids::{ComponentId, RackId, TaskId};

/// A running task and the components it operates on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Running {
    pub task_id: TaskId,
    pub rack_id: RackId,
    pub components: Vec<ComponentId>,
}

/// The running tasks on these racks (every rack when `racks` is `None`), oldest first.
pub async fn running(db: &impl ConnectionTrait, racks: Option<&[RackId]>) -> Result<Vec<Running>> {
    if racks.is_some_and(<[RackId]>::is_empty) {
        return Ok(Vec::new());
    }
    let mut query = tasks::Entity::find()
        .select_only()
        .columns([
            tasks::Column::Id,
            tasks::Column::RackId,
            tasks::Column::Components,
        ])
        .filter(tasks::Column::Status.eq(TaskStatus::Running.as_str()))
        .order_by_asc(tasks::Column::CreatedAt)
        .order_by_asc(tasks::Column::Id);
    if let Some(racks) = racks {
        query = query.filter(tasks::Column::RackId.is_in(racks.iter().copied()));
    }
    let rows: Vec<(uuid::Uuid, uuid::Uuid, serde_json::Value)> = query.into_tuple().all(db).await?;
    rows.into_iter()
        .map(|(id, rack, components)| {
            let components: Vec<TaskComponent> =
                serde_json::from_value(components).map_err(|e| corrupt("components", id, e))?;
            Ok(Running {
                task_id: id.into(),
                rack_id: rack.into(),
                components: components.into_iter().map(|c| c.id).collect(),
            })
        })
        .collect()
}

/// Each component under a running task, with that task (the oldest, when two run on it).
pub fn by_component(running: &[Running]) -> HashMap<ComponentId, TaskId> {
    let mut out = HashMap::new();
    for task in running {
        for component in &task.components {
            out.entry(*component).or_insert(task.task_id);
        }
    }
    out
}

/// One component under maintenance, as `flow_component_in_maintenance` labels it: its rack's
/// name, its own name, its type and its serial number (what alerts from other systems carry).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Labels {
    pub rack: String,
    pub component: String,
    pub kind: String,
    pub serial: String,
}

impl Labels {
    /// In the metric's label order: `rack`, `component`, `type`, `serial`.
    pub fn values(&self) -> [&str; 4] {
        [&self.rack, &self.component, &self.kind, &self.serial]
    }
}

/// Every component under a running task now, labelled for `/metrics`.
pub async fn labels(db: &impl ConnectionTrait) -> Result<Vec<Labels>> {
    let under = by_component(&running(db, None).await?);
    if under.is_empty() {
        return Ok(Vec::new());
    }
    let found = components::Entity::find()
        .filter(components::Column::Id.is_in(under.keys().map(|c| uuid::Uuid::from(*c))))
        .all(db)
        .await?;
    let rack_ids: Vec<uuid::Uuid> = found.iter().filter_map(|c| c.rack_id).collect();
    let names: HashMap<uuid::Uuid, String> = racks::Entity::find()
        .filter(racks::Column::Id.is_in(rack_ids))
        .all(db)
        .await?
        .into_iter()
        .map(|r| (r.id, r.name))
        .collect();
    let mut out: Vec<Labels> = found
        .into_iter()
        .map(|c| Labels {
            rack: c
                .rack_id
                .and_then(|r| names.get(&r).cloned())
                .unwrap_or_default(),
            component: c.name,
            kind: c.r#type,
            serial: c.serial_number,
        })
        .collect();
    out.sort();
    Ok(out)
}

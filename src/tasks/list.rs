//! The task list: filters and newest-first keyset pages.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
    Select,
};
use uuid::Uuid;

use super::model::{Task, TaskStatus};
use super::store::{self, task_from_row};
use crate::db::entities::{task_steps, tasks};
use crate::db::page::{Count, Page, count_matches, decode_key, encode_key};
use crate::domain::code::OperationCode;
use crate::error::Result;
use crate::ids::{ComponentId, OperationRequestId, RackId};

/// Filters of the task list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFilter {
    pub rack_id: Option<RackId>,
    pub component_id: Option<ComponentId>,
    pub statuses: Vec<TaskStatus>,
    pub operation: Option<OperationCode>,
    pub request_id: Option<OperationRequestId>,
}

/// One page of tasks, newest first; the cursor is the last task's `(created_at, id)`.
pub async fn list(
    db: &impl ConnectionTrait,
    filter: &TaskFilter,
    limit: u64,
    cursor: Option<&str>,
    count: Count,
) -> Result<Page<Task>> {
    let mut query = filtered(filter);
    let total = count_matches(db, &query, count).await?;
    if let Some((at, id)) = cursor
        .filter(|c| !c.is_empty())
        .map(decode_key)
        .transpose()?
    {
        query = query.filter(older_than(at, id));
    }
    let rows = query
        .order_by_desc(tasks::Column::CreatedAt)
        .order_by_desc(tasks::Column::Id)
        .limit(limit + 1)
        .all(db)
        .await?;
    let items: Vec<Task> = rows.into_iter().map(task_from_row).collect::<Result<_>>()?;
    Ok(Page::from_rows_by(items, limit, total, |task| {
        encode_key(&(task.created_at, task.id))
    }))
}

/// The task rows the filter selects, in no order yet.
fn filtered(filter: &TaskFilter) -> Select<tasks::Entity> {
    let mut query = store::find();
    if let Some(rack) = filter.rack_id {
        query = query.filter(tasks::Column::RackId.eq(rack));
    }
    if let Some(request) = filter.request_id {
        query = query.filter(tasks::Column::RequestId.eq(request));
    }
    if !filter.statuses.is_empty() {
        query =
            query.filter(tasks::Column::Status.is_in(filter.statuses.iter().map(|s| s.as_str())));
    }
    if let Some(op) = filter.operation {
        query = query.filter(tasks::Column::Operation.eq(op.as_str()));
    }
    if let Some(component) = filter.component_id {
        query = query.filter(drives(component));
    }
    query
}

/// Tasks that drive the component. Steps index every component a dispatched task drives;
/// waiting tasks have no steps yet, so their component list is matched as text (a UUID cannot
/// occur by accident).
fn drives(component: ComponentId) -> Condition {
    let by_step = sea_orm::sea_query::Query::select()
        .column(task_steps::Column::TaskId)
        .from(task_steps::Entity)
        .and_where(Expr::col(task_steps::Column::ComponentId).eq(component))
        .to_owned();
    let as_text = Expr::col(tasks::Column::Components)
        .cast_as("text")
        .like(format!("%{component}%"));
    Condition::any()
        .add(tasks::Column::Id.in_subquery(by_step))
        .add(as_text)
}

/// Tasks after the cursor in the newest-first order. The leading `created_at <= cursor` bound
/// is implied by the rest, but only it lets the index seek to the cursor.
fn older_than(at: DateTime<Utc>, id: Uuid) -> Condition {
    Condition::all().add(tasks::Column::CreatedAt.lte(at)).add(
        Condition::any().add(tasks::Column::CreatedAt.lt(at)).add(
            Condition::all()
                .add(tasks::Column::CreatedAt.eq(at))
                .add(tasks::Column::Id.lt(id)),
        ),
    )
}

/// The names of `ids`' racks, for answers that name a task's rack; a purged rack has none.
/// Soft-deleted racks keep their name, so old tasks still say which rack they ran on.
pub async fn rack_names(
    db: &impl ConnectionTrait,
    ids: &[RackId],
) -> Result<std::collections::HashMap<RackId, String>> {
    if ids.is_empty() {
        return Ok(Default::default());
    }
    let rows: Vec<(Uuid, String)> = crate::db::entities::racks::Entity::find()
        .select_only()
        .column(crate::db::entities::racks::Column::Id)
        .column(crate::db::entities::racks::Column::Name)
        .filter(crate::db::entities::racks::Column::Id.is_in(ids.iter().copied()))
        .into_tuple()
        .all(db)
        .await?;
    Ok(rows.into_iter().map(|(id, n)| (id.into(), n)).collect())
}

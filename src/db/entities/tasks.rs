//! `tasks` table.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "tasks")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub request_id: Uuid,
    pub operation: String,
    pub task_type: String,
    pub spec: Json,
    pub description: Option<String>,
    pub rack_id: Uuid,
    pub components: Json,
    pub status: String,
    pub message: String,
    pub plan: Option<Json>,
    pub conflict_strategy: String,
    pub queue_expires_at: Option<DateTimeUtc>,
    pub workflow_run_id: Option<String>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    pub started_at: Option<DateTimeUtc>,
    pub finished_at: Option<DateTimeUtc>,
    pub requested_rule_id: Option<Uuid>,
    pub rule_id: Option<Uuid>,
    pub rule_version: Option<i32>,
    pub created_by: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

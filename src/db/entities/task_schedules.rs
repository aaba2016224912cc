//! `task_schedules` table.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "task_schedules")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub name: String,
    pub spec_type: String,
    pub spec: String,
    pub timezone: String,
    pub operation: Json,
    pub overlap_policy: String,
    pub enabled: bool,
    pub next_run_at: Option<DateTimeUtc>,
    pub last_run_at: Option<DateTimeUtc>,
    pub revision: i64,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

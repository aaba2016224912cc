//! `component_drifts` table.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "component_drifts")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub source: String,
    pub component_type: String,
    pub kind: String,
    pub component_id: Option<Uuid>,
    pub external_id: Option<String>,
    pub address: Option<String>,
    pub fields: Json,
    pub message: Option<String>,
    pub stale: bool,
    pub since: DateTimeUtc,
    pub checked_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

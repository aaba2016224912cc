//! `health_reports` table.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "health_reports")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub component_id: Uuid,
    #[sea_orm(primary_key, auto_increment = false)]
    pub source: String,
    pub alerts: Json,
    pub updated_by: String,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

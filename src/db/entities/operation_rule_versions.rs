//! `operation_rule_versions` table: every version of every rule, the current one included.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "operation_rule_versions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub rule_id: Uuid,
    #[sea_orm(primary_key, auto_increment = false)]
    pub version: i32,
    pub name: String,
    pub description: Option<String>,
    pub definition: Json,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

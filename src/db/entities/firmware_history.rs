//! `firmware_history` table: the version each component ran before its last upgrade.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "firmware_history")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub component_id: Uuid,
    pub previous_version: String,
    pub version: String,
    pub recorded_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

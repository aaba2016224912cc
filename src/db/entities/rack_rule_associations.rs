//! `rack_rule_associations` table: the rule a rack runs for an operation.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "rack_rule_associations")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub rack_id: Uuid,
    #[sea_orm(primary_key, auto_increment = false)]
    pub operation: String,
    pub rule_id: Uuid,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

//! `console_sessions` table.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "console_sessions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id_hash: String,
    pub token_id: Option<Uuid>,
    pub actor: String,
    pub roles: String,
    pub created_at: DateTimeUtc,
    pub last_seen_at: DateTimeUtc,
    pub expires_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

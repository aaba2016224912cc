//! `audit_log` table.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "audit_log")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub at: DateTimeUtc,
    pub actor: String,
    pub role: Option<String>,
    pub method: String,
    pub route: String,
    pub resource_type: Option<String>,
    pub resource_id: Option<String>,
    pub status: Option<i32>,
    pub request_id: Option<String>,
    pub before: Option<Json>,
    pub after: Option<Json>,
    pub client_addr: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

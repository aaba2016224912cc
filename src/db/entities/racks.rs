//! `racks` table.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "racks")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub name: String,
    pub manufacturer: String,
    pub manufacturer_key: String,
    pub serial_number: String,
    pub model: Option<String>,
    pub description: Option<String>,
    pub region: Option<String>,
    pub datacenter: Option<String>,
    pub room: Option<String>,
    pub position: Option<String>,
    pub nvl_domain_id: Option<Uuid>,
    pub revision: i64,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    pub deleted_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}

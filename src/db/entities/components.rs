//! `components` table.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "components")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub rack_id: Option<Uuid>,
    pub r#type: String,
    pub name: String,
    pub manufacturer: String,
    pub manufacturer_key: String,
    pub model: Option<String>,
    pub serial_number: String,
    pub firmware_version: Option<String>,
    pub description: Option<String>,
    pub slot_id: Option<i64>,
    pub tray_idx: Option<i64>,
    pub host_id: Option<i64>,
    pub external_id: Option<String>,
    pub power_state: Option<String>,
    pub observed_firmware_version: Option<String>,
    pub last_seen_at: Option<DateTimeUtc>,
    pub revision: i64,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    pub deleted_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(has_many = "super::bmcs::Entity")]
    Bmcs,
}

impl Related<super::bmcs::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Bmcs.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}

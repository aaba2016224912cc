//! Inventory tables: NVL domains, racks, components and their BMCs, with soft delete.
//!
//! Uniqueness is enforced by partial indexes over live rows only (`deleted_at IS NULL`), so a
//! soft-deleted rack, serial or MAC can be registered again. Manufacturers are compared
//! case-insensitively through the `manufacturer_key` column the application keeps lower-cased.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum NvlDomains {
    Table,
    Id,
    Name,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Racks {
    Table,
    Id,
    Name,
    Manufacturer,
    ManufacturerKey,
    SerialNumber,
    Model,
    Description,
    Region,
    Datacenter,
    Room,
    Position,
    NvlDomainId,
    DeletedAt,
}

#[derive(DeriveIden)]
enum Components {
    Table,
    Id,
    RackId,
    Type,
    Name,
    Manufacturer,
    ManufacturerKey,
    Model,
    SerialNumber,
    FirmwareVersion,
    Description,
    SlotId,
    TrayIdx,
    HostId,
    ExternalId,
    PowerState,
    DeletedAt,
}

#[derive(DeriveIden)]
enum Bmcs {
    Table,
    Id,
    ComponentId,
    Type,
    MacAddress,
    IpAddress,
    CreatedAt,
    DeletedAt,
}

fn created_updated(t: &mut TableCreateStatement) -> &mut TableCreateStatement {
    t.col(
        ColumnDef::new(Alias::new("revision"))
            .big_integer()
            .not_null()
            .default(1),
    )
    .col(
        ColumnDef::new(Alias::new("created_at"))
            .timestamp_with_time_zone()
            .not_null(),
    )
    .col(
        ColumnDef::new(Alias::new("updated_at"))
            .timestamp_with_time_zone()
            .not_null(),
    )
    .col(
        ColumnDef::new(Alias::new("deleted_at"))
            .timestamp_with_time_zone()
            .null(),
    )
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(NvlDomains::Table)
                .col(
                    ColumnDef::new(NvlDomains::Id)
                        .uuid()
                        .not_null()
                        .primary_key(),
                )
                .col(ColumnDef::new(NvlDomains::Name).string().not_null())
                .col(
                    ColumnDef::new(NvlDomains::CreatedAt)
                        .timestamp_with_time_zone()
                        .not_null(),
                )
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("nvl_domains_name_key")
                .table(NvlDomains::Table)
                .col(NvlDomains::Name)
                .unique()
                .to_owned(),
        )
        .await?;

        let mut racks = Table::create();
        racks
            .table(Racks::Table)
            .col(ColumnDef::new(Racks::Id).uuid().not_null().primary_key())
            .col(ColumnDef::new(Racks::Name).string().not_null())
            .col(ColumnDef::new(Racks::Manufacturer).string().not_null())
            .col(ColumnDef::new(Racks::ManufacturerKey).string().not_null())
            .col(ColumnDef::new(Racks::SerialNumber).string().not_null())
            .col(ColumnDef::new(Racks::Model).string().null())
            .col(ColumnDef::new(Racks::Description).text().null())
            .col(ColumnDef::new(Racks::Region).string().null())
            .col(ColumnDef::new(Racks::Datacenter).string().null())
            .col(ColumnDef::new(Racks::Room).string().null())
            .col(ColumnDef::new(Racks::Position).string().null())
            .col(ColumnDef::new(Racks::NvlDomainId).uuid().null())
            .foreign_key(
                ForeignKey::create()
                    .name("racks_nvl_domain_id_fkey")
                    .from(Racks::Table, Racks::NvlDomainId)
                    .to(NvlDomains::Table, NvlDomains::Id)
                    .on_delete(ForeignKeyAction::SetNull),
            );
        m.create_table(created_updated(&mut racks).to_owned())
            .await?;

        let mut components = Table::create();
        components
            .table(Components::Table)
            .col(
                ColumnDef::new(Components::Id)
                    .uuid()
                    .not_null()
                    .primary_key(),
            )
            .col(ColumnDef::new(Components::RackId).uuid().null())
            .col(ColumnDef::new(Components::Type).string_len(16).not_null())
            .col(ColumnDef::new(Components::Name).string().not_null())
            .col(ColumnDef::new(Components::Manufacturer).string().not_null())
            .col(
                ColumnDef::new(Components::ManufacturerKey)
                    .string()
                    .not_null(),
            )
            .col(ColumnDef::new(Components::Model).string().null())
            .col(ColumnDef::new(Components::SerialNumber).string().not_null())
            .col(ColumnDef::new(Components::FirmwareVersion).string().null())
            .col(ColumnDef::new(Components::Description).text().null())
            .col(ColumnDef::new(Components::SlotId).big_integer().null())
            .col(ColumnDef::new(Components::TrayIdx).big_integer().null())
            .col(ColumnDef::new(Components::HostId).big_integer().null())
            .col(ColumnDef::new(Components::ExternalId).string().null())
            .col(ColumnDef::new(Components::PowerState).string_len(16).null())
            .foreign_key(
                ForeignKey::create()
                    .name("components_rack_id_fkey")
                    .from(Components::Table, Components::RackId)
                    .to(Racks::Table, Racks::Id)
                    .on_delete(ForeignKeyAction::Restrict),
            );
        m.create_table(created_updated(&mut components).to_owned())
            .await?;

        m.create_table(
            Table::create()
                .table(Bmcs::Table)
                .col(ColumnDef::new(Bmcs::Id).uuid().not_null().primary_key())
                .col(ColumnDef::new(Bmcs::ComponentId).uuid().not_null())
                .col(ColumnDef::new(Bmcs::Type).string_len(16).not_null())
                .col(ColumnDef::new(Bmcs::MacAddress).string_len(17).not_null())
                .col(ColumnDef::new(Bmcs::IpAddress).string().null())
                .col(
                    ColumnDef::new(Bmcs::CreatedAt)
                        .timestamp_with_time_zone()
                        .not_null(),
                )
                .col(
                    ColumnDef::new(Bmcs::DeletedAt)
                        .timestamp_with_time_zone()
                        .null(),
                )
                .foreign_key(
                    ForeignKey::create()
                        .name("bmcs_component_id_fkey")
                        .from(Bmcs::Table, Bmcs::ComponentId)
                        .to(Components::Table, Components::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .to_owned(),
        )
        .await?;

        for index in indexes() {
            m.create_index(index).await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(Bmcs::Table).to_owned())
            .await?;
        m.drop_table(Table::drop().table(Components::Table).to_owned())
            .await?;
        m.drop_table(Table::drop().table(Racks::Table).to_owned())
            .await?;
        m.drop_table(Table::drop().table(NvlDomains::Table).to_owned())
            .await
    }
}

/// Indexes: unique keys over live rows, and the keyset orders and lookups the API uses.
fn indexes() -> Vec<IndexCreateStatement> {
    vec![
        Index::create()
            .name("racks_name_live_key")
            .table(Racks::Table)
            .col(Racks::Name)
            .unique()
            .and_where(Expr::col(Racks::DeletedAt).is_null())
            .to_owned(),
        Index::create()
            .name("racks_manufacturer_serial_live_key")
            .table(Racks::Table)
            .col(Racks::ManufacturerKey)
            .col(Racks::SerialNumber)
            .unique()
            .and_where(Expr::col(Racks::DeletedAt).is_null())
            .to_owned(),
        Index::create()
            .name("racks_nvl_domain_id_idx")
            .table(Racks::Table)
            .col(Racks::NvlDomainId)
            .to_owned(),
        Index::create()
            .name("components_manufacturer_serial_live_key")
            .table(Components::Table)
            .col(Components::ManufacturerKey)
            .col(Components::SerialNumber)
            .unique()
            .and_where(Expr::col(Components::DeletedAt).is_null())
            .to_owned(),
        Index::create()
            .name("components_type_external_id_live_key")
            .table(Components::Table)
            .col(Components::Type)
            .col(Components::ExternalId)
            .unique()
            .and_where(Expr::col(Components::DeletedAt).is_null())
            .and_where(Expr::col(Components::ExternalId).is_not_null())
            .to_owned(),
        Index::create()
            .name("components_name_id_idx")
            .table(Components::Table)
            .col(Components::Name)
            .col(Components::Id)
            .to_owned(),
        Index::create()
            .name("components_rack_id_idx")
            .table(Components::Table)
            .col(Components::RackId)
            .to_owned(),
        Index::create()
            .name("bmcs_mac_address_live_key")
            .table(Bmcs::Table)
            .col(Bmcs::MacAddress)
            .unique()
            .and_where(Expr::col(Bmcs::DeletedAt).is_null())
            .to_owned(),
        Index::create()
            .name("bmcs_component_id_idx")
            .table(Bmcs::Table)
            .col(Bmcs::ComponentId)
            .to_owned(),
    ]
}

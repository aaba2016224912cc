//! Firmware history (issue 26 point 8): per component, the version it ran before its last
//! successful firmware upgrade, so a `rollback` knows where to go back to. One row per
//! component, overwritten by each upgrade that changes its version.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum FirmwareHistory {
    Table,
    ComponentId,
    PreviousVersion,
    Version,
    RecordedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(FirmwareHistory::Table)
                // No foreign key: the record outlives a soft delete without blocking the purge.
                .col(
                    ColumnDef::new(FirmwareHistory::ComponentId)
                        .uuid()
                        .not_null()
                        .primary_key(),
                )
                .col(
                    ColumnDef::new(FirmwareHistory::PreviousVersion)
                        .text()
                        .not_null(),
                )
                .col(ColumnDef::new(FirmwareHistory::Version).text().not_null())
                .col(
                    ColumnDef::new(FirmwareHistory::RecordedAt)
                        .timestamp_with_time_zone()
                        .not_null(),
                )
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(FirmwareHistory::Table).to_owned())
            .await
    }
}

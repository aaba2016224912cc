//! Expected vs actual: observed columns on components and the `component_drifts` table.
//!
//! Observed values live in their own columns (`observed_firmware_version`, `last_seen_at`, and
//! the existing `external_id` and `power_state`), so inventory sync never overwrites what an
//! operator wrote. Drift rows are replaced per source; a source that does not answer keeps its
//! previous rows, marked `stale`.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Components {
    Table,
    ObservedFirmwareVersion,
    LastSeenAt,
}

#[derive(DeriveIden)]
enum ComponentDrifts {
    Table,
    Id,
    Source,
    ComponentType,
    Kind,
    ComponentId,
    ExternalId,
    Address,
    Fields,
    Message,
    Stale,
    Since,
    CheckedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // One change per ALTER TABLE: SQLite takes no more.
        m.alter_table(
            Table::alter()
                .table(Components::Table)
                .add_column(
                    ColumnDef::new(Components::ObservedFirmwareVersion)
                        .string()
                        .null(),
                )
                .to_owned(),
        )
        .await?;
        m.alter_table(
            Table::alter()
                .table(Components::Table)
                .add_column(
                    ColumnDef::new(Components::LastSeenAt)
                        .timestamp_with_time_zone()
                        .null(),
                )
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(ComponentDrifts::Table)
                .col(
                    ColumnDef::new(ComponentDrifts::Id)
                        .uuid()
                        .not_null()
                        .primary_key(),
                )
                .col(
                    ColumnDef::new(ComponentDrifts::Source)
                        .string_len(64)
                        .not_null(),
                )
                .col(
                    ColumnDef::new(ComponentDrifts::ComponentType)
                        .string_len(16)
                        .not_null(),
                )
                .col(
                    ColumnDef::new(ComponentDrifts::Kind)
                        .string_len(16)
                        .not_null(),
                )
                // No foreign key: an unexpected device has no component, and drift of a purged
                // component goes with the next sync.
                .col(ColumnDef::new(ComponentDrifts::ComponentId).uuid().null())
                .col(ColumnDef::new(ComponentDrifts::ExternalId).string().null())
                .col(ColumnDef::new(ComponentDrifts::Address).string().null())
                .col(
                    ColumnDef::new(ComponentDrifts::Fields)
                        .json_binary()
                        .not_null(),
                )
                .col(ColumnDef::new(ComponentDrifts::Message).text().null())
                .col(
                    ColumnDef::new(ComponentDrifts::Stale)
                        .boolean()
                        .not_null()
                        .default(false),
                )
                .col(
                    ColumnDef::new(ComponentDrifts::Since)
                        .timestamp_with_time_zone()
                        .not_null(),
                )
                .col(
                    ColumnDef::new(ComponentDrifts::CheckedAt)
                        .timestamp_with_time_zone()
                        .not_null(),
                )
                .to_owned(),
        )
        .await?;
        for index in [
            Index::create()
                .name("component_drifts_component_id_idx")
                .table(ComponentDrifts::Table)
                .col(ComponentDrifts::ComponentId)
                .to_owned(),
            Index::create()
                .name("component_drifts_source_idx")
                .table(ComponentDrifts::Table)
                .col(ComponentDrifts::Source)
                .to_owned(),
        ] {
            m.create_index(index).await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(ComponentDrifts::Table).to_owned())
            .await?;
        for column in [Components::LastSeenAt, Components::ObservedFirmwareVersion] {
            m.alter_table(
                Table::alter()
                    .table(Components::Table)
                    .drop_column(column)
                    .to_owned(),
            )
            .await?;
        }
        Ok(())
    }
}

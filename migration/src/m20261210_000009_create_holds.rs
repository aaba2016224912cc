//! Safety interlocks (issue 27): `holds` (a workload scheduler's "do not touch" on a rack, a
//! component or an NVLink domain, with an optional expiry), `health_reports` (one report per
//! component and source, its alerts as JSON) and `readiness_overrides` (the holds and alerts an
//! admin's operation request went past, read again when a queued task of it starts).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Holds {
    Table,
    Id,
    RackId,
    ComponentId,
    NvlDomainId,
    Owner,
    Reason,
    CreatedBy,
    CreatedAt,
    ExpiresAt,
}

#[derive(DeriveIden)]
enum HealthReports {
    Table,
    ComponentId,
    Source,
    Alerts,
    UpdatedBy,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ReadinessOverrides {
    Table,
    RequestId,
    Overridden,
    CreatedBy,
    CreatedAt,
}

fn at(col: impl IntoIden) -> ColumnDef {
    ColumnDef::new(col)
        .timestamp_with_time_zone()
        .not_null()
        .to_owned()
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(Holds::Table)
                .col(ColumnDef::new(Holds::Id).uuid().not_null().primary_key())
                // Exactly one of the three is set (checked by the API); no foreign keys, so a
                // hold outlives a soft delete of what it names without blocking the purge.
                .col(ColumnDef::new(Holds::RackId).uuid().null())
                .col(ColumnDef::new(Holds::ComponentId).uuid().null())
                .col(ColumnDef::new(Holds::NvlDomainId).uuid().null())
                .col(ColumnDef::new(Holds::Owner).string_len(128).not_null())
                .col(ColumnDef::new(Holds::Reason).string_len(1024).not_null())
                .col(ColumnDef::new(Holds::CreatedBy).string().not_null())
                .col(at(Holds::CreatedAt))
                .col(
                    ColumnDef::new(Holds::ExpiresAt)
                        .timestamp_with_time_zone()
                        .null(),
                )
                .to_owned(),
        )
        .await?;
        for (name, col) in [
            ("holds_rack_id_idx", Holds::RackId),
            ("holds_component_id_idx", Holds::ComponentId),
            ("holds_nvl_domain_id_idx", Holds::NvlDomainId),
        ] {
            m.create_index(
                Index::create()
                    .name(name)
                    .table(Holds::Table)
                    .col(col)
                    .to_owned(),
            )
            .await?;
        }
        m.create_table(
            Table::create()
                .table(HealthReports::Table)
                .col(ColumnDef::new(HealthReports::ComponentId).uuid().not_null())
                .col(
                    ColumnDef::new(HealthReports::Source)
                        .string_len(128)
                        .not_null(),
                )
                .col(ColumnDef::new(HealthReports::Alerts).json().not_null())
                .col(ColumnDef::new(HealthReports::UpdatedBy).string().not_null())
                .col(at(HealthReports::UpdatedAt))
                .primary_key(
                    Index::create()
                        .col(HealthReports::ComponentId)
                        .col(HealthReports::Source),
                )
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(ReadinessOverrides::Table)
                .col(
                    ColumnDef::new(ReadinessOverrides::RequestId)
                        .uuid()
                        .not_null()
                        .primary_key(),
                )
                .col(
                    ColumnDef::new(ReadinessOverrides::Overridden)
                        .json()
                        .not_null(),
                )
                .col(
                    ColumnDef::new(ReadinessOverrides::CreatedBy)
                        .string()
                        .not_null(),
                )
                .col(at(ReadinessOverrides::CreatedAt))
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(ReadinessOverrides::Table).to_owned())
            .await?;
        m.drop_table(Table::drop().table(HealthReports::Table).to_owned())
            .await?;
        m.drop_table(Table::drop().table(Holds::Table).to_owned())
            .await
    }
}

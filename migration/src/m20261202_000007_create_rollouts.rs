//! Fleet rollouts: one operation across many racks in waves. The spec and the wave plan are
//! stored as JSON beside the status the rollout workflow writes.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Rollouts {
    Table,
    Id,
    Name,
    Status,
    Spec,
    Waves,
    CurrentWave,
    Approved,
    Message,
    Revision,
    CreatedAt,
    UpdatedAt,
    StartedAt,
    FinishedAt,
}

fn timestamp(col: impl IntoIden) -> ColumnDef {
    ColumnDef::new(col).timestamp_with_time_zone().to_owned()
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(Rollouts::Table)
                .col(ColumnDef::new(Rollouts::Id).uuid().not_null().primary_key())
                .col(ColumnDef::new(Rollouts::Name).string().not_null())
                .col(ColumnDef::new(Rollouts::Status).string_len(24).not_null())
                .col(ColumnDef::new(Rollouts::Spec).json_binary().not_null())
                .col(ColumnDef::new(Rollouts::Waves).json_binary().not_null())
                .col(ColumnDef::new(Rollouts::CurrentWave).integer().null())
                .col(ColumnDef::new(Rollouts::Approved).boolean().not_null())
                .col(ColumnDef::new(Rollouts::Message).text().not_null())
                // Bumped by every write: each write is a compare-and-set on it.
                .col(ColumnDef::new(Rollouts::Revision).big_integer().not_null())
                .col(timestamp(Rollouts::CreatedAt).not_null())
                .col(timestamp(Rollouts::UpdatedAt).not_null())
                .col(timestamp(Rollouts::StartedAt).null())
                .col(timestamp(Rollouts::FinishedAt).null())
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("rollouts_created_at_id_idx")
                .table(Rollouts::Table)
                .col(Rollouts::CreatedAt)
                .col(Rollouts::Id)
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("rollouts_status_idx")
                .table(Rollouts::Table)
                .col(Rollouts::Status)
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(Rollouts::Table).to_owned())
            .await
    }
}

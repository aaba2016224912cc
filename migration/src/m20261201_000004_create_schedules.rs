//! Task schedules: the timer and operation template, the racks each fire targets, and a record
//! of every fire with the tasks it created.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum TaskSchedules {
    Table,
    Id,
    Name,
    SpecType,
    Spec,
    Timezone,
    Operation,
    OverlapPolicy,
    Enabled,
    NextRunAt,
    LastRunAt,
    Revision,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum TaskScheduleScopes {
    Table,
    Id,
    ScheduleId,
    RackId,
    ComponentTypes,
    LastTaskId,
    CreatedAt,
}

#[derive(DeriveIden)]
enum TaskScheduleRuns {
    Table,
    Id,
    ScheduleId,
    Trigger,
    FiredAt,
    Status,
    Results,
    FinishedAt,
}

#[derive(DeriveIden)]
enum Racks {
    Table,
    Id,
}

fn timestamp(col: impl IntoIden) -> ColumnDef {
    ColumnDef::new(col).timestamp_with_time_zone().to_owned()
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(TaskSchedules::Table)
                .col(
                    ColumnDef::new(TaskSchedules::Id)
                        .uuid()
                        .not_null()
                        .primary_key(),
                )
                .col(ColumnDef::new(TaskSchedules::Name).string().not_null())
                .col(
                    ColumnDef::new(TaskSchedules::SpecType)
                        .string_len(16)
                        .not_null(),
                )
                .col(ColumnDef::new(TaskSchedules::Spec).text().not_null())
                .col(
                    ColumnDef::new(TaskSchedules::Timezone)
                        .string_len(64)
                        .not_null(),
                )
                .col(
                    ColumnDef::new(TaskSchedules::Operation)
                        .json_binary()
                        .not_null(),
                )
                .col(
                    ColumnDef::new(TaskSchedules::OverlapPolicy)
                        .string_len(16)
                        .not_null(),
                )
                .col(ColumnDef::new(TaskSchedules::Enabled).boolean().not_null())
                .col(timestamp(TaskSchedules::NextRunAt).null())
                .col(timestamp(TaskSchedules::LastRunAt).null())
                // Bumped by every change: the dispatcher's claim is a compare-and-set on it.
                .col(
                    ColumnDef::new(TaskSchedules::Revision)
                        .big_integer()
                        .not_null(),
                )
                .col(timestamp(TaskSchedules::CreatedAt).not_null())
                .col(timestamp(TaskSchedules::UpdatedAt).not_null())
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(TaskScheduleScopes::Table)
                .col(
                    ColumnDef::new(TaskScheduleScopes::Id)
                        .uuid()
                        .not_null()
                        .primary_key(),
                )
                .col(
                    ColumnDef::new(TaskScheduleScopes::ScheduleId)
                        .uuid()
                        .not_null(),
                )
                .col(ColumnDef::new(TaskScheduleScopes::RackId).uuid().not_null())
                .col(
                    ColumnDef::new(TaskScheduleScopes::ComponentTypes)
                        .json_binary()
                        .not_null(),
                )
                .col(ColumnDef::new(TaskScheduleScopes::LastTaskId).uuid().null())
                .col(timestamp(TaskScheduleScopes::CreatedAt).not_null())
                .foreign_key(
                    ForeignKey::create()
                        .name("task_schedule_scopes_schedule_id_fkey")
                        .from(TaskScheduleScopes::Table, TaskScheduleScopes::ScheduleId)
                        .to(TaskSchedules::Table, TaskSchedules::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .foreign_key(
                    ForeignKey::create()
                        .name("task_schedule_scopes_rack_id_fkey")
                        .from(TaskScheduleScopes::Table, TaskScheduleScopes::RackId)
                        .to(Racks::Table, Racks::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(TaskScheduleRuns::Table)
                .col(
                    ColumnDef::new(TaskScheduleRuns::Id)
                        .uuid()
                        .not_null()
                        .primary_key(),
                )
                .col(
                    ColumnDef::new(TaskScheduleRuns::ScheduleId)
                        .uuid()
                        .not_null(),
                )
                .col(
                    ColumnDef::new(TaskScheduleRuns::Trigger)
                        .string_len(16)
                        .not_null(),
                )
                .col(timestamp(TaskScheduleRuns::FiredAt).not_null())
                .col(
                    ColumnDef::new(TaskScheduleRuns::Status)
                        .string_len(16)
                        .not_null(),
                )
                .col(
                    ColumnDef::new(TaskScheduleRuns::Results)
                        .json_binary()
                        .not_null(),
                )
                .col(timestamp(TaskScheduleRuns::FinishedAt).null())
                .foreign_key(
                    ForeignKey::create()
                        .name("task_schedule_runs_schedule_id_fkey")
                        .from(TaskScheduleRuns::Table, TaskScheduleRuns::ScheduleId)
                        .to(TaskSchedules::Table, TaskSchedules::Id)
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
        for table in [
            TaskScheduleRuns::Table.into_iden(),
            TaskScheduleScopes::Table.into_iden(),
            TaskSchedules::Table.into_iden(),
        ] {
            m.drop_table(Table::drop().table(table).to_owned()).await?;
        }
        Ok(())
    }
}

fn indexes() -> Vec<IndexCreateStatement> {
    vec![
        Index::create()
            .name("task_schedules_name_key")
            .table(TaskSchedules::Table)
            .col(TaskSchedules::Name)
            .unique()
            .to_owned(),
        Index::create()
            .name("task_schedules_enabled_next_run_at_idx")
            .table(TaskSchedules::Table)
            .col(TaskSchedules::Enabled)
            .col(TaskSchedules::NextRunAt)
            .to_owned(),
        Index::create()
            .name("task_schedule_scopes_schedule_rack_key")
            .table(TaskScheduleScopes::Table)
            .col(TaskScheduleScopes::ScheduleId)
            .col(TaskScheduleScopes::RackId)
            .unique()
            .to_owned(),
        Index::create()
            .name("task_schedule_scopes_rack_id_idx")
            .table(TaskScheduleScopes::Table)
            .col(TaskScheduleScopes::RackId)
            .to_owned(),
        Index::create()
            .name("task_schedule_runs_schedule_fired_idx")
            .table(TaskScheduleRuns::Table)
            .col(TaskScheduleRuns::ScheduleId)
            .col(TaskScheduleRuns::FiredAt)
            .to_owned(),
        Index::create()
            .name("task_schedule_runs_status_idx")
            .table(TaskScheduleRuns::Table)
            .col(TaskScheduleRuns::Status)
            .to_owned(),
    ]
}

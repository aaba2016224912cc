//! Operation tasks: one row per rack per request, each component's steps, idempotent requests,
//! and leases for jobs that must run once across several Flow processes.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Tasks {
    Table,
    Id,
    RequestId,
    Operation,
    TaskType,
    Spec,
    Description,
    RackId,
    Components,
    Status,
    Message,
    Plan,
    ConflictStrategy,
    QueueExpiresAt,
    WorkflowRunId,
    CreatedAt,
    UpdatedAt,
    StartedAt,
    FinishedAt,
}

#[derive(DeriveIden)]
enum TaskSteps {
    Table,
    Id,
    TaskId,
    Stage,
    ComponentId,
    ComponentType,
    ComponentName,
    Action,
    Status,
    Attempts,
    Error,
    Events,
    StartedAt,
    FinishedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum OperationRequests {
    Table,
    Id,
    IdempotencyKey,
    Fingerprint,
    Response,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Leases {
    Table,
    Name,
    Holder,
    ExpiresAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(Tasks::Table)
                .col(ColumnDef::new(Tasks::Id).uuid().not_null().primary_key())
                .col(ColumnDef::new(Tasks::RequestId).uuid().not_null())
                .col(ColumnDef::new(Tasks::Operation).string_len(32).not_null())
                .col(ColumnDef::new(Tasks::TaskType).string_len(32).not_null())
                .col(ColumnDef::new(Tasks::Spec).json_binary().not_null())
                .col(ColumnDef::new(Tasks::Description).text().null())
                // No foreign key: task history outlives purged racks.
                .col(ColumnDef::new(Tasks::RackId).uuid().not_null())
                .col(ColumnDef::new(Tasks::Components).json_binary().not_null())
                .col(ColumnDef::new(Tasks::Status).string_len(16).not_null())
                .col(ColumnDef::new(Tasks::Message).text().not_null())
                .col(ColumnDef::new(Tasks::Plan).json_binary().null())
                .col(ColumnDef::new(Tasks::ConflictStrategy).string_len(16).not_null())
                .col(ColumnDef::new(Tasks::QueueExpiresAt).timestamp_with_time_zone().null())
                .col(ColumnDef::new(Tasks::WorkflowRunId).string().null())
                .col(ColumnDef::new(Tasks::CreatedAt).timestamp_with_time_zone().not_null())
                .col(ColumnDef::new(Tasks::UpdatedAt).timestamp_with_time_zone().not_null())
                .col(ColumnDef::new(Tasks::StartedAt).timestamp_with_time_zone().null())
                .col(ColumnDef::new(Tasks::FinishedAt).timestamp_with_time_zone().null())
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(TaskSteps::Table)
                .col(ColumnDef::new(TaskSteps::Id).uuid().not_null().primary_key())
                .col(ColumnDef::new(TaskSteps::TaskId).uuid().not_null())
                .col(ColumnDef::new(TaskSteps::Stage).integer().not_null())
                .col(ColumnDef::new(TaskSteps::ComponentId).uuid().not_null())
                .col(ColumnDef::new(TaskSteps::ComponentType).string_len(16).not_null())
                .col(ColumnDef::new(TaskSteps::ComponentName).string().not_null())
                .col(ColumnDef::new(TaskSteps::Action).string_len(32).not_null())
                .col(ColumnDef::new(TaskSteps::Status).string_len(16).not_null())
                .col(ColumnDef::new(TaskSteps::Attempts).integer().not_null().default(0))
                .col(ColumnDef::new(TaskSteps::Error).text().null())
                .col(ColumnDef::new(TaskSteps::Events).json_binary().not_null())
                .col(ColumnDef::new(TaskSteps::StartedAt).timestamp_with_time_zone().null())
                .col(ColumnDef::new(TaskSteps::FinishedAt).timestamp_with_time_zone().null())
                .col(ColumnDef::new(TaskSteps::UpdatedAt).timestamp_with_time_zone().not_null())
                .foreign_key(
                    ForeignKey::create()
                        .name("task_steps_task_id_fkey")
                        .from(TaskSteps::Table, TaskSteps::TaskId)
                        .to(Tasks::Table, Tasks::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(OperationRequests::Table)
                .col(ColumnDef::new(OperationRequests::Id).uuid().not_null().primary_key())
                .col(ColumnDef::new(OperationRequests::IdempotencyKey).string().null())
                .col(ColumnDef::new(OperationRequests::Fingerprint).text().not_null())
                .col(ColumnDef::new(OperationRequests::Response).json_binary().not_null())
                .col(ColumnDef::new(OperationRequests::CreatedAt).timestamp_with_time_zone().not_null())
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(Leases::Table)
                .col(ColumnDef::new(Leases::Name).string().not_null().primary_key())
                .col(ColumnDef::new(Leases::Holder).string().not_null())
                .col(ColumnDef::new(Leases::ExpiresAt).timestamp_with_time_zone().not_null())
                .to_owned(),
        )
        .await?;
        for index in indexes() {
            m.create_index(index).await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for table in [Leases::Table.into_iden(), OperationRequests::Table.into_iden(), TaskSteps::Table.into_iden(), Tasks::Table.into_iden()] {
            m.drop_table(Table::drop().table(table).to_owned()).await?;
        }
        Ok(())
    }
}

fn indexes() -> Vec<IndexCreateStatement> {
    vec![
        Index::create().name("tasks_rack_id_status_idx").table(Tasks::Table).col(Tasks::RackId).col(Tasks::Status).to_owned(),
        Index::create().name("tasks_status_idx").table(Tasks::Table).col(Tasks::Status).to_owned(),
        Index::create().name("tasks_created_at_id_idx").table(Tasks::Table).col(Tasks::CreatedAt).col(Tasks::Id).to_owned(),
        Index::create().name("tasks_request_id_idx").table(Tasks::Table).col(Tasks::RequestId).to_owned(),
        Index::create()
            .name("task_steps_task_stage_component_key")
            .table(TaskSteps::Table)
            .col(TaskSteps::TaskId)
            .col(TaskSteps::Stage)
            .col(TaskSteps::ComponentId)
            .unique()
            .to_owned(),
        Index::create().name("task_steps_component_id_idx").table(TaskSteps::Table).col(TaskSteps::ComponentId).to_owned(),
        Index::create()
            .name("operation_requests_idempotency_key_key")
            .table(OperationRequests::Table)
            .col(OperationRequests::IdempotencyKey)
            .unique()
            .to_owned(),
    ]
}

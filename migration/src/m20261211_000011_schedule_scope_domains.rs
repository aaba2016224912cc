//! `task_schedule_scopes.nvl_domain_id`: the NVLink domain that brought a rack into a
//! schedule's scope (issue 26: domains as schedule targets). Such a rack follows its domain: at
//! each fire the domain's scope rows are brought in line with its live racks.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum TaskScheduleScopes {
    Table,
    NvlDomainId,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(TaskScheduleScopes::Table)
                    .add_column(
                        ColumnDef::new(TaskScheduleScopes::NvlDomainId)
                            .uuid()
                            .null(),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(TaskScheduleScopes::Table)
                    .drop_column(TaskScheduleScopes::NvlDomainId)
                    .to_owned(),
            )
            .await
    }
}

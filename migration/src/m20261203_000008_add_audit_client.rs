//! `audit_log.client_addr`: the address a change came from (the socket's peer, or the client
//! a trusted proxy named), so an audit row says where as well as who.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum AuditLog {
    Table,
    ClientAddr,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(AuditLog::Table)
                    .add_column(ColumnDef::new(AuditLog::ClientAddr).string_len(64).null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(AuditLog::Table)
                    .drop_column(AuditLog::ClientAddr)
                    .to_owned(),
            )
            .await
    }
}

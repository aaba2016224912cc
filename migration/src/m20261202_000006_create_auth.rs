//! Authentication and audit: `api_tokens` (hashed automation tokens), `audit_log` (who changed
//! what, written in the same transaction as the change) and `tasks.created_by`.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ApiTokens {
    Table,
    Id,
    Name,
    Role,
    TokenHash,
    Prefix,
    CreatedAt,
    CreatedBy,
    ExpiresAt,
    LastUsedAt,
    RevokedAt,
}

#[derive(DeriveIden)]
enum AuditLog {
    Table,
    Id,
    At,
    Actor,
    Role,
    Method,
    Route,
    ResourceType,
    ResourceId,
    Status,
    RequestId,
    Before,
    After,
}

#[derive(DeriveIden)]
enum Tasks {
    Table,
    CreatedBy,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(ApiTokens::Table)
                .col(
                    ColumnDef::new(ApiTokens::Id)
                        .uuid()
                        .not_null()
                        .primary_key(),
                )
                .col(ColumnDef::new(ApiTokens::Name).string_len(128).not_null())
                .col(ColumnDef::new(ApiTokens::Role).string_len(16).not_null())
                // SHA-256 of the secret, hex: the secret itself is never stored.
                .col(
                    ColumnDef::new(ApiTokens::TokenHash)
                        .string_len(64)
                        .not_null(),
                )
                .col(ColumnDef::new(ApiTokens::Prefix).string_len(16).not_null())
                .col(
                    ColumnDef::new(ApiTokens::CreatedAt)
                        .timestamp_with_time_zone()
                        .not_null(),
                )
                .col(ColumnDef::new(ApiTokens::CreatedBy).string().null())
                .col(
                    ColumnDef::new(ApiTokens::ExpiresAt)
                        .timestamp_with_time_zone()
                        .null(),
                )
                .col(
                    ColumnDef::new(ApiTokens::LastUsedAt)
                        .timestamp_with_time_zone()
                        .null(),
                )
                .col(
                    ColumnDef::new(ApiTokens::RevokedAt)
                        .timestamp_with_time_zone()
                        .null(),
                )
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(AuditLog::Table)
                // UUIDv7: ordered by time, so the id doubles as the list cursor.
                .col(ColumnDef::new(AuditLog::Id).uuid().not_null().primary_key())
                .col(
                    ColumnDef::new(AuditLog::At)
                        .timestamp_with_time_zone()
                        .not_null(),
                )
                .col(ColumnDef::new(AuditLog::Actor).string().not_null())
                .col(ColumnDef::new(AuditLog::Role).string_len(16).null())
                .col(ColumnDef::new(AuditLog::Method).string_len(16).not_null())
                .col(ColumnDef::new(AuditLog::Route).string().not_null())
                .col(ColumnDef::new(AuditLog::ResourceType).string_len(64).null())
                .col(ColumnDef::new(AuditLog::ResourceId).string().null())
                .col(ColumnDef::new(AuditLog::Status).integer().null())
                .col(ColumnDef::new(AuditLog::RequestId).string().null())
                .col(ColumnDef::new(AuditLog::Before).json_binary().null())
                .col(ColumnDef::new(AuditLog::After).json_binary().null())
                .to_owned(),
        )
        .await?;
        for index in [
            Index::create()
                .name("api_tokens_hash_idx")
                .table(ApiTokens::Table)
                .col(ApiTokens::TokenHash)
                .unique()
                .to_owned(),
            Index::create()
                .name("api_tokens_name_idx")
                .table(ApiTokens::Table)
                .col(ApiTokens::Name)
                .unique()
                .to_owned(),
            Index::create()
                .name("audit_log_at_idx")
                .table(AuditLog::Table)
                .col(AuditLog::At)
                .to_owned(),
            Index::create()
                .name("audit_log_actor_idx")
                .table(AuditLog::Table)
                .col(AuditLog::Actor)
                .to_owned(),
            Index::create()
                .name("audit_log_resource_idx")
                .table(AuditLog::Table)
                .col(AuditLog::ResourceType)
                .col(AuditLog::ResourceId)
                .to_owned(),
        ] {
            m.create_index(index).await?;
        }
        m.alter_table(
            Table::alter()
                .table(Tasks::Table)
                .add_column(ColumnDef::new(Tasks::CreatedBy).string().null())
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.alter_table(
            Table::alter()
                .table(Tasks::Table)
                .drop_column(Tasks::CreatedBy)
                .to_owned(),
        )
        .await?;
        m.drop_table(Table::drop().table(AuditLog::Table).to_owned())
            .await?;
        m.drop_table(Table::drop().table(ApiTokens::Table).to_owned())
            .await
    }
}

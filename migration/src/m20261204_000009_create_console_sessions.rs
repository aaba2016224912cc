//! The console's server-side sessions (`console_sessions`: only a hash of each session id, the
//! identity it was opened for, its idle and absolute expiry) and `console_keys`, the server key
//! its CSRF tokens are derived from, kept here so every replica derives the same tokens.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ConsoleSessions {
    Table,
    IdHash,
    TokenId,
    Actor,
    Roles,
    CreatedAt,
    LastSeenAt,
    ExpiresAt,
}

#[derive(DeriveIden)]
enum ConsoleKeys {
    Table,
    Name,
    Secret,
    CreatedAt,
}

#[derive(DeriveIden)]
enum ApiTokens {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(ConsoleSessions::Table)
                // SHA-256 of the session id, hex: the id itself lives only in the browser.
                .col(
                    ColumnDef::new(ConsoleSessions::IdHash)
                        .string_len(64)
                        .not_null()
                        .primary_key(),
                )
                // The API token signed in with (none for a JWT): revoking it ends the session.
                .col(ColumnDef::new(ConsoleSessions::TokenId).uuid().null())
                .col(ColumnDef::new(ConsoleSessions::Actor).string().not_null())
                .col(
                    ColumnDef::new(ConsoleSessions::Roles)
                        .string_len(128)
                        .not_null(),
                )
                .col(
                    ColumnDef::new(ConsoleSessions::CreatedAt)
                        .timestamp_with_time_zone()
                        .not_null(),
                )
                .col(
                    ColumnDef::new(ConsoleSessions::LastSeenAt)
                        .timestamp_with_time_zone()
                        .not_null(),
                )
                .col(
                    ColumnDef::new(ConsoleSessions::ExpiresAt)
                        .timestamp_with_time_zone()
                        .not_null(),
                )
                .foreign_key(
                    ForeignKey::create()
                        .name("console_sessions_token_id_fkey")
                        .from(ConsoleSessions::Table, ConsoleSessions::TokenId)
                        .to(ApiTokens::Table, ApiTokens::Id)
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(ConsoleKeys::Table)
                .col(
                    ColumnDef::new(ConsoleKeys::Name)
                        .string_len(32)
                        .not_null()
                        .primary_key(),
                )
                .col(
                    ColumnDef::new(ConsoleKeys::Secret)
                        .string_len(128)
                        .not_null(),
                )
                .col(
                    ColumnDef::new(ConsoleKeys::CreatedAt)
                        .timestamp_with_time_zone()
                        .not_null(),
                )
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(ConsoleKeys::Table).to_owned())
            .await?;
        m.drop_table(Table::drop().table(ConsoleSessions::Table).to_owned())
            .await
    }
}

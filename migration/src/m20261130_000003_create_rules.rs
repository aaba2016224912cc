//! Operation rules with every version kept, rack-to-rule associations, and the rule a task asked
//! for and ran.
//!
//! At most one default rule per operation: a partial unique index over `is_default` rows.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum OperationRules {
    Table,
    Id,
    Name,
    Description,
    Operation,
    IsDefault,
    Version,
    Definition,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum OperationRuleVersions {
    Table,
    RuleId,
    Version,
    Name,
    Description,
    Definition,
    CreatedAt,
}

#[derive(DeriveIden)]
enum RackRuleAssociations {
    Table,
    RackId,
    Operation,
    RuleId,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Racks {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum Tasks {
    Table,
    RequestedRuleId,
    RuleId,
    RuleVersion,
}

fn timestamp(col: impl IntoIden) -> ColumnDef {
    ColumnDef::new(col)
        .timestamp_with_time_zone()
        .not_null()
        .to_owned()
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(OperationRules::Table)
                    .col(
                        ColumnDef::new(OperationRules::Id)
                            .uuid()
                            .not_null()
                            .primary_key(),
                    )
                    .col(
                        ColumnDef::new(OperationRules::Name)
                            .string_len(128)
                            .not_null(),
                    )
                    .col(ColumnDef::new(OperationRules::Description).text().null())
                    .col(
                        ColumnDef::new(OperationRules::Operation)
                            .string_len(32)
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(OperationRules::IsDefault)
                            .boolean()
                            .not_null()
                            .default(false),
                    )
                    .col(ColumnDef::new(OperationRules::Version).integer().not_null())
                    .col(
                        ColumnDef::new(OperationRules::Definition)
                            .json_binary()
                            .not_null(),
                    )
                    .col(timestamp(OperationRules::CreatedAt))
                    .col(timestamp(OperationRules::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("operation_rules_one_default_key")
                    .table(OperationRules::Table)
                    .col(OperationRules::Operation)
                    .unique()
                    .and_where(Expr::col(OperationRules::IsDefault).eq(true))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("operation_rules_operation_idx")
                    .table(OperationRules::Table)
                    .col(OperationRules::Operation)
                    .col(OperationRules::CreatedAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(OperationRuleVersions::Table)
                    .col(
                        ColumnDef::new(OperationRuleVersions::RuleId)
                            .uuid()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(OperationRuleVersions::Version)
                            .integer()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(OperationRuleVersions::Name)
                            .string_len(128)
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(OperationRuleVersions::Description)
                            .text()
                            .null(),
                    )
                    .col(
                        ColumnDef::new(OperationRuleVersions::Definition)
                            .json_binary()
                            .not_null(),
                    )
                    .col(timestamp(OperationRuleVersions::CreatedAt))
                    .primary_key(
                        Index::create()
                            .col(OperationRuleVersions::RuleId)
                            .col(OperationRuleVersions::Version),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("operation_rule_versions_rule_id_fkey")
                            .from(OperationRuleVersions::Table, OperationRuleVersions::RuleId)
                            .to(OperationRules::Table, OperationRules::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(RackRuleAssociations::Table)
                    .col(
                        ColumnDef::new(RackRuleAssociations::RackId)
                            .uuid()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(RackRuleAssociations::Operation)
                            .string_len(32)
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(RackRuleAssociations::RuleId)
                            .uuid()
                            .not_null(),
                    )
                    .col(timestamp(RackRuleAssociations::CreatedAt))
                    .col(timestamp(RackRuleAssociations::UpdatedAt))
                    .primary_key(
                        Index::create()
                            .col(RackRuleAssociations::RackId)
                            .col(RackRuleAssociations::Operation),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("rack_rule_associations_rack_id_fkey")
                            .from(RackRuleAssociations::Table, RackRuleAssociations::RackId)
                            .to(Racks::Table, Racks::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .name("rack_rule_associations_rule_id_fkey")
                            .from(RackRuleAssociations::Table, RackRuleAssociations::RuleId)
                            .to(OperationRules::Table, OperationRules::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("rack_rule_associations_rule_id_idx")
                    .table(RackRuleAssociations::Table)
                    .col(RackRuleAssociations::RuleId)
                    .to_owned(),
            )
            .await?;
        // SQLite adds one column per ALTER TABLE.
        for column in [
            ColumnDef::new(Tasks::RequestedRuleId)
                .uuid()
                .null()
                .to_owned(),
            ColumnDef::new(Tasks::RuleId).uuid().null().to_owned(),
            ColumnDef::new(Tasks::RuleVersion)
                .integer()
                .null()
                .to_owned(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Tasks::Table)
                        .add_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [Tasks::RuleVersion, Tasks::RuleId, Tasks::RequestedRuleId] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Tasks::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        for table in [
            RackRuleAssociations::Table.into_iden(),
            OperationRuleVersions::Table.into_iden(),
            OperationRules::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}

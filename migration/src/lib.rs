//! Schema migrations for Flow: one set that runs unchanged on PostgreSQL and SQLite.

pub use sea_orm_migration::prelude::*;

mod m20260101_000001_create_inventory;
mod m20260201_000002_create_tasks;
mod m20261130_000003_create_rules;
mod m20261201_000003_create_drift;
mod m20261201_000004_create_schedules;
mod m20261202_000006_create_auth;
mod m20261202_000007_create_rollouts;
mod m20261203_000008_add_audit_client;
mod m20261204_000009_create_console_sessions;
mod m20261210_000009_create_holds;
mod m20261210_000010_firmware_history;
mod m20261211_000011_schedule_scope_domains;

/// Every migration, oldest first.
#[derive(Debug)]
pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20260101_000001_create_inventory::Migration),
            Box::new(m20260201_000002_create_tasks::Migration),
            Box::new(m20261130_000003_create_rules::Migration),
            Box::new(m20261201_000003_create_drift::Migration),
            Box::new(m20261201_000004_create_schedules::Migration),
            Box::new(m20261202_000006_create_auth::Migration),
            Box::new(m20261202_000007_create_rollouts::Migration),
            Box::new(m20261203_000008_add_audit_client::Migration),
            Box::new(m20261204_000009_create_console_sessions::Migration),
            Box::new(m20261210_000009_create_holds::Migration),
            Box::new(m20261210_000010_firmware_history::Migration),
            Box::new(m20261211_000011_schedule_scope_domains::Migration),
        ]
    }
}

//! SeaORM entities, one per table, in the shape `sea-orm-cli generate entity` produces.

pub mod api_tokens;
pub mod audit_log;
pub mod bmcs;
pub mod component_drifts;
pub mod components;
pub mod console_keys;
pub mod console_sessions;
pub mod firmware_history;
pub mod health_reports;
pub mod holds;
pub mod leases;
pub mod nvl_domains;
pub mod operation_requests;
pub mod operation_rule_versions;
pub mod operation_rules;
pub mod rack_rule_associations;
pub mod racks;
pub mod readiness_overrides;
pub mod rollouts;
pub mod task_schedule_runs;
pub mod task_schedule_scopes;
pub mod task_schedules;
pub mod task_steps;
pub mod tasks;

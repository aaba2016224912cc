//! The one integration-test binary: every test talks to the service through HTTP, on real
//! PostgreSQL and SQLite databases.

// Test code may panic on the unexpected: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod api_bad_input;
mod api_components;
mod api_nvl_domains;
mod api_racks;
mod auth;
mod blast_radius;
mod cli;
mod components;
mod dev;
mod durability;
mod faults;
mod firmware_recipes;
mod firmware_rollback;
mod holds;
mod maintenance;
mod migrations;
mod nvl_targets;
mod observability;
mod operations;
mod power_truth;
mod queue;
mod readiness_lock;
mod readme;
mod redfish;
mod rollouts;
mod rules;
mod schedule_domains;
mod schedules;
mod service;
mod tasks;
mod temporal_tls;
mod ui;
mod validation;

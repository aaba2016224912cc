//! Flow: the inventory of GPU datacenter racks and the rack-level operations run on them.
//!
//! A tour of the crate, from the outside in:
//! - [`api`] and [`ui`] are the only modules that know HTTP. [`api`]: axum handlers,
//!   problem+json errors, and the OpenAPI document generated from the same route definitions.
//! - [`inventory`] holds what each rack should contain (racks, components, BMCs, NVL domains)
//!   and the store functions that read and write it.
//! - [`db`] connects to PostgreSQL or SQLite and runs the migrations in the `migration` crate.
//! - [`config`] loads the typed configuration once; [`app`] is the state handlers share.
//! - [`drift`] compares the inventory with what the component managers see (validation, the
//!   periodic drift sync).
//! - [`error`] is the one domain error type.
//! - [`rules`] holds operation rules: stored, default and built-in stage sequences.
//! - [`auth`] resolves bearer credentials (OIDC JWTs, API tokens) to identities and roles;
//!   [`audit`] records who changed what, in the transaction of the change.
//! - [`rollouts`] runs one operation across many racks in gated waves (one durable workflow).
//! - [`ui`] is the operator console: server-rendered HTML under `/ui`, a second HTTP face.

// The OpenAPI examples are large `json!` literals.
#![recursion_limit = "256"]

pub mod api;
pub mod app;
pub mod audit;
pub mod auth;
pub mod bench;
pub mod cli;
pub mod clients;
pub mod components;
pub mod config;
pub mod db;
pub mod dev;
pub mod drift;
pub mod error;
pub mod inventory;
pub mod operations;
pub mod rollouts;
pub mod rules;
pub mod schedules;
pub mod service;
pub mod tasks;
pub mod telemetry;
pub mod ui;
pub mod workflows;

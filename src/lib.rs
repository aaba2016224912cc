//! Flow: the inventory of GPU datacenter racks and the rack-level operations run on them.
//!
//! A tour of the crate, from the outside in:
//! - [`api`] and [`ui`] are the only modules that know HTTP. [`api`]: axum handlers,
//!   problem+json errors, and the OpenAPI document generated from the same route definitions;
//!   [`ui`]: the operator console, server-rendered HTML under `/ui`, a second HTTP face.
//! - [`cli`] is the `flow` command-line client, over HTTP at `FLOW_URL`.
//! - [`service`] wires a running process (`flow serve` / `flow worker`): database, component
//!   managers, Temporal link and worker, the API, and the background loops; [`dev`] is
//!   `flow dev`, the same on SQLite with simulated devices and a local Temporal dev server.
//! - [`app`] assembles the services once through [`app::App::builder`] (shared by [`service`]
//!   and the tests) and holds [`app::AppState`], the state handlers share.
//! - [`config`] loads the typed configuration once.
//! - [`operations`] turns what an operator asked for into the stage plan each rack runs.
//! - [`tasks`] owns one rack's share of an operation: submission, queueing, its run's
//!   lifecycle and report, behind the [`tasks::WorkflowEngine`] trait.
//! - [`workflows`] is that engine on Temporal: the rack and rollout workflows, their
//!   activities, the worker, and Temporal failures sorted by status code.
//! - [`rollouts`] runs one operation across many racks in gated waves (one durable workflow).
//! - [`schedules`] fires recurring or one-time operations, once across all processes.
//! - [`rules`] holds operation rules: stored, default and built-in stage sequences, and which
//!   one a rack's task runs.
//! - [`inventory`] holds what each rack should contain (racks, components, BMCs, NVL domains)
//!   and the store functions that read and write it.
//! - [`drift`] compares the inventory with what the component managers see (validation, the
//!   periodic drift sync).
//! - [`components`] drives the devices of each type through small manager traits (simulator,
//!   Redfish, PSM) chosen per type by the registry; [`clients`] are the thin transports under
//!   them (Redfish over HTTP, PSM over gRPC) with their deadlines.
//! - [`auth`] resolves bearer credentials (OIDC JWTs, API tokens) to identities and roles;
//!   [`audit`] records who changed what, in the transaction of the change.
//! - [`db`] connects to PostgreSQL or SQLite, runs the migrations in the `migration` crate,
//!   and holds the leases that let one process at a time run a named job.
//! - [`telemetry`] sets up logs, OTLP traces and Prometheus metrics.
//! - [`clock`] is where "now" comes from (the wall clock, or a test clock), injected everywhere.
//! - [`error`] is the one domain error type.
//! - [`domain`] is the shared vocabulary (component kinds, operation codes, devices, operation
//!   requests and targets) that several layers name, so none of them imports another for it.
//! - [`ids`] holds the typed ids (`RackId`, `TaskId`, …) the domain passes around.
//! - [`bench`](mod@bench) is the Temporal baseline `scripts/bench` compares a rack fan-out against.

// The OpenAPI examples are large `json!` literals.
#![recursion_limit = "256"]

pub mod api;
pub mod app;
pub mod audit;
pub mod auth;
pub mod bench;
pub mod cli;
pub mod clients;
pub mod clock;
pub mod components;
pub mod config;
pub mod db;
pub mod dev;
pub mod domain;
pub mod drift;
pub mod error;
pub mod ids;
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

//! Tasks: one rack's share of an operation, from submission (conflict check, queueing) through
//! its durable run to a terminal status, with a per-component report.
//!
//! Along the path: `submission` (validate → rule → plan and admit with the one planner →
//! create and start; the dry run; idempotency), `lifecycle` (the one writer of task state:
//! start, step updates, finish, cancel, promote, reconcile), `engine` (the workflow-engine
//! boundary). `store`, `steps` and `list` are the storage; their writers are called by
//! `lifecycle` only.

pub mod engine;
pub mod lifecycle;
mod list;
pub mod maintenance;
pub mod model;
pub mod report;
mod service;
mod step_batch;
mod steps;
pub mod store;
pub mod submission;

pub use engine::{EngineError, RunState, WorkflowEngine};
pub use lifecycle::StepUpdate;
pub use model::{Task, TaskStatus};
pub use service::TaskService;

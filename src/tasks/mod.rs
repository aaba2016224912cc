//! Tasks: one rack's share of an operation, from submission (conflict check, queueing) through
//! its durable run to a terminal status, with a per-component report.

mod admission;
mod capability;
pub mod engine;
mod idempotency;
mod lifecycle;
mod list;
pub mod model;
pub mod preview;
mod refusal;
pub mod report;
pub mod service;
mod steps;
pub mod store;

pub use engine::{EngineError, RunState, WorkflowEngine};
pub use model::{Task, TaskStatus};
pub use service::TaskService;

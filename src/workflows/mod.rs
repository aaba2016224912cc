//! Durable execution on Temporal: the rack workflow and the rollout workflow, each in its own
//! folder with its activities and the engine the task or rollout layer starts runs through
//! (`rack/`, `rollout/`), the link to Temporal, and the worker.

mod credentials;
pub mod link;
pub mod rack;
pub mod rollout;
mod status;
pub mod worker;

pub use link::{LinkedEngine, TemporalLink};
pub use rack::engine::TemporalEngine;

//! Durable execution on Temporal: the rack workflow and the rollout workflow, their activities,
//! the engines the task and rollout layers start runs through, and the worker.

pub mod activities;
pub mod engine;
pub mod link;
pub mod rack_operation;
pub mod rollout;
pub mod rollout_activities;
pub mod rollout_engine;
mod status;
pub mod steps;
pub mod worker;

pub use engine::TemporalEngine;
pub use link::{LinkedEngine, TemporalLink};

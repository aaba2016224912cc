//! Durable execution on Temporal: the rack workflow, its activities, the engine the task layer
//! starts runs through, and the worker.

pub mod activities;
pub mod engine;
pub mod link;
pub mod rack_operation;
pub mod steps;
pub mod worker;

pub use engine::TemporalEngine;
pub use link::{LinkedEngine, TemporalLink};

//! Fleet rollouts: one operation across many racks in waves (a canary, then batches), gated
//! by approval, a failure budget, verification and a maintenance window, run as one durable
//! workflow that submits every rack's task through the normal submission path.

pub mod engine;
pub mod model;
pub mod plan;
pub mod progress;
pub mod run;
pub mod service;
pub mod store;

pub use engine::RolloutEngine;
pub use model::{Command, Rollout, RolloutSpec, RolloutStatus};
pub use service::RolloutService;

//! Task schedules: recurring or one-time operations on a set of racks, fired by a dispatcher
//! that every Flow process runs and that fires each due schedule exactly once between them.

pub mod conflicts;
pub mod dispatcher;
mod domains;
mod fire;
pub mod model;
pub mod service;
pub mod store;
pub mod timing;

pub use dispatcher::dispatch_loop;
pub use model::{OverlapPolicy, Run, Schedule, Scope, SpecKind, TimerSpec};
pub use service::ScheduleService;

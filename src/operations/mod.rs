//! Operations on racks: what an operator asked for (one spec per request), checked without I/O,
//! and the stage plan each rack's workflow walks.

pub mod code;
pub mod model;
pub mod plan;

pub use code::OperationCode;
pub use model::{ConflictStrategy, Operation, OperationSpec, TargetSpec};

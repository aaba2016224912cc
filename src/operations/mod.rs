//! Operations on racks: the stage plan each rack's workflow walks, built from an operation
//! request (`domain::operation`) and the rule that applies.

pub mod plan;

//! Operation rules: stored, versioned stage sequences per operation, the built-in ones, and which
//! rule a rack's task runs.

pub mod associations;
pub mod builtin;
pub mod duration;
pub mod model;
pub mod parse;
mod requested;
pub mod resolve;
pub mod store;

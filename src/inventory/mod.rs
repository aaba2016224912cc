//! The inventory: what each rack should contain, stored in PostgreSQL or SQLite.
//!
//! `model` holds the domain types; `racks`, `components` and `nvl` are the store functions, each
//! taking any connection or transaction so callers can compose them.

pub mod batch;
pub mod components;
mod lookup;
pub mod model;
pub mod nvl;
mod patch;
pub mod query;
pub mod racks;
pub(crate) mod rows;
mod uniqueness;

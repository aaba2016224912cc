//! The inventory: what each rack should contain, stored in PostgreSQL or SQLite.
//!
//! `model` holds the domain types (their value kinds live in `crate::domain`). The store functions, each taking any
//! connection or transaction so callers can compose them, are layered so that nothing calls
//! upwards and the top modules never call each other:
//! - top: `racks`, `components` (+ `patch`), `nvl` (domains), `targets` (an operation's targets
//!   resolved into devices per rack), `holds` and `health` (what makes a component not ready),
//!   `firmware_history` (what a rollback returns to);
//! - shared writes: `merge` (component updates, set-based rack merges), `writes` (new rows,
//!   batched inserts, soft deletes), `uniqueness` (every clash check and its 409);
//! - reads and helpers: `live` (live rows by id, name, serial), `lookup` and `batch` (the hot
//!   single-component read), `rows` (row ↔ domain conversions), `query` (paging, text
//!   matching), `revision` (`If-Match` and compare-and-set).

pub mod batch;
pub mod components;
pub mod firmware_history;
pub mod health;
pub mod holds;
mod live;
mod lookup;
mod merge;
pub mod model;
pub mod nvl;
mod patch;
pub mod query;
pub mod rack_lock;
pub mod racks;
mod revision;
pub(crate) mod rows;
pub mod targets;
mod uniqueness;
mod writes;

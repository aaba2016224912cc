//! The fault suite: lost-update races, Temporal and PostgreSQL outages, a worker killed
//! mid-operation, shutdown with open event streams, hostile input, stream and connection floods. Every
//! test is bounded in time; anything stopped or cut is the test's own (its own Temporal dev
//! server, a TCP proxy in front of PostgreSQL), never the shared services.

mod bounds;
mod database;
mod input;
mod queue;
mod race;
mod replicas;
mod replicas_queue;
mod shutdown;
pub(crate) mod support;
mod temporal;
mod worker;

//! Request and response bodies of the REST API (OpenAPI schemas), and their conversion to and
//! from domain types, including field-by-field input validation.

pub mod common;
pub mod component;
pub mod drift;
pub mod firmware_back;
pub mod nvl;
pub mod operation;
pub mod rack;
pub mod readiness;
pub mod recipe_plan;
pub mod rollout;
pub mod rollout_view;
pub mod rule;
pub mod schedule;
pub mod schedule_view;
pub mod target;
pub mod task;
pub mod time;

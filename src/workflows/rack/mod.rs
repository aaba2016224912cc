//! One rack's task as a workflow: the workflow walking the plan's stages, the activities that
//! drive each component, the step actions they run, and the engine that starts and steers it.

mod actions;
pub mod activities;
mod beat;
pub mod engine;
mod recipe;
pub mod steps;
pub mod workflow;

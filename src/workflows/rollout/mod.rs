//! A fleet rollout as a workflow: the workflow walking the waves, its gates (canary, budget,
//! approval, windows), the activities that submit and watch each wave, and its engine.

pub mod activities;
pub mod engine;
pub mod workflow;

//! The Temporal baseline of `scripts/bench`: the same number of workflows and activities as a
//! rack power-on fan-out, shaped the same way (one bookkeeping activity, then stages of parallel
//! activities bounded by their `max_parallel`, then one more bookkeeping activity), except that
//! every activity does nothing. Run as the hidden `flow bench-baseline` subcommand; prints one
//! JSON line with the time from the first start to the last completion. With `--batch N` the
//! workflows run N at a time, each group after the previous one ended: the baseline of a
//! rollout in waves of N racks.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use serde::{Deserialize, Serialize};
use temporalio_client::{WorkflowGetResultOptions, WorkflowStartOptions};
use temporalio_macros::{activities, workflow, workflow_methods};
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::{
    ActivityOptions, Runtime, Worker, WorkerOptions, WorkflowContext, WorkflowResult,
    workflows::join_all,
};

use crate::config::Config;
use crate::workflows::worker;

/// `flow bench-baseline`: no-op workflows on the configured Temporal server.
#[derive(Debug, Parser)]
#[command(name = "flow bench-baseline")]
pub struct BaselineArgs {
    /// How many workflows to run at once (one per rack).
    #[arg(long, default_value_t = 100)]
    pub workflows: usize,
    /// Stages of each workflow as `activities:max_parallel`, comma-separated; the default is a
    /// GB200 rack's power-on (8 power shelves 2 at a time, 9 NVSwitch trays, 18 compute trays 6
    /// at a time).
    #[arg(long, default_value = "8:2,9:9,18:6")]
    pub stages: String,
    /// Run the workflows in groups of this many, one group after the other (0 = all at once).
    #[arg(long, default_value_t = 0)]
    pub batch: usize,
}

/// One stage: `activities` no-op activities, at most `max_parallel` in flight.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct BenchStage {
    pub activities: u32,
    pub max_parallel: u32,
}

/// The baseline workflow's input.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchInput {
    pub stages: Vec<BenchStage>,
}

#[workflow]
#[derive(Default)]
pub struct BenchWorkflow {
    in_flight: usize,
    max_parallel: usize,
}

fn noop_options() -> ActivityOptions {
    ActivityOptions::with_start_to_close_timeout(Duration::from_secs(30)).build()
}

#[workflow_methods]
impl BenchWorkflow {
    #[run(name = "FlowBenchBaseline")]
    pub async fn run(ctx: &mut WorkflowContext<Self>, input: BenchInput) -> WorkflowResult<u32> {
        let mut done = ctx
            .execute_activity(BenchActivities::noop, 0u32, noop_options())
            .await?;
        for stage in &input.stages {
            ctx.state_mut(|s| s.max_parallel = stage.max_parallel.max(1) as usize);
            let runs: Vec<_> = (0..stage.activities)
                .map(|n| {
                    let ctx = ctx.clone();
                    async move {
                        if ctx
                            .wait_condition(|s| s.in_flight < s.max_parallel)
                            .await
                            .is_err()
                        {
                            return None;
                        }
                        ctx.state_mut(|s| s.in_flight += 1);
                        let result = ctx
                            .execute_activity(BenchActivities::noop, n, noop_options())
                            .await;
                        ctx.state_mut(|s| s.in_flight -= 1);
                        result.ok()
                    }
                })
                .collect();
            done += join_all(runs).await.into_iter().flatten().count() as u32;
        }
        done += ctx
            .execute_activity(BenchActivities::noop, 0u32, noop_options())
            .await?;
        Ok(done)
    }
}

/// Activities that do nothing.
pub struct BenchActivities;

#[activities]
impl BenchActivities {
    #[activity(name = "FlowBenchNoop")]
    pub async fn noop(
        self: Arc<Self>,
        _ctx: ActivityContext,
        _n: u32,
    ) -> Result<u32, ActivityError> {
        Ok(1)
    }
}

fn parse_stages(text: &str) -> anyhow::Result<Vec<BenchStage>> {
    text.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            let (count, parallel) = s.trim().split_once(':').unwrap_or((s.trim(), "0"));
            let activities: u32 = count.parse().context("--stages: activity count")?;
            let max_parallel: u32 = parallel.parse().context("--stages: max_parallel")?;
            Ok(BenchStage {
                activities,
                max_parallel: if max_parallel == 0 {
                    activities
                } else {
                    max_parallel
                },
            })
        })
        .collect()
}

/// Entry point of `flow bench-baseline ARGS` (`args` excludes the program and subcommand).
pub async fn main_from_args(args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let args =
        BaselineArgs::parse_from(std::iter::once("flow bench-baseline".to_string()).chain(args));
    let config = Config::from_env()?;
    let stages = parse_stages(&args.stages)?;
    let per_workflow: u32 = 2 + stages.iter().map(|s| s.activities).sum::<u32>();

    let client = worker::connect_with(&config.temporal, Duration::from_secs(10)).await?;
    worker::ensure_namespace(&client, &config.temporal.namespace).await?;
    let runtime = Runtime::from_current_tokio(Default::default())
        .map_err(|e| anyhow::anyhow!("Temporal runtime: {e}"))?;
    let task_queue = format!("flow-bench-baseline-{}", uuid::Uuid::new_v4());
    let options = WorkerOptions::new(task_queue.clone())
        .register_workflow::<BenchWorkflow>()
        .map_err(|e| anyhow::anyhow!("registering the workflow: {e}"))?
        .register_activities(BenchActivities)
        .graceful_shutdown_period(Duration::from_secs(2))
        .sticky_queue_schedule_to_start_timeout(Duration::from_secs(3))
        .build();
    let mut temporal_worker = Worker::new(&runtime, client.clone(), options)
        .map_err(|e| anyhow::anyhow!("creating the worker: {e}"))?;
    let stop_worker = temporal_worker.shutdown_handle();

    let driver = async {
        let result = async {
            let input = BenchInput { stages };
            let started = Instant::now();
            let group = if args.batch == 0 {
                args.workflows.max(1)
            } else {
                args.batch
            };
            let mut results = Vec::with_capacity(args.workflows);
            for first in (0..args.workflows).step_by(group) {
                let last = (first + group).min(args.workflows);
                let starts = (first..last).map(|i| {
                    let client = client.clone();
                    let input = input.clone();
                    let task_queue = task_queue.clone();
                    async move {
                        let options = WorkflowStartOptions::new(
                            task_queue.clone(),
                            format!("{task_queue}-{i}"),
                        )
                        .execution_timeout(Duration::from_secs(600))
                        .build();
                        let handle = client
                            .start_workflow(BenchWorkflow::run, input, options)
                            .await
                            .map_err(|e| anyhow::anyhow!("starting a workflow: {e}"))?;
                        handle
                            .get_result(WorkflowGetResultOptions::default())
                            .await
                            .map_err(|e| anyhow::anyhow!("a workflow failed: {e}"))
                    }
                });
                results.extend(futures::future::join_all(starts).await);
            }
            let elapsed = started.elapsed();
            let mut completed = 0usize;
            for r in results {
                r?;
                completed += 1;
            }
            anyhow::Ok((elapsed, completed))
        }
        .await;
        stop_worker();
        result
    };
    let (worker_result, driver_result) = tokio::join!(temporal_worker.run(), driver);
    let (elapsed, completed) = driver_result?;
    worker_result.map_err(|e| anyhow::anyhow!("worker: {e}"))?;
    let line = serde_json::json!({
        "workflows": completed,
        "batch": args.batch,
        "activities_per_workflow": per_workflow,
        "activities": completed as u64 * u64::from(per_workflow),
        "seconds": elapsed.as_secs_f64(),
    });
    println!("{line}");
    Ok(())
}

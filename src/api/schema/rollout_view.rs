//! What the rollout endpoints answer: the rollout with its waves, each rack's task and live
//! task status, counts and the failure budget used; and the dry run's wave plan.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::rollout::{
    BatchSizeDoc, FailureBudgetDoc, OrderDoc, RecurringDoc, SelectorDoc, SpreadByDoc, StrategyDoc,
    VerifyDoc, WindowDoc,
};
use crate::rollouts::model::{
    BatchSize, OnRefused, Order, Rollout, RolloutStatus, RolloutTargets, SpreadBy, Verify,
    WaveStatus,
};
use crate::rollouts::progress::{Counts, RackOutcome, outcome};
use crate::rollouts::service::PlannedRack;
use crate::tasks::TaskStatus;

/// Racks per outcome.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct CountsDoc {
    pub total: u32,
    /// Not submitted yet.
    pub pending: u32,
    /// Their task has not ended.
    pub running: u32,
    pub succeeded: u32,
    /// Their task failed or was cancelled, verification found them not clean, or they were
    /// refused with `on_refused: fail`.
    pub failed: u32,
    /// Refused at submission with `on_refused: skip`.
    pub skipped: u32,
    /// Never submitted: the rollout ended before their wave.
    pub not_run: u32,
}

impl From<Counts> for CountsDoc {
    fn from(c: Counts) -> Self {
        Self {
            total: c.total,
            pending: c.pending,
            running: c.running,
            succeeded: c.succeeded,
            failed: c.failed,
            skipped: c.skipped,
            not_run: c.not_run,
        }
    }
}

/// How much of the failure budget the failed racks use.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BudgetUsedDoc {
    pub failed_racks: u32,
    pub max_failed_racks: Option<u32>,
    pub failed_fraction: f64,
    pub max_failed_fraction: Option<f64>,
    pub exceeded: bool,
}

/// One rack of a wave.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WaveRackDoc {
    pub rack_id: Uuid,
    pub rack_name: String,
    /// `pending`, `running`, `succeeded`, `failed`, `skipped` or `not_run`.
    pub outcome: String,
    pub task_id: Option<Uuid>,
    /// The task's live status.
    pub task_status: Option<String>,
    /// Why it was refused, or what verification found.
    pub reason: Option<String>,
}

/// One wave; the canary is the first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WaveDoc {
    /// 0-based.
    pub index: u32,
    pub canary: bool,
    /// `pending`, `running`, `verifying`, `succeeded`, `failed` or `not_run`.
    pub status: String,
    pub counts: CountsDoc,
    pub racks: Vec<WaveRackDoc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// A rollout.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RolloutDoc {
    pub id: Uuid,
    pub name: String,
    /// `pending | running | paused | awaiting_approval | waiting_for_window | succeeded |
    /// failed | halted | aborted`.
    pub status: String,
    /// What the run is doing or why it ended.
    pub message: String,
    /// Operation code, e.g. `upgrade`.
    pub operation: String,
    pub racks: Option<Vec<String>>,
    pub selector: Option<SelectorDoc>,
    /// The NVLink domains (id or name, as given) the rollout targeted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nvl_domains: Option<Vec<String>>,
    pub strategy: StrategyDoc,
    pub window: Option<WindowDoc>,
    /// `skip` or `fail`.
    pub on_refused: String,
    /// Index of the wave being run or gated on.
    pub current_wave: Option<u32>,
    pub approved: bool,
    pub counts: CountsDoc,
    pub failure_budget_used: BudgetUsedDoc,
    pub waves: Vec<WaveDoc>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
}

fn snake<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

fn strategy_doc(r: &Rollout) -> StrategyDoc {
    let s = &r.spec.strategy;
    StrategyDoc {
        order: Some(match s.order {
            Order::Name => OrderDoc::Name,
            Order::Location => OrderDoc::Location,
        }),
        canary: Some(i64::from(s.canary)),
        batch_size: Some(match s.batch_size {
            BatchSize::Racks(n) => BatchSizeDoc::Racks(i64::from(n)),
            BatchSize::Percent(p) => BatchSizeDoc::Text(format!("{p}%")),
        }),
        max_concurrent_racks: s.max_concurrent_racks.map(i64::from),
        pause_between: Some(crate::rules::duration::format(
            std::time::Duration::from_secs(s.pause_between_secs),
        )),
        approval_after_canary: s.approval_after_canary,
        failure_budget: Some(FailureBudgetDoc {
            max_failed_racks: s.failure_budget.max_failed_racks.map(i64::from),
            max_failed_fraction: s.failure_budget.max_failed_fraction,
        }),
        spread_by: Some(match s.spread_by {
            SpreadBy::None => SpreadByDoc::None,
            SpreadBy::NvlDomain => SpreadByDoc::NvlDomain,
            SpreadBy::Room => SpreadByDoc::Room,
        }),
        verify: Some(match s.verify {
            Verify::None => VerifyDoc::None,
            Verify::Validation => VerifyDoc::Validation,
        }),
        split_domains: s.split_domains,
    }
}

impl RolloutDoc {
    /// The rollout with its tasks' live statuses.
    pub fn new(r: Rollout, statuses: &HashMap<crate::ids::TaskId, TaskStatus>) -> Self {
        let counts = Counts::of(r.racks(), statuses);
        let budget = r.spec.strategy.failure_budget;
        let total = counts.total.max(1);
        let waves = r
            .waves
            .iter()
            .map(|w| WaveDoc {
                index: w.index,
                canary: w.canary,
                status: snake::<WaveStatus>(&w.status),
                counts: Counts::of(w.racks.iter(), statuses).into(),
                racks: w
                    .racks
                    .iter()
                    .map(|rack| WaveRackDoc {
                        rack_id: rack.rack_id.into(),
                        rack_name: rack.rack_name.clone(),
                        outcome: snake::<RackOutcome>(&outcome(rack, statuses)),
                        task_id: rack.task_id.map(Into::into),
                        task_status: rack
                            .task_id
                            .and_then(|t| statuses.get(&t))
                            .map(|s| s.as_str().to_string()),
                        reason: rack.reason.clone(),
                    })
                    .collect(),
                started_at: w.started_at,
                finished_at: w.finished_at,
            })
            .collect();
        let (racks, selector, nvl_domains) = match &r.spec.targets {
            RolloutTargets::Racks(refs) => (
                Some(refs.iter().map(ToString::to_string).collect()),
                None,
                None,
            ),
            RolloutTargets::Selector(s) => (
                None,
                Some(SelectorDoc {
                    datacenter: s.datacenter.clone(),
                    room: s.room.clone(),
                    nvl_domain: s.nvl_domain.clone(),
                    name: s.name.clone(),
                }),
                None,
            ),
            RolloutTargets::NvlDomains(ds) => (
                None,
                None,
                Some(ds.iter().map(ToString::to_string).collect()),
            ),
        };
        Self {
            id: r.id.into(),
            name: r.spec.name.clone(),
            status: r.status.as_str().to_string(),
            message: r.message.clone(),
            operation: r.spec.template.operation.code().to_string(),
            racks,
            selector,
            nvl_domains,
            strategy: strategy_doc(&r),
            window: r.spec.window.map(|w| WindowDoc {
                start: w.start,
                end: w.end,
                recurring: if w.daily {
                    RecurringDoc::Daily
                } else {
                    RecurringDoc::None
                },
            }),
            on_refused: match r.spec.on_refused {
                OnRefused::Skip => "skip",
                OnRefused::Fail => "fail",
            }
            .to_string(),
            current_wave: r.current_wave,
            approved: r.approved,
            counts: counts.into(),
            failure_budget_used: BudgetUsedDoc {
                failed_racks: counts.failed,
                max_failed_racks: budget.max_failed_racks,
                failed_fraction: f64::from(counts.failed) / f64::from(total),
                max_failed_fraction: budget.max_failed_fraction,
                exceeded: budget.exceeded(counts.failed, counts.total),
            },
            waves,
            created_at: r.created_at,
            updated_at: r.updated_at,
            started_at: r.started_at,
            finished_at: r.finished_at,
        }
    }

    pub fn ended(&self) -> bool {
        RolloutStatus::parse(&self.status).is_some_and(RolloutStatus::is_terminal)
    }
}

/// One rack of a planned wave, with what submitting its task now would do.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PlannedRackDoc {
    pub rack_id: Uuid,
    pub rack_name: String,
    /// `start`, `queue` or `reject` (as the operation dry run answers).
    pub outcome: String,
    /// Why it would be refused (`rack_busy`, `queue_full`, `no_components`, `unsupported`).
    pub reason: Option<String>,
}

/// One planned wave.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PlannedWaveDoc {
    pub index: u32,
    pub canary: bool,
    pub racks: Vec<PlannedRackDoc>,
}

/// The wave plan a rollout would run, exactly as it would run it; nothing was created.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RolloutPlanDoc {
    pub dry_run: bool,
    pub total_racks: u32,
    pub waves: Vec<PlannedWaveDoc>,
}

impl RolloutPlanDoc {
    pub fn new(waves: Vec<Vec<PlannedRack>>, canary: bool) -> Self {
        Self {
            dry_run: true,
            total_racks: waves.iter().map(|w| w.len() as u32).sum(),
            waves: waves
                .into_iter()
                .enumerate()
                .map(|(i, racks)| PlannedWaveDoc {
                    index: i as u32,
                    canary: canary && i == 0,
                    racks: racks
                        .into_iter()
                        .map(|r| PlannedRackDoc {
                            rack_id: r.rack_id.into(),
                            rack_name: r.rack_name,
                            outcome: r.outcome,
                            reason: r.reason,
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

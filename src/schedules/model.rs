//! Schedule records: the timer, the operation template, the racks in scope, and each fire.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::ComponentType;
pub use crate::domain::OperationTemplate;
use crate::domain::operation::{ConflictStrategy, DomainRef, RackTarget};
use crate::ids::{NvlDomainId, RackId, ScheduleId, TaskId};

/// How a schedule's fire times are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpecKind {
    /// A duration (`90s`, `1m30s`, `2h`) between fires.
    Interval,
    /// A five-field cron expression, evaluated in the schedule's time zone.
    Cron,
    /// One RFC 3339 instant.
    OneTime,
}

impl SpecKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Interval => "interval",
            Self::Cron => "cron",
            Self::OneTime => "one_time",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Interval, Self::Cron, Self::OneTime]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

/// When a schedule fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerSpec {
    pub kind: SpecKind,
    pub spec: String,
    /// IANA zone name; only cron expressions are read in it.
    pub timezone: String,
}

/// What a fire does on a rack whose previous scheduled task is still active.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverlapPolicy {
    /// Leave the rack out of this fire.
    #[default]
    Skip,
    /// Submit anyway; the task waits in the rack's queue behind conflicting work.
    Queue,
}

impl OverlapPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Skip => "skip",
            Self::Queue => "queue",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Skip, Self::Queue]
            .into_iter()
            .find(|p| p.as_str() == s)
    }

    pub fn conflict_strategy(self) -> ConflictStrategy {
        match self {
            Self::Skip => ConflictStrategy::Reject,
            Self::Queue => ConflictStrategy::Queue,
        }
    }
}

/// A stored schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub id: ScheduleId,
    pub name: String,
    pub timer: TimerSpec,
    pub template: OperationTemplate,
    pub overlap: OverlapPolicy,
    pub enabled: bool,
    /// None once a one-time schedule has fired.
    pub next_run_at: Option<DateTime<Utc>>,
    pub last_run_at: Option<DateTime<Utc>>,
    /// Bumped by every write; claims compare and set it.
    pub revision: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Schedule {
    /// A one-time schedule that has fired: it never fires again and cannot be resumed.
    pub fn is_consumed(&self) -> bool {
        self.timer.kind == SpecKind::OneTime && self.next_run_at.is_none()
    }
}

/// One rack a schedule targets, optionally narrowed to some component types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub id: Uuid,
    pub schedule_id: ScheduleId,
    pub rack_id: RackId,
    /// Empty means every component of the rack.
    pub component_types: Vec<ComponentType>,
    /// The task the latest fire created on this rack (the overlap check reads it).
    pub last_task_id: Option<TaskId>,
    /// The NVLink domain that brought the rack in, when it came with one: such a rack follows
    /// its domain (each fire adds the domain's new racks and drops those that left it).
    pub nvl_domain_id: Option<NvlDomainId>,
    pub created_at: DateTime<Utc>,
}

/// What a schedule targets, as asked: racks (each optionally narrowed to some component
/// types) and NVLink domains (every live rack of each, all its components).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScheduleTargets {
    pub racks: Vec<RackTarget>,
    pub domains: Vec<DomainRef>,
}

/// One rack a schedule's targets resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedRack {
    pub rack_id: RackId,
    /// Empty means every component of the rack.
    pub component_types: Vec<ComponentType>,
    /// The domain it came through (none when named as a rack).
    pub nvl_domain_id: Option<NvlDomainId>,
}

/// What started a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunTrigger {
    /// The dispatcher, at the schedule's time.
    Schedule,
    /// `POST …/trigger`.
    Manual,
}

impl RunTrigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Schedule => "schedule",
            Self::Manual => "manual",
        }
    }
}

/// What one fire did on one rack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum RackOutcome {
    /// Claimed but not submitted yet (the fire is in progress).
    Pending,
    Created {
        task_id: TaskId,
    },
    /// Left out: the rack is busy (overlap policy `skip`).
    Skipped {
        reason: String,
    },
    Failed {
        error: String,
    },
}

/// One rack's line in a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RackResult {
    pub rack_id: RackId,
    #[serde(flatten)]
    pub outcome: RackOutcome,
}

/// One fire of a schedule and what it did on each rack in scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub id: Uuid,
    pub schedule_id: ScheduleId,
    pub trigger: RunTrigger,
    pub fired_at: DateTime<Utc>,
    /// Whether every rack has its outcome.
    pub done: bool,
    pub results: Vec<RackResult>,
    pub finished_at: Option<DateTime<Utc>>,
}

impl Run {
    pub fn task_ids(&self) -> Vec<TaskId> {
        self.results
            .iter()
            .filter_map(|r| match r.outcome {
                RackOutcome::Created { task_id } => Some(task_id),
                _ => None,
            })
            .collect()
    }
}

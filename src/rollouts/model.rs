//! Rollout model: the validated request (operation, targets, strategy, window), the wave plan
//! it becomes, and the status the rollout workflow moves it through.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::domain::ComponentType;
use crate::domain::OperationTemplate;
use crate::domain::operation::{ConflictStrategy, DomainRef, RackRef};
use crate::ids::{NvlDomainId, RackId, RolloutId, TaskId};

/// Which racks a rollout covers: named racks, every rack a selector matches, or every live
/// rack of some NVLink domains (resolved, like a selector, when the rollout is created).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RolloutTargets {
    Racks(Vec<RackRef>),
    Selector(Selector),
    NvlDomains(Vec<DomainRef>),
}

/// Every rack matching all the given fields (at least one is given).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selector {
    pub datacenter: Option<String>,
    pub room: Option<String>,
    /// NVL domain id or name.
    pub nvl_domain: Option<String>,
    /// Rack name, or a case-insensitive glob with `*`.
    pub name: Option<String>,
}

/// The order racks are put into waves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    #[default]
    Name,
    /// Datacenter, room, position, then name: neighbours go together.
    Location,
}

/// Racks per wave after the canary: a count or a share of all racks (rounded up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchSize {
    Racks(u32),
    Percent(u32),
}

/// Groups of which a wave takes at most one rack (or, while domains are kept whole, at most
/// one domain-or-rack unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpreadBy {
    #[default]
    None,
    NvlDomain,
    Room,
}

/// What is checked after each wave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verify {
    #[default]
    None,
    /// The wave's racks must validate clean against their component managers.
    Validation,
}

/// How a rack the submission refuses (busy, unsupported, nothing to do) counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnRefused {
    #[default]
    Skip,
    Fail,
}

/// Failed racks the rollout tolerates before it halts; both limits apply when given.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct FailureBudget {
    pub max_failed_racks: Option<u32>,
    pub max_failed_fraction: Option<f64>,
}

impl FailureBudget {
    /// Whether `failed` of `total` racks is more than the budget allows.
    pub fn exceeded(&self, failed: u32, total: u32) -> bool {
        let by_count = self.max_failed_racks.is_some_and(|max| failed > max);
        let by_share = self
            .max_failed_fraction
            .is_some_and(|max| total > 0 && f64::from(failed) / f64::from(total) > max);
        by_count || by_share
    }
}

/// How the racks are split into waves and how the waves are gated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Strategy {
    pub order: Order,
    /// Racks of the first wave (0: no canary wave).
    pub canary: u32,
    pub batch_size: BatchSize,
    /// Most racks of a wave with a task running at once (none: the whole wave).
    pub max_concurrent_racks: Option<u32>,
    /// Wait between the end of a wave and the start of the next.
    pub pause_between_secs: u64,
    pub approval_after_canary: bool,
    pub failure_budget: FailureBudget,
    pub spread_by: SpreadBy,
    pub verify: Verify,
    /// Plan racks one by one even if that puts the racks of one NVLink domain in different
    /// waves. Off by default: a wave takes a domain's racks together, and its tasks are
    /// submitted as one request, which the domain rule of firmware operations then accepts.
    #[serde(default)]
    pub split_domains: bool,
}

/// When waves may start: between `start` and `end`, or every day between their times of day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub daily: bool,
}

/// A validated rollout request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RolloutSpec {
    pub name: String,
    pub template: OperationTemplate,
    pub targets: RolloutTargets,
    /// Narrows every rack's task to these component types (empty: the whole rack).
    pub component_types: Vec<ComponentType>,
    pub strategy: Strategy,
    pub window: Option<Window>,
    pub conflict_strategy: ConflictStrategy,
    pub on_refused: OnRefused,
}

/// A targeted rack with what the planner orders and spreads by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RackInfo {
    pub id: RackId,
    pub name: String,
    pub datacenter: Option<String>,
    pub room: Option<String>,
    pub position: Option<String>,
    pub nvl_domain: Option<NvlDomainId>,
}

/// Where a rack of a wave is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RackState {
    /// Not submitted yet.
    Pending,
    /// Its task exists; the task's own status says how it goes.
    Submitted,
    /// Refused at submission, counted as skipped.
    Skipped,
    /// Refused at submission, counted as failed.
    Refused,
    /// Its wave was never run (halted or aborted before it).
    NotRun,
}

/// One rack of a wave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WaveRack {
    pub rack_id: RackId,
    pub rack_name: String,
    pub state: RackState,
    pub task_id: Option<TaskId>,
    /// Why it was refused, or why verification failed.
    pub reason: Option<String>,
    /// Set when the wave's verification found this rack not clean.
    #[serde(default)]
    pub verify_failed: bool,
}

/// How a wave went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaveStatus {
    Pending,
    Running,
    Verifying,
    Succeeded,
    Failed,
    NotRun,
}

/// One wave: the canary (index 0 when there is one) or a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wave {
    pub index: u32,
    pub canary: bool,
    pub status: WaveStatus,
    pub racks: Vec<WaveRack>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// Where a rollout is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RolloutStatus {
    Pending,
    Running,
    Paused,
    AwaitingApproval,
    WaitingForWindow,
    Succeeded,
    Failed,
    Halted,
    Aborted,
}

impl RolloutStatus {
    pub const ALL: [Self; 9] = [
        Self::Pending,
        Self::Running,
        Self::Paused,
        Self::AwaitingApproval,
        Self::WaitingForWindow,
        Self::Succeeded,
        Self::Failed,
        Self::Halted,
        Self::Aborted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Paused => "paused",
            Self::AwaitingApproval => "awaiting_approval",
            Self::WaitingForWindow => "waiting_for_window",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Halted => "halted",
            Self::Aborted => "aborted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Succeeded | Self::Failed | Self::Halted | Self::Aborted
        )
    }
}

/// A stored rollout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rollout {
    pub id: RolloutId,
    pub spec: RolloutSpec,
    pub status: RolloutStatus,
    pub waves: Vec<Wave>,
    /// The wave being run or gated on.
    pub current_wave: Option<u32>,
    pub approved: bool,
    pub message: String,
    pub revision: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
}

impl Rollout {
    /// Every rack of every wave, in wave order.
    pub fn racks(&self) -> impl Iterator<Item = &WaveRack> {
        self.waves.iter().flat_map(|w| w.racks.iter())
    }

    pub fn total_racks(&self) -> u32 {
        self.racks().count() as u32
    }
}

/// A steering command for a running rollout (a signal to its workflow).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Command {
    Pause,
    Resume,
    Approve,
    /// Stop starting racks; `cancel_running` also cancels the tasks still running.
    Abort {
        cancel_running: bool,
    },
}

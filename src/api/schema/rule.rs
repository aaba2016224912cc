//! Operation-rule bodies: the rule format (documented here, validated in `rules::parse`), stored
//! rules, versions, rack associations, and dry-run plans.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::common::ComponentTypeDoc;
use crate::rules::associations::Association;
use crate::rules::model::{AppliedRule, Rule, RuleSource};
use crate::rules::store::RuleVersion;
use crate::tasks::submission::RackPreview;

/// One action of a stage. Which other keys apply depends on `action`:
/// `power_control` (`operation`: power_on, force_power_on, power_off, force_power_off, restart,
/// force_restart, warm_reset, cold_reset; optional in power_on/power_off/force_power_off rules),
/// `verify_power` (`expect` on|off, `timeout`, `poll_interval`), `verify_reachable` (`timeout`,
/// `poll_interval`), `sleep` (`duration`), `firmware_start` (optional `bundle`: one bundle of
/// the version's recipe), `firmware_wait` (`timeout`, `poll_interval`; after a
/// `firmware_start`), `firmware_activate` (optional `bundle`, `timeout`, `poll_interval`: the
/// bundle's declared activation, `bmc_reset` or `power_cycle`), `firmware_verify` (`timeout`,
/// `poll_interval`: every part of the recipe at its expected version), `firmware_recipe`
/// (`timeout`, `poll_interval`: the whole recipe on the tray), `register`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"action": "verify_power", "expect": "on", "timeout": "5m", "poll_interval": "10s"}))]
pub struct RuleActionDoc {
    pub action: String,
    pub operation: Option<String>,
    pub expect: Option<String>,
    /// Duration such as `90s`, `5m`, `1h30m`.
    pub timeout: Option<String>,
    pub poll_interval: Option<String>,
    pub duration: Option<String>,
    /// `firmware_start` / `firmware_activate`: the recipe bundle (index from 0) it acts on.
    pub bundle: Option<u32>,
}

/// Retry policy of one component's pass through a stage; only transient errors are retried.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RetryDoc {
    /// Total attempts, the first included (1–20, default 3).
    pub max_attempts: Option<u32>,
    /// Default `1s`.
    pub initial_interval: Option<String>,
    /// 1–10, default 2.
    pub backoff_coefficient: Option<f64>,
    /// Default `1m`.
    pub max_interval: Option<String>,
}

/// One stage: every component of `component_types` goes through `actions` in order, at most
/// `max_parallel` components at once.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RuleStageDoc {
    /// Default: the main action and the types.
    pub name: Option<String>,
    pub component_types: Vec<ComponentTypeDoc>,
    pub actions: Vec<RuleActionDoc>,
    /// At least 1 (default 1).
    pub max_parallel: Option<u32>,
    /// One attempt of one component's whole action list (default `20m`); at least the sum of the
    /// actions' timeouts and sleeps.
    pub timeout: Option<String>,
    pub retry: Option<RetryDoc>,
    /// `stop` (default): the task fails and later stages do not run; `continue`: later stages
    /// run and the task ends failed naming every failed component.
    pub on_failure: Option<String>,
    /// Pause after the stage (durable), e.g. `30s` for power to drain.
    pub delay_after: Option<String>,
    /// `ac_cycle`: the stage runs only when a tray staged a firmware image that needs the
    /// rack's AC cycle (a recipe bundle with `activate = "ac_cycle"`); skipped otherwise.
    pub when: Option<String>,
}

/// A rule as sent to create or replace one (JSON or YAML).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({
    "name": "careful power on", "operation": "power_on", "is_default": false,
    "stages": [
        {"name": "shelves", "component_types": ["powershelf"], "max_parallel": 2, "timeout": "6m",
         "retry": {"max_attempts": 3, "initial_interval": "5s", "backoff_coefficient": 2.0, "max_interval": "1m"},
         "actions": [{"action": "power_control"}, {"action": "verify_power", "expect": "on", "timeout": "5m", "poll_interval": "10s"}]},
        {"name": "trays", "component_types": ["nvswitch", "compute"], "max_parallel": 4, "timeout": "8m", "on_failure": "continue",
         "actions": [{"action": "power_control"}, {"action": "sleep", "duration": "20s"},
                     {"action": "verify_power", "expect": "on", "timeout": "5m", "poll_interval": "10s"}]}
    ]
}))]
pub struct RuleRequestDoc {
    /// At most 128 characters; not unique.
    pub name: String,
    pub description: Option<String>,
    /// `power_on`, `power_off`, `force_power_off`, `restart`, `force_restart`, `warm_reset`,
    /// `cold_reset`, `upgrade`, `bring_up` or `ingest`.
    pub operation: String,
    /// Make it the operation's default rule (refused while another rule is).
    pub is_default: Option<bool>,
    /// Definition format; only `v1`.
    pub version: Option<String>,
    pub stages: Vec<RuleStageDoc>,
}

/// A rule: stored (with id and version) or built in (`builtin`, no id).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RuleDoc {
    pub id: Option<Uuid>,
    pub name: String,
    pub description: Option<String>,
    pub operation: String,
    pub is_default: bool,
    pub builtin: bool,
    /// Current version; every replace adds one.
    pub version: Option<i32>,
    #[schema(value_type = Vec<RuleStageDoc>)]
    pub stages: serde_json::Value,
    pub created_at: Option<DateTime<Utc>>,
    pub updated_at: Option<DateTime<Utc>>,
}

impl From<Rule> for RuleDoc {
    fn from(r: Rule) -> Self {
        Self {
            id: r.id.map(Into::into),
            name: r.name,
            description: r.description,
            operation: r.operation.to_string(),
            is_default: r.is_default,
            builtin: r.builtin,
            version: r.version,
            stages: serde_json::to_value(&r.definition.stages).unwrap_or_default(),
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// A list of rules.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RuleListDoc {
    pub items: Vec<RuleDoc>,
    pub total: usize,
}

/// One stored version of a rule.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RuleVersionDoc {
    pub version: i32,
    pub name: String,
    pub description: Option<String>,
    #[schema(value_type = Vec<RuleStageDoc>)]
    pub stages: serde_json::Value,
    pub created_at: DateTime<Utc>,
}

impl From<RuleVersion> for RuleVersionDoc {
    fn from(v: RuleVersion) -> Self {
        Self {
            version: v.version,
            name: v.name,
            description: v.description,
            stages: serde_json::to_value(&v.definition.stages).unwrap_or_default(),
            created_at: v.created_at,
        }
    }
}

/// Versions of a rule, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RuleVersionListDoc {
    pub items: Vec<RuleVersionDoc>,
}

/// Body of `PUT /v1/racks/{id}/operation-rules/{operation}`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"rule_id": "0192f3a0-0000-7000-8000-0000000000cc"}))]
pub struct AssociateRequest {
    pub rule_id: Uuid,
}

/// The rule a rack runs for one operation.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AssociationDoc {
    pub rack_id: Uuid,
    pub operation: String,
    pub rule_id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<Association> for AssociationDoc {
    fn from(a: Association) -> Self {
        Self {
            rack_id: a.rack_id.into(),
            operation: a.operation.to_string(),
            rule_id: a.rule_id.into(),
            created_at: a.created_at,
            updated_at: a.updated_at,
        }
    }
}

/// A rack's rule associations.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AssociationListDoc {
    pub items: Vec<AssociationDoc>,
}

/// The rule a task runs (or ran) and where it came from: `request`, `rack`, `default`, `builtin`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AppliedRuleDoc {
    pub id: Option<Uuid>,
    pub name: String,
    pub version: Option<i32>,
    pub source: String,
}

impl From<AppliedRule> for AppliedRuleDoc {
    fn from(a: AppliedRule) -> Self {
        Self {
            id: a.id.map(Into::into),
            name: a.name,
            version: a.version,
            source: match a.source {
                RuleSource::Request => "request",
                RuleSource::Rack => "rack",
                RuleSource::Default => "default",
                RuleSource::Builtin => "builtin",
            }
            .into(),
        }
    }
}

/// A component in a planned stage.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PlannedComponentDoc {
    pub id: Uuid,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ComponentTypeDoc,
}

/// One stage of a plan, exactly as it would run.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PlannedStageDoc {
    pub number: u32,
    pub name: String,
    pub component_types: Vec<ComponentTypeDoc>,
    #[schema(value_type = Vec<RuleActionDoc>)]
    pub actions: serde_json::Value,
    pub components: Vec<PlannedComponentDoc>,
    pub max_parallel: u32,
    /// One attempt of one component, in seconds.
    pub timeout_seconds: f64,
    pub max_attempts: u32,
    pub on_failure: String,
    pub delay_after_seconds: f64,
    /// Upper bound of the stage: every wave on every attempt, back-off and the pause after.
    pub max_duration_seconds: f64,
}

/// A task that blocks (or queues) the rack's new task.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BlockerDoc {
    pub task_id: Uuid,
    pub operation: String,
    pub status: String,
}

/// What the request would do on one rack.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RackPlanDoc {
    pub rack_id: Uuid,
    pub rack_name: String,
    /// `start`, `queue` or `reject`.
    pub outcome: String,
    /// Why it would be refused: `rack_busy`, `queue_full`, `no_components`, `unsupported`.
    pub reason: Option<String>,
    pub conflicts: Vec<BlockerDoc>,
    /// What the plan asks that the configured component managers cannot do, one line per
    /// stage, type and action (with `reason: unsupported`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unsupported: Vec<String>,
    pub rule: Option<AppliedRuleDoc>,
    pub stages: Vec<PlannedStageDoc>,
    /// Upper bound of the whole run, and the workflow timeout derived from it.
    pub max_duration_seconds: f64,
    pub workflow_timeout_seconds: f64,
    /// A firmware upgrade's procedure per component, and whether the rack is AC-cycled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub firmware: Option<super::recipe_plan::FirmwarePlanDoc>,
}

impl From<RackPreview> for RackPlanDoc {
    fn from(p: RackPreview) -> Self {
        let (rule, stages, max, timeout) = match p.plan {
            Some(plan) => {
                let max: f64 = plan
                    .stages
                    .iter()
                    .map(|s| s.max_duration().as_secs_f64())
                    .sum();
                let timeout = plan.workflow_timeout().as_secs_f64();
                let stages = plan
                    .stages
                    .iter()
                    .map(|s| PlannedStageDoc {
                        number: s.number,
                        name: s.name.clone(),
                        component_types: s.component_types.iter().map(|t| (*t).into()).collect(),
                        actions: serde_json::to_value(&s.actions).unwrap_or_default(),
                        components: s
                            .devices
                            .iter()
                            .map(|d| PlannedComponentDoc {
                                id: d.component_id,
                                name: d.name.clone(),
                                kind: d.kind.into(),
                            })
                            .collect(),
                        max_parallel: s.max_parallel,
                        timeout_seconds: s.timeout_ms as f64 / 1000.0,
                        max_attempts: s.retry.max_attempts,
                        on_failure: serde_json::to_value(s.on_failure)
                            .ok()
                            .and_then(|v| v.as_str().map(String::from))
                            .unwrap_or_default(),
                        delay_after_seconds: s.delay_after_ms as f64 / 1000.0,
                        max_duration_seconds: s.max_duration().as_secs_f64(),
                    })
                    .collect();
                (Some(plan.rule.into()), stages, max, timeout)
            }
            None => (None, Vec::new(), 0.0, 0.0),
        };
        Self {
            rack_id: p.rack_id.into(),
            rack_name: p.rack_name,
            reason: p.outcome.refusal().map(|r| r.code.as_str().into()),
            outcome: p.outcome.as_str().into(),
            unsupported: p.unsupported,
            conflicts: p
                .conflicts
                .into_iter()
                .map(|b| BlockerDoc {
                    task_id: b.task_id.into(),
                    operation: b.operation.to_string(),
                    status: b.status.as_str().into(),
                })
                .collect(),
            rule,
            stages,
            max_duration_seconds: max,
            workflow_timeout_seconds: timeout,
            firmware: p.firmware.map(Into::into),
        }
    }
}

/// The answer to `?dry_run=true`: the exact plan per rack; nothing was created.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DryRunDoc {
    pub dry_run: bool,
    pub racks: Vec<RackPlanDoc>,
    /// The caller's blast-radius cap against the racks this request touches; a submission
    /// with `within: false` is refused `403 blast_radius`.
    pub blast_radius: BlastRadiusDoc,
    /// Every hold and not-ready component in the way (the submission would answer `409`
    /// `held` / `not_ready` unless it sets `override_readiness_check`).
    pub blockers: Vec<super::readiness::ReadinessBlockerDoc>,
}

/// A request's racks against the caller's cap (`FLOW_LIMIT_RACKS_PER_REQUEST`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({"role": "operator", "cap": 8, "count": 12, "within": false}))]
pub struct BlastRadiusDoc {
    /// The role whose cap applies: the most generous of the caller's roles that run operations.
    pub role: String,
    /// Racks one request may touch; `null` = unlimited.
    pub cap: Option<u32>,
    /// Racks this request touches.
    pub count: usize,
    /// Whether `count` is within `cap`.
    pub within: bool,
}

impl From<crate::tasks::submission::blast::Radius> for BlastRadiusDoc {
    fn from(r: crate::tasks::submission::blast::Radius) -> Self {
        Self {
            role: r.role.as_str().to_string(),
            cap: r.cap,
            count: r.count,
            within: r.within(),
        }
    }
}

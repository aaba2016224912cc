//! Rollout request bodies and their field-by-field translation to the rollout domain; what the
//! endpoints answer is in `rollout_view`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::common::{ComponentTypeDoc, required_text};
use super::operation::ConflictStrategyDoc;
use super::schedule::ScheduledOperationDoc;
use super::target::{DomainTargetDoc, RackTargetDoc, domain_targets};
use crate::domain::ComponentType;
use crate::domain::operation::{ConflictStrategy, RackRef};
use crate::error::{Result, Violations};
use crate::rollouts::model::{
    BatchSize, FailureBudget, OnRefused, Order, RolloutSpec, RolloutTargets, Selector, SpreadBy,
    Strategy, Verify, Window,
};

/// Racks by id or name, a selector (every field given must match), or NVLink domains: exactly
/// one of `racks`, `selector` and `nvl_domains`; `component_types`
/// narrows every rack's task (empty = the whole rack).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"selector": {"datacenter": "dc1", "room": "hall-2", "name": "gb200-*"}}))]
pub struct RolloutTargetDoc {
    pub racks: Option<Vec<RackTargetDoc>>,
    pub selector: Option<SelectorDoc>,
    /// NVLink domains by id or name: every live rack of each (an unknown one is a 404).
    pub nvl_domains: Option<Vec<DomainTargetDoc>>,
    #[serde(default)]
    pub component_types: Vec<ComponentTypeDoc>,
}

/// Every live rack matching all given fields.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SelectorDoc {
    pub datacenter: Option<String>,
    pub room: Option<String>,
    /// NVL domain id or name.
    pub nvl_domain: Option<String>,
    /// Rack name, or a case-insensitive glob with `*`.
    pub name: Option<String>,
}

/// A number of racks (`5`) or a share of all targeted racks (`"10%"`, rounded up).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum BatchSizeDoc {
    Racks(i64),
    Text(String),
}

/// Failed racks tolerated before the rollout halts; both limits apply when given.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FailureBudgetDoc {
    pub max_failed_racks: Option<i64>,
    /// Between 0 and 1.
    pub max_failed_fraction: Option<f64>,
}

/// Order racks go into waves.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OrderDoc {
    #[default]
    Name,
    Location,
}

/// At most one rack of each group per wave. While domains are kept whole (the default, see
/// `split_domains`) a domain's racks count as one and always share their wave.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SpreadByDoc {
    #[default]
    None,
    NvlDomain,
    Room,
}

/// After each wave: nothing, or the wave's racks must validate clean.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerifyDoc {
    #[default]
    None,
    Validation,
}

/// How the racks are cut into waves and how waves are gated.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StrategyDoc {
    pub order: Option<OrderDoc>,
    /// Racks in the first (canary) wave; default 1, 0 for no canary.
    pub canary: Option<i64>,
    /// Racks per later wave: a count or `"N%"` (default 1).
    pub batch_size: Option<BatchSizeDoc>,
    /// Most racks of a wave running at once (default: the whole wave).
    pub max_concurrent_racks: Option<i64>,
    /// Wait between waves, e.g. `10m` (default none).
    pub pause_between: Option<String>,
    /// Wait for `POST …/approve` after the canary wave.
    #[serde(default)]
    pub approval_after_canary: bool,
    pub failure_budget: Option<FailureBudgetDoc>,
    pub spread_by: Option<SpreadByDoc>,
    pub verify: Option<VerifyDoc>,
    /// `true` plans racks one by one, so one NVLink domain's racks may land in different waves
    /// (and a firmware rollout's waves are submitted with `allow_split_domain`). Default
    /// `false`: every wave holds the targeted racks of a domain together, a wave growing past
    /// its size (canary included) rather than splitting a domain.
    #[serde(default)]
    pub split_domains: bool,
}

/// Whether a window repeats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecurringDoc {
    #[default]
    None,
    /// Every day at `start`'s time of day, for `end - start` (less than 24 h).
    Daily,
}

/// Waves start only inside it (a running wave finishes).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WindowDoc {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    #[serde(default)]
    pub recurring: RecurringDoc,
}

/// How a rack the submission refuses (busy, unsupported) counts: `skip` or `fail`.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnRefusedDoc {
    #[default]
    Skip,
    Fail,
}

/// Body of `POST /v1/rollouts`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({
    "name": "hall-2 firmware 2026.12",
    "operation": {"kind": "firmware_upgrade", "target_version": {"version": "2.1.0"}},
    "target_spec": {"selector": {"datacenter": "dc1", "room": "hall-2"}},
    "strategy": {"canary": 1, "batch_size": "25%", "max_concurrent_racks": 4, "pause_between": "10m",
        "approval_after_canary": true, "failure_budget": {"max_failed_racks": 2},
        "spread_by": "nvl_domain", "verify": "validation"},
    "window": {"start": "2026-12-01T22:00:00Z", "end": "2026-12-02T04:00:00Z", "recurring": "daily"},
    "conflict_strategy": "reject",
    "on_refused": "skip"
}))]
pub struct CreateRolloutRequest {
    pub name: String,
    pub operation: ScheduledOperationDoc,
    pub target_spec: RolloutTargetDoc,
    #[serde(default)]
    pub strategy: StrategyDoc,
    pub window: Option<WindowDoc>,
    pub conflict_strategy: Option<ConflictStrategyDoc>,
    pub on_refused: Option<OnRefusedDoc>,
}

fn count(v: &mut Violations, field: &str, value: Option<i64>, min: i64) -> Option<u32> {
    let n = value?;
    if n < min || n > i64::from(u32::MAX) {
        v.push(field, format!("must be at least {min}"));
        return None;
    }
    Some(n as u32)
}

fn batch_size(v: &mut Violations, doc: Option<&BatchSizeDoc>) -> BatchSize {
    const FIELD: &str = "strategy.batch_size";
    match doc {
        None => BatchSize::Racks(1),
        Some(BatchSizeDoc::Racks(n)) => BatchSize::Racks(count(v, FIELD, Some(*n), 1).unwrap_or(1)),
        Some(BatchSizeDoc::Text(text)) => {
            let t = text.trim();
            let parsed = match t.strip_suffix('%') {
                Some(p) => p
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|p| (1..=100).contains(p))
                    .map(BatchSize::Percent),
                None => t
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n >= 1)
                    .map(BatchSize::Racks),
            };
            parsed.unwrap_or_else(|| {
                v.push(
                    FIELD,
                    "a number of racks (at least 1) or a share such as \"10%\" (1-100%)",
                );
                BatchSize::Racks(1)
            })
        }
    }
}

impl StrategyDoc {
    fn to_domain(&self, v: &mut Violations) -> Strategy {
        let budget = self.failure_budget.clone().unwrap_or_default();
        let fraction = budget.max_failed_fraction;
        if fraction.is_some_and(|f| !(0.0..=1.0).contains(&f) || f.is_nan()) {
            v.push(
                "strategy.failure_budget.max_failed_fraction",
                "must be between 0 and 1",
            );
        }
        let pause = match self.pause_between.as_deref() {
            None => 0,
            Some(text) => match crate::rules::duration::parse(text) {
                Ok(d) => d.as_secs(),
                Err(e) => {
                    v.push("strategy.pause_between", e);
                    0
                }
            },
        };
        Strategy {
            order: match self.order.unwrap_or_default() {
                OrderDoc::Name => Order::Name,
                OrderDoc::Location => Order::Location,
            },
            canary: count(v, "strategy.canary", self.canary, 0).unwrap_or(1),
            batch_size: batch_size(v, self.batch_size.as_ref()),
            max_concurrent_racks: count(
                v,
                "strategy.max_concurrent_racks",
                self.max_concurrent_racks,
                1,
            ),
            pause_between_secs: pause,
            approval_after_canary: self.approval_after_canary,
            failure_budget: FailureBudget {
                max_failed_racks: count(
                    v,
                    "strategy.failure_budget.max_failed_racks",
                    budget.max_failed_racks,
                    0,
                ),
                max_failed_fraction: fraction.filter(|f| (0.0..=1.0).contains(f)),
            },
            spread_by: match self.spread_by.unwrap_or_default() {
                SpreadByDoc::None => SpreadBy::None,
                SpreadByDoc::NvlDomain => SpreadBy::NvlDomain,
                SpreadByDoc::Room => SpreadBy::Room,
            },
            verify: match self.verify.unwrap_or_default() {
                VerifyDoc::None => Verify::None,
                VerifyDoc::Validation => Verify::Validation,
            },
            split_domains: self.split_domains,
        }
    }
}

impl RolloutTargetDoc {
    fn to_domain(&self, v: &mut Violations) -> RolloutTargets {
        if let Some(domains) = &self.nvl_domains {
            if self.racks.is_some() || self.selector.is_some() {
                v.push(
                    "target_spec",
                    "give exactly one of racks, selector and nvl_domains",
                );
            } else if domains.is_empty() {
                v.push("target_spec.nvl_domains", "must name at least one domain");
            }
            return RolloutTargets::NvlDomains(domain_targets(domains, v));
        }
        match (&self.racks, &self.selector) {
            (Some(racks), None) => {
                if racks.is_empty() {
                    v.push("target_spec.racks", "must name at least one rack");
                }
                let mut refs = Vec::new();
                for (i, r) in racks.iter().enumerate() {
                    match (
                        r.id,
                        r.name.as_deref().map(str::trim).filter(|n| !n.is_empty()),
                    ) {
                        (Some(id), None) => refs.push(RackRef::Id(id)),
                        (None, Some(name)) => refs.push(RackRef::Name(name.to_string())),
                        _ => v.push(
                            format!("target_spec.racks[{i}]"),
                            "give exactly one of id or name",
                        ),
                    }
                    if !r.component_types.is_empty() {
                        v.push(
                            format!("target_spec.racks[{i}].component_types"),
                            "give component_types once, beside racks",
                        );
                    }
                }
                RolloutTargets::Racks(refs)
            }
            (None, Some(s)) => {
                let clean = |o: &Option<String>| {
                    o.as_deref()
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .map(String::from)
                };
                let selector = Selector {
                    datacenter: clean(&s.datacenter),
                    room: clean(&s.room),
                    nvl_domain: clean(&s.nvl_domain),
                    name: clean(&s.name),
                };
                if selector == Selector::default() {
                    v.push(
                        "target_spec.selector",
                        "give at least one of datacenter, room, nvl_domain or name",
                    );
                }
                RolloutTargets::Selector(selector)
            }
            (Some(_), Some(_)) => {
                v.push("target_spec", "give racks or a selector, not both");
                RolloutTargets::Racks(Vec::new())
            }
            (None, None) => {
                v.push("target_spec", "give racks, a selector or nvl_domains");
                RolloutTargets::Racks(Vec::new())
            }
        }
    }
}

impl CreateRolloutRequest {
    /// The validated spec, or every problem at once, each naming its field.
    pub fn to_domain(&self) -> Result<RolloutSpec> {
        let mut v = Violations::default();
        let name = required_text(&mut v, "name", &self.name);
        let template = self.operation.to_domain(&mut v);
        let targets = self.target_spec.to_domain(&mut v);
        let strategy = self.strategy.to_domain(&mut v);
        let window = self.window.as_ref().map(|w| {
            if w.end <= w.start {
                v.push("window.end", "must be after window.start");
            } else if w.recurring == RecurringDoc::Daily
                && w.end - w.start >= chrono::Duration::days(1)
            {
                v.push("window.end", "a daily window lasts less than 24 hours");
            }
            Window {
                start: w.start,
                end: w.end,
                daily: w.recurring == RecurringDoc::Daily,
            }
        });
        let conflict_strategy = match self.conflict_strategy.unwrap_or_default() {
            ConflictStrategyDoc::Reject => ConflictStrategy::Reject,
            ConflictStrategyDoc::Queue => ConflictStrategy::Queue,
        };
        if conflict_strategy == ConflictStrategy::Queue && !template.operation.may_queue() {
            v.push(
                "conflict_strategy",
                format!("{} always rejects on conflict", template.operation.code()),
            );
        }
        v.finish()?;
        Ok(RolloutSpec {
            name,
            template,
            targets,
            component_types: self
                .target_spec
                .component_types
                .iter()
                .map(|t| ComponentType::from(*t))
                .collect(),
            strategy,
            window,
            conflict_strategy,
            on_refused: match self.on_refused.unwrap_or_default() {
                OnRefusedDoc::Skip => OnRefused::Skip,
                OnRefusedDoc::Fail => OnRefused::Fail,
            },
        })
    }
}

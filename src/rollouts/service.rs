//! Creating rollouts (racks resolved, waves planned, the durable run started), dry runs that
//! answer the same plan without creating anything, and steering commands.

use std::collections::HashMap;
use std::sync::Arc;

use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use uuid::Uuid;

use super::engine::RolloutEngine;
use super::model::{
    Command, RackInfo, RackState, Rollout, RolloutSpec, RolloutStatus, RolloutTargets, Wave,
    WaveRack, WaveStatus,
};
use super::{plan, store};
use crate::audit;
use crate::clock::Clock;
use crate::db::entities::racks;
use crate::domain::operation::{OperationSpec, RackRef, RackTarget, TargetSpec};
use crate::error::{Code, Error, Result};
use crate::ids::{RackId, RolloutId};
use crate::inventory::query::text_matches;
use crate::tasks::TaskService;
use crate::tasks::engine::engine_error;

/// One rack of a dry run's wave, with what submitting its task now would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedRack {
    pub rack_id: RackId,
    pub rack_name: String,
    /// `start`, `queue` or `reject`, as the operation dry run answers.
    pub outcome: String,
    pub reason: Option<String>,
}

/// What `create` did: only planned (dry run), or created and started.
#[derive(Debug, Clone)]
pub enum Created {
    Plan(Vec<Vec<PlannedRack>>),
    Rollout(Box<Rollout>),
}

/// Owns rollout creation and the commands callers send to running rollouts.
pub struct RolloutService {
    pub(super) db: DatabaseConnection,
    pub(super) tasks: Arc<TaskService>,
    engine: Option<Arc<dyn RolloutEngine>>,
    pub(super) clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for RolloutService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RolloutService").finish_non_exhaustive()
    }
}

fn no_engine() -> Error {
    Error::Unavailable {
        service: "temporal",
        message: "no workflow engine for rollouts is configured in this process".into(),
    }
}

impl RolloutService {
    pub fn new(
        db: DatabaseConnection,
        tasks: Arc<TaskService>,
        engine: Option<Arc<dyn RolloutEngine>>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            db,
            tasks,
            engine,
            clock,
        }
    }

    pub fn db(&self) -> &DatabaseConnection {
        &self.db
    }

    /// Resolves the targets, plans the waves and, unless `dry_run`, stores the rollout and
    /// starts its run.
    pub async fn create(&self, spec: RolloutSpec, dry_run: bool) -> Result<Created> {
        // The checks every rack's submission makes, once, before anything is planned.
        task_spec(&spec, vec![RackId::from(Uuid::nil())], String::new()).validate()?;
        if let Some(rule_id) = spec.template.rule_id {
            crate::rules::resolve::check_requested(
                &self.db,
                rule_id,
                spec.template.operation.code(),
            )
            .await?;
        }
        let racks = self.resolve(&spec.targets).await?;
        if racks.is_empty() {
            return Err(Error::invalid("target_spec", "selects no rack"));
        }
        // A firmware rollout over part of a domain is refused up front, as one submission of
        // its racks would be (the dry run hears the same through the preview).
        let all: Vec<RackId> = racks.iter().map(|r| r.id).collect();
        crate::tasks::submission::domain_split::check(
            &self.db,
            &task_spec(&spec, all, String::new()),
            &racks.iter().map(|r| r.id).collect::<Vec<_>>(),
        )
        .await?;
        let waves = plan::plan(racks, &spec.strategy);
        self.check_waves(&spec, &waves)?;
        if dry_run {
            return Ok(Created::Plan(self.preview(&spec, &waves).await?));
        }
        let engine = self.engine.clone().ok_or_else(no_engine)?;
        let now = self.clock.now();
        let rollout = Rollout {
            id: RolloutId::new(),
            status: RolloutStatus::Pending,
            waves: waves
                .iter()
                .enumerate()
                .map(|(i, racks)| Wave {
                    index: i as u32,
                    canary: i == 0 && spec.strategy.canary > 0,
                    status: WaveStatus::Pending,
                    racks: racks
                        .iter()
                        .map(|r| WaveRack {
                            rack_id: r.id,
                            rack_name: r.name.clone(),
                            state: RackState::Pending,
                            task_id: None,
                            reason: None,
                            verify_failed: false,
                        })
                        .collect(),
                    started_at: None,
                    finished_at: None,
                })
                .collect(),
            spec,
            current_wave: None,
            approved: false,
            message: "created".into(),
            revision: 0,
            created_at: now,
            updated_at: now,
            started_at: None,
            finished_at: None,
        };
        // The rollout and its audit entry commit together: nothing unaudited.
        let txn = crate::db::begin_write(&self.db).await?;
        store::insert(&txn, &rollout).await?;
        let change =
            audit::Change::new("rollout", rollout.id).after(serde_json::to_value(&rollout).ok());
        audit::record(&txn, change, now).await?;
        txn.commit().await?;
        if let Err(e) = engine.start(rollout.id).await {
            // Nothing ran: leave no rollout behind that no run will ever move.
            let _ = crate::db::entities::rollouts::Entity::delete_by_id(rollout.id)
                .exec(&self.db)
                .await;
            return Err(engine_error(e));
        }
        Ok(Created::Rollout(Box::new(rollout)))
    }

    /// The blast-radius cap applies per wave: each wave's racks are one request's worth, so a
    /// wave larger than the submitter's cap refuses the whole rollout (`403 blast_radius`),
    /// before anything is stored. Its run then submits the waves it was allowed.
    fn check_waves(&self, spec: &RolloutSpec, waves: &[Vec<RackInfo>]) -> Result<()> {
        let canary = spec.strategy.canary > 0;
        for (i, wave) in waves.iter().enumerate() {
            let field = if i == 0 && canary {
                "strategy.canary"
            } else {
                "strategy.batch_size"
            };
            self.tasks
                .check_radius(wave.len(), &format!("wave {}", i + 1), field)?;
        }
        Ok(())
    }

    /// Every targeted live rack with what the planner orders and spreads by.
    async fn resolve(&self, targets: &RolloutTargets) -> Result<Vec<RackInfo>> {
        let rows = match targets {
            RolloutTargets::Racks(refs) => {
                let mut rows: Vec<racks::Model> = Vec::new();
                for (i, r) in refs.iter().enumerate() {
                    let row = crate::inventory::racks::resolve(&self.db, &r.to_string())
                        .await
                        .map_err(|e| match e {
                            Error::NotFound { .. } => Error::invalid(
                                format!("target_spec.racks[{i}]"),
                                format!("no rack {r}"),
                            ),
                            other => other,
                        })?;
                    if !rows.iter().any(|known| known.id == row.id) {
                        rows.push(row);
                    }
                }
                rows
            }
            RolloutTargets::Selector(s) => {
                let mut query = racks::Entity::find().filter(racks::Column::DeletedAt.is_null());
                if let Some(dc) = &s.datacenter {
                    query = query.filter(racks::Column::Datacenter.eq(dc.as_str()));
                }
                if let Some(room) = &s.room {
                    query = query.filter(racks::Column::Room.eq(room.as_str()));
                }
                if let Some(name) = &s.name {
                    query = query.filter(text_matches(racks::Column::Name, name));
                }
                if let Some(domain) = &s.nvl_domain {
                    let found = crate::inventory::nvl::find(&self.db, domain)
                        .await?
                        .ok_or_else(|| {
                            Error::invalid(
                                "target_spec.selector.nvl_domain",
                                format!("no NVL domain {domain}"),
                            )
                        })?;
                    query = query.filter(racks::Column::NvlDomainId.eq(found.id));
                }
                query.all(&self.db).await?
            }
            RolloutTargets::NvlDomains(domains) => {
                let mut rows: Vec<racks::Model> = Vec::new();
                for domain in domains {
                    for row in crate::inventory::targets::domain_racks(&self.db, domain).await? {
                        if !rows.iter().any(|known| known.id == row.id) {
                            rows.push(row);
                        }
                    }
                }
                rows
            }
        };
        Ok(rows
            .into_iter()
            .map(|r| RackInfo {
                id: r.id.into(),
                name: r.name,
                datacenter: r.datacenter,
                room: r.room,
                position: r.position,
                nvl_domain: r.nvl_domain_id.map(Into::into),
            })
            .collect())
    }

    /// What submitting each planned rack's task would do now.
    async fn preview(
        &self,
        spec: &RolloutSpec,
        waves: &[Vec<RackInfo>],
    ) -> Result<Vec<Vec<PlannedRack>>> {
        let all = waves.iter().flatten().map(|r| r.id).collect();
        let previews: HashMap<RackId, _> = self
            .tasks
            .preview(&task_spec(spec, all, "dry run".into()))
            .await?
            .into_iter()
            .map(|p| (p.rack_id, p))
            .collect();
        Ok(waves
            .iter()
            .map(|wave| {
                wave.iter()
                    .map(|r| {
                        let p = previews.get(&r.id);
                        PlannedRack {
                            rack_id: r.id,
                            rack_name: r.name.clone(),
                            outcome: p.map_or("reject", |p| p.outcome.as_str()).to_string(),
                            reason: p.and_then(|p| {
                                p.outcome.refusal().map(|r| r.code.as_str().to_string())
                            }),
                        }
                    })
                    .collect()
            })
            .collect())
    }

    pub async fn get(&self, id: RolloutId) -> Result<Rollout> {
        store::get(&self.db, id).await
    }

    /// Delivers a command to the rollout's run; the run records its effect. Once delivered,
    /// the audit log gets a row for the rollout: its status before, and the status the
    /// command leads to with the command itself after.
    pub async fn command(&self, id: RolloutId, command: Command) -> Result<Rollout> {
        let rollout = store::get(&self.db, id).await?;
        if rollout.status.is_terminal() {
            return Err(Error::conflict(
                Code::RolloutFinished,
                format!("rollout {id} has ended ({})", rollout.status.as_str()),
            ));
        }
        if command == Command::Approve && !rollout.spec.strategy.approval_after_canary {
            return Err(Error::conflict(
                Code::NoApprovalGate,
                format!("rollout {id} does not wait for an approval"),
            ));
        }
        let engine = self.engine.clone().ok_or_else(no_engine)?;
        engine.signal(id, command).await.map_err(engine_error)?;
        let change = audit::Change::new("rollout", id)
            .before(Some(serde_json::json!({"status": rollout.status.as_str()})))
            .after(Some(steered(&rollout, command)));
        audit::record(&self.db, change, self.clock.now()).await?;
        Ok(rollout)
    }
}

/// Whether the rollout stands at its approval gate (after the canary, not approved yet).
fn at_approval_gate(rollout: &Rollout) -> bool {
    rollout.spec.strategy.approval_after_canary
        && !rollout.approved
        && rollout.current_wave == Some(1)
        && rollout.waves.first().is_some_and(|w| w.canary)
}

/// The audit document of a delivered command: the command and the status it leads to. A pause
/// at the approval gate shows `paused`, and its resume returns to `awaiting_approval`; an
/// approval while paused keeps the rollout paused until it is resumed.
fn steered(rollout: &Rollout, command: Command) -> serde_json::Value {
    let before = rollout.status;
    let paused = before == RolloutStatus::Paused;
    let (name, status) = match command {
        Command::Pause => ("pause", RolloutStatus::Paused),
        Command::Resume if paused && at_approval_gate(rollout) => {
            ("resume", RolloutStatus::AwaitingApproval)
        }
        Command::Resume if paused => ("resume", RolloutStatus::Running),
        Command::Resume => ("resume", before),
        Command::Approve if paused => ("approve", RolloutStatus::Paused),
        Command::Approve => ("approve", RolloutStatus::Running),
        Command::Abort { .. } => ("abort", RolloutStatus::Aborted),
    };
    let mut doc = serde_json::json!({"status": status.as_str(), "command": name});
    if let Command::Abort { cancel_running } = command {
        doc["cancel_running"] = cancel_running.into();
    }
    doc
}

/// The operation spec of the given racks' tasks.
pub(super) fn task_spec(
    spec: &RolloutSpec,
    racks: Vec<RackId>,
    description: String,
) -> OperationSpec {
    OperationSpec {
        operation: spec.template.operation.clone(),
        targets: TargetSpec::Racks(
            racks
                .into_iter()
                .map(|id| RackTarget {
                    rack: RackRef::Id(id.into()),
                    component_types: spec.component_types.clone(),
                })
                .collect(),
        ),
        description: Some(description),
        conflict_strategy: spec.conflict_strategy,
        queue_timeout_secs: spec.template.queue_timeout_secs,
        rule_id: spec.template.rule_id,
        // A rollout's waves never go past holds: each wave is checked as it starts.
        override_readiness_check: false,
        // Waves keep domains whole unless the strategy says otherwise (see `plan`).
        allow_split_domain: spec.strategy.split_domains,
    }
}

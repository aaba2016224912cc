//! Schedule lifecycle: create, change, pause, resume and delete schedules and manage their
//! scope; firing them is in `fire`.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};
use uuid::Uuid;

use super::model::{
    OperationTemplate, OverlapPolicy, ResolvedRack, Run, Schedule, ScheduleTargets, Scope,
    TimerSpec,
};
use super::store;
use super::timing::Timer;
use crate::audit::{self, Change};
use crate::clock::Clock;
use crate::db::entities::{racks, task_schedules};
use crate::domain::Role;
use crate::domain::operation::RackRef;
use crate::error::{Code, Error, FieldError, Result, Violations};
use crate::ids::{RackId, ScheduleId};
use crate::tasks::TaskService;
use crate::tasks::submission::blast::{self, Radius};

/// A schedule to create.
#[derive(Debug, Clone)]
pub struct NewSchedule {
    pub name: String,
    pub timer: TimerSpec,
    pub template: OperationTemplate,
    pub overlap: OverlapPolicy,
    pub enabled: bool,
    pub scope: ScheduleTargets,
}

/// Fields a PATCH may change; `None` keeps the stored value.
#[derive(Debug, Clone, Default)]
pub struct SchedulePatch {
    pub name: Option<String>,
    pub timer: Option<TimerSpec>,
    pub overlap: Option<OverlapPolicy>,
}

/// Owns every schedule change; the dispatcher and the API both go through it.
pub struct ScheduleService {
    pub(super) db: DatabaseConnection,
    pub(super) tasks: Arc<TaskService>,
    pub(super) clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for ScheduleService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScheduleService").finish_non_exhaustive()
    }
}

/// Checks the template without the database: option consistency, and that the overlap policy
/// suits the operation (bring-up and ingest cannot queue). Field names are the API's.
fn validate_template(template: &OperationTemplate, overlap: OverlapPolicy) -> Result<()> {
    let probe = template.spec_for(
        String::new(),
        overlap.conflict_strategy(),
        RackId::from(Uuid::nil()),
        &[],
    );
    match probe.validate() {
        Err(Error::Invalid(errors)) => Err(Error::Invalid(
            errors
                .into_iter()
                .map(|e| {
                    let field = if e.field == "conflict_strategy" {
                        "overlap_policy".to_string()
                    } else {
                        format!("operation.{}", e.field)
                    };
                    FieldError::new(field, e.message)
                })
                .collect(),
        )),
        other => other,
    }
}

impl ScheduleService {
    pub fn new(db: DatabaseConnection, tasks: Arc<TaskService>, clock: Arc<dyn Clock>) -> Self {
        Self { db, tasks, clock }
    }

    /// Resolves rack targets to live racks; unknown and repeated racks are 400s naming them.
    pub async fn resolve_racks(&self, targets: &ScheduleTargets) -> Result<Vec<ResolvedRack>> {
        let mut v = Violations::default();
        if targets.racks.is_empty() && targets.domains.is_empty() {
            v.push("target_spec.racks", "must name at least one rack");
        }
        let mut out: Vec<ResolvedRack> = Vec::new();
        for (i, target) in targets.racks.iter().enumerate() {
            let query = racks::Entity::find().filter(racks::Column::DeletedAt.is_null());
            let query = match &target.rack {
                RackRef::Id(id) => query.filter(racks::Column::Id.eq(*id)),
                RackRef::Name(name) => query.filter(racks::Column::Name.eq(name.trim())),
            };
            match query.one(&self.db).await? {
                None => v.push(
                    format!("target_spec.racks[{i}]"),
                    format!("rack {} not found", target.rack),
                ),
                Some(rack) if out.iter().any(|r| r.rack_id == RackId::from(rack.id)) => v.push(
                    format!("target_spec.racks[{i}]"),
                    format!("rack {} is named twice", target.rack),
                ),
                Some(rack) => {
                    let mut types = target.component_types.clone();
                    types.sort();
                    types.dedup();
                    out.push(ResolvedRack {
                        rack_id: rack.id.into(),
                        component_types: types,
                        nvl_domain_id: None,
                    });
                }
            }
        }
        // A rack named itself and also in a named domain stays as named.
        for rack in super::domains::resolve(&self.db, &targets.domains, &mut v).await? {
            if !out.iter().any(|r| r.rack_id == rack.rack_id) {
                out.push(rack);
            }
        }
        v.finish()?;
        Ok(out)
    }

    /// A rule the template names must exist and fit its operation now, rather than fail every
    /// later fire.
    async fn check_rule(&self, template: &OperationTemplate) -> Result<()> {
        let Some(rule_id) = template.rule_id else {
            return Ok(());
        };
        let code = template.operation.code();
        crate::rules::resolve::check_requested(&self.db, rule_id, code)
            .await
            .map_err(|e| match e {
                crate::error::Error::Unprocessable { message, .. } => {
                    crate::error::Error::invalid("operation.rule_id", message)
                }
                crate::error::Error::Invalid(errors) => crate::error::Error::Invalid(
                    errors
                        .into_iter()
                        .map(|f| crate::error::FieldError::new("operation.rule_id", f.message))
                        .collect(),
                ),
                other => other,
            })
    }

    pub async fn create(&self, new: NewSchedule) -> Result<(Schedule, Vec<Scope>)> {
        let now = self.clock.now();
        let timer = Timer::parse_new(&new.timer, now);
        let template = match validate_template(&new.template, new.overlap) {
            Ok(()) => self.check_rule(&new.template).await,
            invalid => invalid,
        };
        let racks = self.resolve_racks(&new.scope).await;
        let mut errors = Vec::new();
        for result in [
            timer.as_ref().err(),
            template.as_ref().err(),
            racks.as_ref().err(),
        ]
        .into_iter()
        .flatten()
        {
            if let Error::Invalid(e) = result {
                errors.extend(e.iter().cloned());
            }
        }
        if !errors.is_empty() {
            return Err(Error::Invalid(errors));
        }
        let (timer, racks) = (timer?, racks?);
        self.check_radius(racks.len())?;
        let schedule = Schedule {
            id: ScheduleId::new(),
            name: new.name,
            next_run_at: timer.first_after(now),
            timer: new.timer,
            template: new.template,
            overlap: new.overlap,
            enabled: new.enabled,
            last_run_at: None,
            revision: 0,
            created_at: now,
            updated_at: now,
        };
        let scope: Vec<Scope> = racks
            .into_iter()
            .map(|r| Scope {
                id: Uuid::now_v7(),
                schedule_id: schedule.id,
                rack_id: r.rack_id,
                component_types: r.component_types,
                last_task_id: None,
                nvl_domain_id: r.nvl_domain_id,
                created_at: now,
            })
            .collect();
        let txn = crate::db::begin_write(&self.db).await?;
        store::insert(&txn, &schedule, &scope).await?;
        let after = audit::snapshot::<task_schedules::Entity>(&txn, schedule.id.into()).await?;
        audit::record(&txn, Change::new("schedule", schedule.id).after(after), now).await?;
        txn.commit().await?;
        Ok((schedule, scope))
    }

    pub async fn get(&self, id: ScheduleId) -> Result<Schedule> {
        store::get(&self.db, id).await
    }

    pub fn db(&self) -> &DatabaseConnection {
        &self.db
    }

    /// Applies `change` to the stored schedule and writes it if nobody changed it meanwhile;
    /// a lost race (the dispatcher claimed it, another request changed it) is retried.
    async fn modify(
        &self,
        id: ScheduleId,
        change: impl Fn(&mut Schedule, DateTime<Utc>) -> Result<()>,
    ) -> Result<Schedule> {
        for _ in 0..5 {
            let mut schedule = store::get(&self.db, id).await?;
            let now = self.clock.now();
            change(&mut schedule, now)?;
            schedule.updated_at = now;
            // The conditional write and its audit entry commit together.
            let txn = crate::db::begin_write(&self.db).await?;
            let before = audit::snapshot::<task_schedules::Entity>(&txn, id.into()).await?;
            if store::update(&txn, &schedule).await? {
                let after = audit::snapshot::<task_schedules::Entity>(&txn, id.into()).await?;
                let change = Change::new("schedule", id).before(before).after(after);
                audit::record(&txn, change, now).await?;
                txn.commit().await?;
                schedule.revision += 1;
                return Ok(schedule);
            }
        }
        Err(Error::conflict(
            Code::ScheduleBusy,
            format!("schedule {id} kept changing; retry"),
        ))
    }

    pub async fn update(&self, id: ScheduleId, patch: SchedulePatch) -> Result<Schedule> {
        self.modify(id, |s, now| {
            if let Some(name) = &patch.name {
                s.name = name.clone();
            }
            if let Some(overlap) = patch.overlap {
                validate_template(&s.template, overlap)?;
                s.overlap = overlap;
            }
            if let Some(timer) = &patch.timer {
                if s.is_consumed() {
                    return Err(Error::conflict(
                        Code::OneTimeConsumed,
                        "this one-time schedule has fired; create a new schedule instead",
                    ));
                }
                s.next_run_at = Timer::parse_new(timer, now)?.first_after(now);
                s.timer = timer.clone();
            }
            Ok(())
        })
        .await
    }

    /// Stops firing; the next fire time is kept for display. Idempotent.
    pub async fn pause(&self, id: ScheduleId) -> Result<Schedule> {
        self.modify(id, |s, _| {
            refuse_consumed(s)?;
            s.enabled = false;
            Ok(())
        })
        .await
    }

    /// Fires again: a recurring schedule from now on (a resume never fires at once), a one-time
    /// schedule at its instant (at the next tick if that passed while paused). Idempotent.
    pub async fn resume(&self, id: ScheduleId) -> Result<Schedule> {
        self.modify(id, |s, now| {
            refuse_consumed(s)?;
            if !s.enabled {
                s.enabled = true;
                s.next_run_at = Timer::parse(&s.timer)?.first_after(now);
            }
            Ok(())
        })
        .await
    }

    /// Deletes the schedule, its scope and its run history; tasks it created stay.
    pub async fn delete(&self, id: ScheduleId) -> Result<()> {
        let txn = crate::db::begin_write(&self.db).await?;
        let before = audit::snapshot::<task_schedules::Entity>(&txn, id.into()).await?;
        if !store::delete(&txn, id).await? {
            return Err(Error::not_found("schedule", id));
        }
        let change = Change::new("schedule", id).before(before);
        audit::record(&txn, change, self.clock.now()).await?;
        txn.commit().await?;
        Ok(())
    }

    pub async fn scopes(&self, id: ScheduleId) -> Result<Vec<Scope>> {
        store::get(&self.db, id).await?;
        store::scopes(&self.db, id).await
    }

    pub async fn runs(&self, id: ScheduleId, limit: u64) -> Result<Vec<Run>> {
        store::get(&self.db, id).await?;
        store::runs(&self.db, id, limit).await
    }

    /// Adds racks to the scope. A rack already in scope has its type filter widened: the union
    /// of both, or every type when either side names none. Returns the added or changed scopes.
    pub async fn add_scope(&self, id: ScheduleId, targets: &ScheduleTargets) -> Result<Vec<Scope>> {
        let racks = self.resolve_racks(targets).await?;
        let now = self.clock.now();
        let txn = crate::db::begin_write(&self.db).await?;
        store::get(&txn, id).await?;
        let existing = store::scopes(&txn, id).await?;
        let mut touched = Vec::new();
        for ResolvedRack {
            rack_id,
            component_types: types,
            nvl_domain_id,
        } in racks
        {
            match existing.iter().find(|s| s.rack_id == rack_id) {
                None => {
                    let scope = Scope {
                        id: Uuid::now_v7(),
                        schedule_id: id,
                        rack_id,
                        component_types: types,
                        last_task_id: None,
                        nvl_domain_id,
                        created_at: now,
                    };
                    store::insert_scope(&txn, &scope).await?;
                    touched.push(scope);
                }
                Some(scope) => {
                    let mut merged = scope.clone();
                    merged.component_types = if scope.component_types.is_empty() || types.is_empty()
                    {
                        Vec::new()
                    } else {
                        let mut all = [scope.component_types.clone(), types].concat();
                        all.sort();
                        all.dedup();
                        all
                    };
                    if merged.component_types != scope.component_types {
                        store::set_scope_types(&txn, &merged).await?;
                        touched.push(merged);
                    }
                }
            }
        }
        let added = touched
            .iter()
            .filter(|t| !existing.iter().any(|e| e.rack_id == t.rack_id))
            .count();
        // Refused inside the transaction: nothing of the addition is kept.
        self.check_radius(existing.len() + added)?;
        let racks: Vec<RackId> = touched.iter().map(|s| s.rack_id).collect();
        let change =
            Change::new("schedule", id).after(Some(serde_json::json!({"scope_racks": racks})));
        audit::record(&txn, change, now).await?;
        txn.commit().await?;
        Ok(touched)
    }

    /// Removes a rack from the scope; the last rack cannot go (delete the schedule instead).
    pub async fn remove_scope(&self, id: ScheduleId, rack: &RackRef) -> Result<()> {
        let txn = crate::db::begin_write(&self.db).await?;
        store::get(&txn, id).await?;
        let scopes = store::scopes(&txn, id).await?;
        let rack_id = match rack {
            RackRef::Id(rack_id) => Some(*rack_id),
            RackRef::Name(name) => racks::Entity::find()
                .filter(racks::Column::Name.eq(name.as_str()))
                .filter(racks::Column::Id.is_in(scopes.iter().map(|s| s.rack_id)))
                .one(&txn)
                .await?
                .map(|r| r.id),
        };
        let Some(scope) = rack_id.and_then(|r| scopes.iter().find(|s| s.rack_id == r)) else {
            return Err(Error::not_found("rack in the schedule's scope", rack));
        };
        if scopes.len() == 1 {
            return Err(Error::conflict(
                Code::LastScope,
                "cannot remove the last rack of a schedule; delete the schedule instead",
            ));
        }
        store::delete_scope(&txn, scope.id).await?;
        let change = Change::new("schedule", id)
            .before(Some(serde_json::json!({"scope_racks": [scope.rack_id]})));
        audit::record(&txn, change, self.clock.now()).await?;
        txn.commit().await?;
        Ok(())
    }
}

/// The role a schedule acts under when it fires (see `audit::Context::schedule`): its
/// blast-radius cap is that role's, whoever created or triggers it.
pub(super) const ACTS_AS: [Role; 1] = [Role::Operator];

impl ScheduleService {
    /// The radius of a fire touching `count` racks.
    pub(super) fn radius(&self, count: usize) -> Radius {
        self.tasks.radius_as(&ACTS_AS, count)
    }

    /// `403 blast_radius` for a scope of `count` racks: the schedule would fire over its cap
    /// (each fire is one request's worth of racks).
    fn check_radius(&self, count: usize) -> Result<()> {
        blast::check(
            self.radius(count),
            "the schedule's scope",
            "target_spec.racks",
        )
    }
}

pub(super) fn refuse_consumed(s: &Schedule) -> Result<()> {
    if s.is_consumed() {
        Err(Error::conflict(
            Code::OneTimeConsumed,
            "this one-time schedule has already fired",
        ))
    } else {
        Ok(())
    }
}

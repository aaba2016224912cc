//! Running an operation on selected racks: a form, the dry-run plan exactly as the API's
//! `dry_run=true` answers it (stages, conflicts, unsupported components), then a confirmation
//! that submits under an idempotency key minted with the plan, so a double click runs once.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect};
use maud::{Markup, html};

use super::access::{Action, Viewer};
use super::csrf::CsrfToken;
use super::page::{self, UiResult, badge, code, csrf_field};
use crate::api::problem::Problem;
use crate::api::schema::operation::{Common, ConflictStrategyDoc, SubmissionDoc, build_spec};
use crate::api::schema::rule::RackPlanDoc;
use crate::api::schema::target::{DomainTargetDoc, RackTargetDoc, TargetSpecDoc};
use crate::app::AppState;
use crate::auth::Role;
use crate::domain::code::OperationCode;
use crate::domain::operation::{Operation, OperationSpec};
use crate::error::{Error, Violations};

/// The operations the console offers: (form value, label).
const OPERATIONS: [(OperationCode, &str); 9] = [
    (OperationCode::PowerOn, "Power on"),
    (OperationCode::PowerOff, "Power off (graceful)"),
    (OperationCode::ForcePowerOff, "Power off (forced)"),
    (OperationCode::Restart, "Restart (graceful)"),
    (OperationCode::ForceRestart, "Restart (forced)"),
    (
        OperationCode::WarmReset,
        "Warm reset (through the BMCs, power kept)",
    ),
    (OperationCode::ColdReset, "Cold reset (AC cycle)"),
    (OperationCode::BmcReset, "BMC reset (restart the BMCs)"),
    (OperationCode::BringUp, "Bring up"),
];

/// The submitted form, whichever step it comes from.
#[derive(Debug, Default)]
struct RunForm {
    racks: Vec<uuid::Uuid>,
    /// NVLink domains: every live rack of each (instead of `racks`).
    domains: Vec<uuid::Uuid>,
    operation: String,
    description: String,
    queue: bool,
    /// `override_readiness_check`: admins only, and only after the confirmation shows it.
    override_readiness: bool,
    key: String,
}

fn parse(bytes: &[u8]) -> Result<RunForm, Problem> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(bytes).unwrap_or_default();
    let mut form = RunForm::default();
    let mut v = Violations::default();
    for (k, val) in pairs {
        match k.as_str() {
            "rack" => match uuid::Uuid::parse_str(val.trim()) {
                Ok(id) => form.racks.push(id),
                Err(_) => v.push("rack", format!("{val:?} is not a rack id")),
            },
            "nvl_domain" => match uuid::Uuid::parse_str(val.trim()) {
                Ok(id) => form.domains.push(id),
                Err(_) => v.push("nvl_domain", format!("{val:?} is not an NVL domain id")),
            },
            "operation" => form.operation = val,
            "description" => form.description = val,
            "conflict_strategy" => form.queue = val == "queue",
            "key" => form.key = val,
            "override_readiness_check" => form.override_readiness = val == "true",
            _ => {}
        }
    }
    match (form.racks.is_empty(), form.domains.is_empty()) {
        (true, true) => v.push("rack", "select at least one rack or NVL domain"),
        (false, false) => v.push("rack", "select racks or NVL domains, not both"),
        _ => {}
    }
    v.finish()?;
    Ok(form)
}

fn spec(form: &RunForm) -> Result<OperationSpec, Error> {
    let operation = match form.operation.parse() {
        Ok(OperationCode::PowerOn) => Operation::PowerOn,
        Ok(OperationCode::PowerOff) => Operation::PowerOff { forced: false },
        Ok(OperationCode::ForcePowerOff) => Operation::PowerOff { forced: true },
        Ok(OperationCode::Restart) => Operation::PowerReset { forced: false },
        Ok(OperationCode::ForceRestart) => Operation::PowerReset { forced: true },
        Ok(OperationCode::WarmReset) => Operation::WarmReset,
        Ok(OperationCode::ColdReset) => Operation::ColdReset,
        Ok(OperationCode::BmcReset) => Operation::BmcReset,
        Ok(OperationCode::BringUp) => Operation::BringUp,
        _ => {
            return Err(Error::invalid(
                "operation",
                "choose one of the listed operations",
            ));
        }
    };
    let target = if form.domains.is_empty() {
        TargetSpecDoc {
            racks: Some(
                form.racks
                    .iter()
                    .map(|id| RackTargetDoc {
                        id: Some(*id),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }
    } else {
        TargetSpecDoc {
            nvl_domains: Some(
                form.domains
                    .iter()
                    .map(|id| DomainTargetDoc {
                        id: Some(*id),
                        name: None,
                    })
                    .collect(),
            ),
            ..Default::default()
        }
    };
    let description = Some(form.description.clone());
    let common = Common {
        target_spec: &target,
        description: &description,
        conflict_strategy: Some(if form.queue {
            ConflictStrategyDoc::Queue
        } else {
            ConflictStrategyDoc::Reject
        }),
        queue_timeout_seconds: None,
        rule_id: None,
        override_readiness_check: form.override_readiness,
    };
    build_spec(operation, common, Violations::default())
}

fn fields(form: &RunForm, csrf: &CsrfToken, with_choices: bool) -> Markup {
    html! {
        (csrf_field(csrf))
        @for id in &form.racks { input type="hidden" name="rack" value=(id); }
        @for id in &form.domains { input type="hidden" name="nvl_domain" value=(id); }
        @if !with_choices {
            input type="hidden" name="operation" value=(form.operation);
            input type="hidden" name="description" value=(form.description);
            input type="hidden" name="conflict_strategy" value=(if form.queue { "queue" } else { "reject" });
            @if form.override_readiness { input type="hidden" name="override_readiness_check" value="true"; }
        }
    }
}

/// `GET /ui/run?rack=…`: choose the operation.
pub async fn form(
    State(state): State<AppState>,
    viewer: Viewer,
    Extension(csrf): Extension<CsrfToken>,
    RawQuery(raw): RawQuery,
) -> UiResult {
    viewer.require(Action::RunOperation)?;
    let form = parse(raw.unwrap_or_default().as_bytes())?;
    let mut names = Vec::new();
    for id in &form.racks {
        names.push(
            crate::inventory::racks::get(state.db(), (*id).into(), false)
                .await?
                .name,
        );
    }
    let mut domains = Vec::new();
    for id in &form.domains {
        domains.push(
            crate::inventory::nvl::get(state.db(), &id.to_string())
                .await?
                .name,
        );
    }
    let body = html! {
        h1 { "Run an operation" }
        @if domains.is_empty() {
            p { "On " (names.len()) " rack(s): " (names.join(", ")) }
        } @else {
            p { "On every rack of NVL domain(s): " (domains.join(", ")) }
        }
        form.card method="post" action="/ui/run/preview" {
            (fields(&form, &csrf, true))
            label { "Operation" select name="operation" required {
                @for (value, label) in OPERATIONS { option value=(value.as_str()) { (label) } }
            } }
            label { "Description (optional)" input type="text" name="description" maxlength="500"; }
            label { "If a rack is busy" select name="conflict_strategy" {
                option value="reject" { "refuse that rack" }
                option value="queue" { "queue behind its task" }
            } }
            @if is_admin(&viewer) {
                label { input type="checkbox" name="override_readiness_check" value="true";
                    " Override the readiness check (run although targets are held or not ready; audited)" }
            }
            div.actions { button type="submit" { "Preview the plan" } }
        }
    };
    Ok(page::ok(page::layout(
        "Run an operation",
        "/ui/racks",
        Some(&viewer),
        body,
    )))
}

fn plan_card(p: &RackPlanDoc) -> Markup {
    html! {
        section.card {
            h2 { (p.rack_name) " " (badge(&p.outcome)) }
            @if let Some(r) = &p.reason { p { (r) } }
            @if !p.conflicts.is_empty() {
                p { "Conflicts: " @for c in &p.conflicts {
                    a href=(format!("/ui/tasks/{}", c.task_id)) { (c.operation) } " " (badge(&c.status)) " "
                } }
            }
            @if !p.unsupported.is_empty() {
                p { "Unsupported:" } ul { @for u in &p.unsupported { li { (u) } } }
            }
            @if let Some(rule) = &p.rule { p.muted { "Rule " (rule.name) " (" (rule.source) ")" } }
            @if !p.stages.is_empty() {
                div.table-wrap { table {
                    thead { tr { th { "Stage" } th { "Types" } th { "Components" } th.hide-narrow { "Parallel" } th.hide-narrow { "Timeout" } } }
                    tbody { @for s in &p.stages { tr {
                        td { (s.number) ". " (s.name) }
                        td { (s.component_types.iter().map(code).collect::<Vec<_>>().join(", ")) }
                        td { (s.components.len()) }
                        td.hide-narrow { (s.max_parallel) }
                        td.hide-narrow { (s.timeout_seconds) " s" }
                    } } }
                } }
                p.muted { "At most " (format!("{:.0}", p.max_duration_seconds)) " s." }
            }
        }
    }
}

/// The query that opens the form again on the same targets.
fn back_query(form: &RunForm) -> String {
    let racks = form.racks.iter().map(|r| format!("rack={r}"));
    let domains = form.domains.iter().map(|d| format!("nvl_domain={d}"));
    racks.chain(domains).collect::<Vec<_>>().join("&")
}

/// `POST /ui/run/preview`: the plan per rack, and the confirmation.
pub async fn preview(
    State(state): State<AppState>,
    viewer: Viewer,
    Extension(csrf): Extension<CsrfToken>,
    body: Bytes,
) -> UiResult {
    viewer.require(Action::RunOperation)?;
    let mut form = parse(&body)?;
    require_admin_for_override(&viewer, &form)?;
    let spec = spec(&form)?;
    let plans: Vec<RackPlanDoc> = state
        .tasks()
        .preview(&spec)
        .await?
        .into_iter()
        .map(Into::into)
        .collect();
    // Holds and not-ready components: listed here, and nothing confirmable without an override.
    let blockers = state.tasks().readiness_blockers(&spec).await?;
    form.key = uuid::Uuid::new_v4().to_string();
    // The blast-radius cap, as the submission will apply it: over it, nothing can be confirmed.
    let radius = state.tasks().radius(plans.len());
    let runnable = radius.within()
        && (blockers.is_empty() || form.override_readiness)
        && plans
            .iter()
            .any(|p| p.reason.is_none() || p.outcome == "queue");
    let body = html! {
        h1 { "Plan: " (form.operation) }
        p.muted { "A dry run: nothing has been started yet." }
        @if let (false, Some(cap)) = (radius.within(), radius.cap) {
            div.error role="alert" data-code="blast_radius" {
                strong { "Too many racks at once: " }
                (radius.count) " racks, but one request of role " (radius.role) " may touch at most "
                (cap) ". Select fewer racks, or use a " a href="/ui/rollouts" { "rollout" }
                " whose waves stay within " (cap) "."
            }
        }
        (super::readiness::blockers(&blockers, form.override_readiness, is_admin(&viewer)))
        @for p in &plans { (plan_card(p)) }
        form method="post" action="/ui/run" {
            (fields(&form, &csrf, false))
            input type="hidden" name="key" value=(form.key);
            div.actions {
                @if runnable { button type="submit" { "Confirm and run" } }
                a.button.secondary href=(format!("/ui/run?{}", back_query(&form))) { "Back" }
            }
        }
    };
    Ok(page::ok(page::layout(
        "Plan",
        "/ui/racks",
        Some(&viewer),
        body,
    )))
}

/// `POST /ui/run`: creates the tasks and opens the first one's live page.
pub async fn confirm(State(state): State<AppState>, viewer: Viewer, body: Bytes) -> UiResult {
    viewer.require(Action::RunOperation)?;
    let form = parse(&body)?;
    require_admin_for_override(&viewer, &form)?;
    let spec = spec(&form)?;
    let key = (!form.key.is_empty()).then_some(form.key.as_str());
    let done = SubmissionDoc::from(state.tasks().submit(&spec, key).await?);
    if done.rejected.is_empty() && done.task_ids.len() == 1 {
        return Ok(Redirect::to(&format!("/ui/tasks/{}", done.task_ids[0])).into_response());
    }
    let body = html! {
        h1 { "Submitted" }
        @if !done.task_ids.is_empty() {
            p { (done.task_ids.len()) " task(s) created: "
                a href=(format!("/ui/tasks?request_id={}", done.request_id)) { "see them" } }
        }
        @for r in &done.rejected {
            div.error role="alert" { strong { (r.rack_name) } ": " (r.reason) }
        }
    };
    let status = if done.task_ids.is_empty() {
        StatusCode::CONFLICT
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        page::layout("Submitted", "/ui/tasks", Some(&viewer), body),
    )
        .into_response())
}

fn is_admin(viewer: &Viewer) -> bool {
    viewer.identity.role_for(Role::Admin).is_some()
}

/// The API's rule for `override_readiness_check`: admins only (`403` naming the field).
fn require_admin_for_override(viewer: &Viewer, form: &RunForm) -> Result<(), Problem> {
    if !form.override_readiness || is_admin(viewer) {
        return Ok(());
    }
    Err(Problem::new(
        StatusCode::FORBIDDEN,
        crate::error::Code::Forbidden,
        "override_readiness_check needs the admin role",
    )
    .with_errors(vec![crate::error::FieldError::new(
        "override_readiness_check",
        "needs the admin role",
    )]))
}

//! The remaining pages: drift by kind, schedules (next run, pause / resume / trigger) and
//! rules with their YAML.

use axum::Extension;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Redirect};
use maud::html;

use super::access::{Action, Viewer};
use super::csrf::CsrfToken;
use super::page::{self, UiResult, badge, code, csrf_field, field, time};
use crate::api::extract::{Query, uuid_param};
use crate::api::problem::Problem;
use crate::api::rules::ListRulesQuery;
use crate::api::schedules::ListSchedulesQuery;
use crate::api::schema::rule::RuleDoc;
use crate::api::validation::ListDriftQuery;
use crate::app::AppState;
use crate::error::Code;

const DIFF_KINDS: [&str; 6] = [
    "missing",
    "unexpected",
    "mismatch",
    "unreachable",
    "rejected",
    "domain_mixed",
];
const TYPES: [&str; 6] = [
    "compute",
    "nvswitch",
    "powershelf",
    "torswitch",
    "ums",
    "cdu",
];

/// `GET /ui/drift`
pub async fn drift(
    State(state): State<AppState>,
    viewer: Viewer,
    RawQuery(raw): RawQuery,
) -> UiResult {
    let (mut q, pairs): (ListDriftQuery, _) = page::query(raw.as_deref())?;
    q.limit = Some(q.limit.unwrap_or(50));
    let found = crate::api::validation::list_drift(State(state), Query(q))
        .await?
        .0;
    let kind = field(&pairs, "kind");
    let kind_link = |k: &str| {
        let mut kept: Vec<(&str, &str)> = pairs
            .iter()
            .filter(|(n, _)| n != "kind" && n != "cursor")
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        if !k.is_empty() {
            kept.push(("kind", k));
        }
        format!(
            "/ui/drift?{}",
            serde_urlencoded::to_string(&kept).unwrap_or_default()
        )
    };
    let body = html! {
        h1 { "Drift" }
        nav.actions aria-label="Kind of difference" {
            @for k in std::iter::once("").chain(DIFF_KINDS) {
                @let label = if k.is_empty() { "all" } else { k };
                @if k == kind { a.button href=(kind_link(k)) aria-current="true" { (label) } }
                @else { a.button.secondary href=(kind_link(k)) { (label) } }
            }
        }
        form.filters.card method="get" action="/ui/drift" aria-label="Filter drift" {
            @if !kind.is_empty() { input type="hidden" name="kind" value=(kind); }
            label { "Rack (id or name)" input type="text" name="rack" value=(field(&pairs, "rack")); }
            label { "Component type" select name="type" {
                option value="" { "any" }
                @for t in TYPES { option value=(t) selected[field(&pairs, "type") == t] { (t) } }
            } }
            button type="submit" { "Filter" }
        }
        (super::racks::drift_table(&found.items))
        (page::pager("/ui/drift", &pairs, found.items.len(), found.total_text(), found.next_cursor.as_deref()))
    };
    Ok(page::ok(page::layout(
        "Drift",
        "/ui/drift",
        Some(&viewer),
        body,
    )))
}

/// `GET /ui/schedules`
pub async fn schedules(
    State(state): State<AppState>,
    viewer: Viewer,
    Extension(csrf): Extension<CsrfToken>,
    RawQuery(raw): RawQuery,
) -> UiResult {
    let (mut q, pairs): (ListSchedulesQuery, _) = page::query(raw.as_deref())?;
    q.limit = Some(q.limit.unwrap_or(50));
    let can = viewer.may(Action::ControlSchedule);
    let found = crate::api::schedules::list_schedules(State(state), Query(q))
        .await?
        .0;
    let body = html! {
        h1 { "Schedules" }
        @if found.items.is_empty() { p.muted { "No schedules." } } @else {
            div.table-wrap { table {
                thead { tr { th { "Name" } th { "Operation" } th { "When" } th { "State" } th { "Next run" } th.hide-narrow { "Last run" }
                    @if can { th { "Actions" } } } }
                tbody { @for s in &found.items { tr {
                    td { (s.name) }
                    td { (s.operation.code) }
                    td.mono { (code(&s.spec.kind)) " " (s.spec.spec) }
                    td { (badge(if s.enabled { "enabled" } else { "paused" })) }
                    td { (time(s.next_run_at)) }
                    td.hide-narrow { (time(s.last_run_at)) }
                    @if can { td { div.actions {
                        @for action in [if s.enabled { "pause" } else { "resume" }, "trigger"] {
                            form method="post" action=(format!("/ui/schedules/{}/{action}", s.id)) {
                                (csrf_field(&csrf))
                                button.secondary type="submit" aria-label=(format!("{action} {}", s.name)) { (action) }
                            }
                        }
                    } } }
                } } }
            } }
        }
        (page::pager("/ui/schedules", &pairs, found.items.len(), found.total_text(), found.next_cursor.as_deref()))
    };
    Ok(page::ok(page::layout(
        "Schedules",
        "/ui/schedules",
        Some(&viewer),
        body,
    )))
}

/// `POST /ui/schedules/{id}/{pause|resume|trigger}`
pub async fn schedule_action(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((id, action)): Path<(String, String)>,
) -> UiResult {
    viewer.require(Action::ControlSchedule)?;
    let id = uuid_param("id", &id)?;
    let service = state.schedules();
    match action.as_str() {
        "pause" => drop(service.pause(id.into()).await?),
        "resume" => drop(service.resume(id.into()).await?),
        "trigger" => {
            let run = service.trigger(id.into()).await?;
            if let Some(task) = run.task_ids().first() {
                return Ok(Redirect::to(&format!("/ui/tasks/{task}")).into_response());
            }
        }
        _ => {
            return Err(Problem::new(
                axum::http::StatusCode::NOT_FOUND,
                Code::NotFound,
                format!("no schedule action {action:?}"),
            )
            .into());
        }
    }
    Ok(Redirect::to("/ui/schedules").into_response())
}

fn rule_rows(items: &[RuleDoc]) -> maud::Markup {
    html! {
        @for r in items { tr {
            td { @if let Some(id) = r.id { a href=(format!("/ui/rules/{id}")) { (r.name) } } @else { (r.name) } }
            td { (r.operation) }
            td { @if r.is_default { (badge("default")) } " " @if r.builtin { (badge("built-in")) } }
            td.hide-narrow { (r.version.map(|v| v.to_string()).unwrap_or_default()) }
        } }
    }
}

/// `GET /ui/rules`: stored rules, then the built-in ones with their YAML.
pub async fn rules(State(state): State<AppState>, viewer: Viewer) -> UiResult {
    let stored = crate::api::rules::list_rules(
        State(state.clone()),
        Query(ListRulesQuery {
            operation: None,
            is_default: None,
            builtin: false,
        }),
    )
    .await?
    .0;
    let builtin = crate::api::rules::list_rules(
        State(state),
        Query(ListRulesQuery {
            operation: None,
            is_default: None,
            builtin: true,
        }),
    )
    .await?
    .0;
    let body = html! {
        h1 { "Rules" }
        div.table-wrap { table {
            thead { tr { th { "Name" } th { "Operation" } th { "Flags" } th.hide-narrow { "Version" } } }
            tbody { (rule_rows(&stored.items)) (rule_rows(&builtin.items)) }
        } }
        h2 { "Built-in rules" }
        @for r in &builtin.items {
            details { summary { (r.operation) ": " (r.name) } (page::preformatted(&yaml(r))) }
        }
    };
    Ok(page::ok(page::layout(
        "Rules",
        "/ui/rules",
        Some(&viewer),
        body,
    )))
}

fn yaml(rule: &RuleDoc) -> String {
    serde_yaml::to_string(rule).unwrap_or_else(|e| format!("# cannot show as YAML: {e}"))
}

/// `GET /ui/rules/{id}`: one stored rule as YAML.
pub async fn rule(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> UiResult {
    let id = uuid_param("id", &id)?;
    let rule: RuleDoc = crate::rules::store::get(state.db(), id.into())
        .await?
        .into();
    let body = html! {
        h1 { "Rule " (rule.name) }
        p { (rule.operation) " " @if rule.is_default { (badge("default")) } }
        (page::preformatted(&yaml(&rule)))
    };
    Ok(page::ok(page::layout(
        &rule.name,
        "/ui/rules",
        Some(&viewer),
        body,
    )))
}

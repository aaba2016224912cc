//! Rack pages: the filtered, keyset-paged list with power, drift and active-task badges, and
//! one rack with its components by type, drift diffs, tasks and rules.

use axum::extract::{Path, RawQuery, State};
use maud::{Markup, html};

use super::access::{Action, Viewer};
use super::page::{self, UiResult, badge, code, field, time};
use crate::api::extract::{Query, uuid_param};
use crate::api::racks::ListRacksQuery;
use crate::api::schema::component::ComponentDoc;
use crate::api::schema::drift::{DriftDoc, DriftSummaryDoc};
use crate::api::schema::rack::RackDoc;
use crate::api::validation::ListDriftQuery;
use crate::app::AppState;
use crate::tasks::model::{Task, TaskStatus};

/// Racks per page unless the filter says otherwise: a screenful, never the whole inventory.
const PAGE: u64 = 50;
const ACTIVE: [TaskStatus; 3] = [
    TaskStatus::Pending,
    TaskStatus::Waiting,
    TaskStatus::Running,
];
const FILTERS: [(&str, &str); 8] = [
    ("name", "Name"),
    ("manufacturer", "Manufacturer"),
    ("model", "Model"),
    ("nvl_domain", "NVL domain"),
    ("region", "Region"),
    ("datacenter", "Datacenter"),
    ("room", "Room"),
    ("position", "Position"),
];

/// One word for a set of components' power: on, off, mixed or unknown.
pub fn power_summary(components: &[ComponentDoc]) -> &'static str {
    let states: Vec<String> = components
        .iter()
        .filter_map(|c| c.power_state.as_ref().map(code))
        .filter(|s| s == "on" || s == "off")
        .collect();
    if states.is_empty() {
        "unknown"
    } else if states.iter().all(|s| s == "on") {
        "on"
    } else if states.iter().all(|s| s == "off") {
        "off"
    } else {
        "mixed"
    }
}

fn drift_badges(d: Option<&DriftSummaryDoc>) -> Markup {
    let Some(d) = d else { return html! {} };
    let parts = [
        ("missing", d.missing),
        ("unexpected", d.unexpected),
        ("mismatch", d.mismatch),
        ("unreachable", d.unreachable),
        ("rejected", d.rejected),
    ];
    html! {
        @if parts.iter().all(|(_, n)| *n == 0) { (badge("ok")) }
        @for (kind, n) in parts {
            @if n > 0 { (badge(kind)) " " span.muted { (n) } " " }
        }
    }
}

/// `GET /ui/racks`
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    RawQuery(raw): RawQuery,
) -> UiResult {
    let (mut q, pairs): (ListRacksQuery, _) = page::query(raw.as_deref())?;
    q.limit = Some(q.limit.unwrap_or(PAGE));
    // Components come with the page (power badges); drift counts are one query for the page.
    q.include_components = true;
    let found = crate::api::racks::list_racks(State(state.clone()), Query(q))
        .await?
        .0;
    let ids: Vec<crate::ids::RackId> = found.items.iter().map(|r| r.id.into()).collect();
    let running = crate::tasks::store::on_racks(state.db(), &ids, &ACTIVE).await?;
    let active: Vec<Vec<Task>> = found
        .items
        .iter()
        .map(|r| {
            running
                .iter()
                .filter(|t| t.rack_id == r.id)
                .cloned()
                .collect()
        })
        .collect();
    let can_run = viewer.may(Action::RunOperation);
    let body = html! {
        h1 { "Racks" }
        form.filters.card method="get" action="/ui/racks" aria-label="Filter racks" {
            @for (name, label) in FILTERS {
                label { (label) input type="text" name=(name) value=(field(&pairs, name)); }
            }
            button type="submit" { "Filter" }
            a.button.secondary href="/ui/racks" { "Clear" }
        }
        form method="get" action="/ui/run" {
            div.table-wrap {
                table {
                    thead { tr {
                        @if can_run { th { span.skip { "Select" } } }
                        th { "Name" } th.hide-narrow { "Model" } th.hide-narrow { "Location" }
                        th { "Power" } th { "Drift" } th { "Active task" }
                    } }
                    tbody {
                        @for (rack, tasks) in found.items.iter().zip(&active) {
                            (rack_row(rack, tasks, can_run))
                        }
                        @if found.items.is_empty() {
                            tr { td colspan="7" { "No rack matches." } }
                        }
                    }
                }
            }
            @if can_run && !found.items.is_empty() {
                div.actions { button type="submit" { "Run an operation on the selected racks" } }
            }
        }
        (page::pager("/ui/racks", &pairs, found.items.len(), found.total_text(), found.next_cursor.as_deref()))
    };
    Ok(page::ok(page::layout(
        "Racks",
        "/ui/racks",
        Some(&viewer),
        body,
    )))
}

fn location(r: &RackDoc) -> String {
    [
        &r.location.datacenter,
        &r.location.room,
        &r.location.position,
    ]
    .iter()
    .filter_map(|p| p.as_deref())
    .collect::<Vec<_>>()
    .join(" / ")
}

fn rack_row(rack: &RackDoc, tasks: &[Task], can_run: bool) -> Markup {
    let components = rack.components.as_deref().unwrap_or_default();
    html! {
        tr {
            @if can_run {
                td { input type="checkbox" name="rack" value=(rack.id) aria-label=(format!("Select {}", rack.name)); }
            }
            td { a href=(format!("/ui/racks/{}", rack.id)) { (rack.name) } }
            td.hide-narrow { (rack.model.as_deref().unwrap_or("—")) }
            td.hide-narrow { (location(rack)) }
            td { (badge(power_summary(components))) }
            td { (drift_badges(rack.drift.as_ref())) }
            td {
                @for t in tasks {
                    a href=(format!("/ui/tasks/{}", t.id)) { (t.operation.code()) } " " (badge(t.status.as_str())) " "
                }
                @if tasks.is_empty() { span.muted { "none" } }
            }
        }
    }
}

/// `GET /ui/racks/{id}`
pub async fn show(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> UiResult {
    let id = uuid_param("id", &id)?;
    let rack = crate::inventory::racks::get(state.db(), id.into(), true).await?;
    let mut rack = [RackDoc::from(rack)];
    crate::api::maintenance::mark_racks(state.db(), &mut rack).await?;
    let [rack] = rack;
    let drift_q = ListDriftQuery {
        rack: Some(id.to_string()),
        kind: None,
        diff_kind: None,
        limit: Some(200),
        cursor: None,
        count: None,
    };
    let drift = crate::api::validation::list_drift(State(state.clone()), Query(drift_q))
        .await?
        .0;
    let tasks_q = crate::api::tasks::ListTasksQuery {
        rack_id: Some(id),
        limit: Some(20),
        ..Default::default()
    };
    let tasks = crate::api::tasks::list_tasks(State(state.clone()), Query(tasks_q))
        .await?
        .0;
    let rules = crate::api::rules::rack_rules(State(state.clone()), Path(id.to_string()))
        .await?
        .0;
    let can_run = viewer.may(Action::RunOperation);
    let components = rack.components.clone().unwrap_or_default();
    let marks = super::elevation::Marks::of_rack(&state, id, &drift.items).await?;
    let domain = match rack.nvl_domain_id {
        Some(d) => Some(crate::inventory::nvl::get(state.db(), &d.to_string()).await?),
        None => None,
    };
    let component_ids: Vec<_> = components.iter().map(|c| c.id.into()).collect();
    let domains: Vec<_> = rack.nvl_domain_id.map(Into::into).into_iter().collect();
    let held = super::holds::active(&state, &[id.into()], &component_ids, &domains).await?;
    let body = html! {
        h1 { "Rack " (rack.name) }
        div.card {
            dl.facts {
                dt { "Manufacturer" } dd { (rack.manufacturer) }
                dt { "Serial number" } dd.mono { (rack.serial_number) }
                dt { "Model" } dd { (rack.model.as_deref().unwrap_or("—")) }
                dt { "Location" } dd { (location(&rack)) }
                dt { "Power" } dd { (badge(power_summary(&components)))
                    @for task in &rack.maintenance_task_ids {
                        " " span.badge.b-warn data-maintenance="true" { "in maintenance" } " "
                        a href=(format!("/ui/tasks/{task}")) { "task" }
                    } }
                dt { "Holds" } dd { (super::holds::badges(&held)) }
                dt { "NVLink domain" } dd { @if let Some(d) = &domain {
                    a href=(format!("/ui/nvl-domains/{}", d.id)) { (d.name) } } @else { "—" } }
                dt { "Revision" } dd { (rack.revision) }
            }
            @if can_run {
                div.actions { a.button href=(format!("/ui/run?rack={}", rack.id)) { "Run an operation" } }
            }
        }
        h2 { "Elevation" }
        figure.elevation-one {
            (super::elevation::rack_svg(&rack.name, &components, &marks))
            (super::elevation::legend())
        }
        h2 { "Components" }
        @for kind in kinds(&components) {
            h3 { (kind) }
            (component_table(components.iter().filter(|c| code(&c.kind) == kind), &drift.items))
        }
        @if components.is_empty() { p.muted { "No components." } }
        h2 { "Drift" }
        (drift_table(&drift.items))
        h2 { "Tasks" }
        (super::tasks::task_table(&tasks.items))
        p { a href=(format!("/ui/tasks?rack_id={}", rack.id)) { "All tasks of this rack" } }
        h2 { "Rules" }
        @if rules.items.is_empty() {
            p.muted { "No rule associated: each operation runs the default rule, else the built-in one." }
        } @else {
            ul { @for a in &rules.items {
                li { (a.operation) ": " a href=(format!("/ui/rules/{}", a.rule_id)) { (a.rule_id) } }
            } }
        }
    };
    Ok(page::ok(page::layout(
        &rack.name,
        "/ui/racks",
        Some(&viewer),
        body,
    )))
}

fn kinds(components: &[ComponentDoc]) -> Vec<String> {
    let mut out: Vec<String> = components.iter().map(|c| code(&c.kind)).collect();
    out.sort();
    out.dedup();
    out
}

pub(super) fn position(c: &ComponentDoc) -> String {
    let p = &c.position;
    let part = |n: &str, v: Option<i64>| v.map(|v| format!("{n} {v}"));
    [
        part("slot", p.slot_id),
        part("tray", p.tray_idx),
        part("host", p.host_id),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ")
}

fn component_table<'a>(
    components: impl Iterator<Item = &'a ComponentDoc>,
    drift: &[DriftDoc],
) -> Markup {
    html! {
        // At narrow widths `cards` stacks each row, labelled by data-label, so no column hides.
        div.table-wrap { table.cards {
            thead { tr {
                th { "Name" } th { "Position" } th { "Serial" } th { "BMCs" }
                th { "Firmware (expected / observed)" } th { "Power" } th { "Drift" }
            } }
            tbody { @for c in components {
                @let diffs = drift.iter().filter(|d| d.diff.component_id == Some(c.id)).count();
                tr {
                    td data-label="Name" { (c.name) }
                    td data-label="Position" { (position(c)) }
                    td.mono data-label="Serial" { (c.serial_number) }
                    td.mono data-label="BMCs" { @for b in &c.bmcs {
                        (code(&b.kind)) " " (b.mac_address) " " (b.ip_address.as_deref().unwrap_or("")) br;
                    } }
                    td.mono data-label="Firmware" {
                        (c.firmware_version.as_deref().unwrap_or("—")) " / "
                        @match (&c.firmware_version, &c.observed_firmware_version) {
                            (Some(e), Some(o)) if e != o => span.diff-act { (o) },
                            (_, Some(o)) => (o),
                            (_, None) => "—",
                        }
                    }
                    td data-label="Power" { (badge(&c.power_state.as_ref().map(code).unwrap_or_else(|| "unknown".into())))
                        @if c.in_maintenance { " " span.badge.b-warn data-maintenance="true" { "in maintenance" } } }
                    td data-label="Drift" { @if diffs > 0 { (badge("mismatch")) } @else { span.muted { "none" } } }
                }
            } }
        } }
    }
}

/// Drift records with their field-by-field diffs.
pub fn drift_table(items: &[DriftDoc]) -> Markup {
    html! {
        @if items.is_empty() { p.muted { "No recorded drift." } } @else {
            div.table-wrap { table {
                thead { tr { th { "Kind" } th { "Component" } th { "Differences" } th.hide-narrow { "Since" } } }
                tbody { @for d in items { tr {
                    td { (badge(&code(&d.diff.kind))) @if d.stale { " " (badge("stale")) } }
                    td {
                        (code(&d.diff.kind_of_component)) " "
                        span.mono { (d.diff.external_id.as_deref().or(d.diff.address.as_deref())
                            .map(String::from)
                            .or_else(|| d.diff.component_id.map(|c| c.to_string()))
                            .unwrap_or_default()) }
                        @if let Some(rack) = d.diff.rack_id {
                            " " a href=(format!("/ui/racks/{rack}")) { "rack" }
                        }
                    }
                    td {
                        @for f in &d.diff.fields {
                            div { strong { (f.field) } ": expected "
                                span.diff-exp.mono { (f.expected) } ", observed "
                                span.diff-act.mono { (f.actual) } }
                        }
                        @if let Some(m) = &d.diff.message { div.muted { (m) } }
                    }
                    td.hide-narrow { (time(Some(d.since))) }
                } } }
            } }
        }
    }
}

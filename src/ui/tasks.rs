//! Task pages: the filtered list and a task's live view, whose stages and components are
//! re-rendered over SSE from the same change stream as `GET /v1/tasks/{id}/events`.

use std::convert::Infallible;

use axum::Extension;
use axum::extract::{Path, RawQuery, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect};
use futures::{Stream, StreamExt};
use maud::{Markup, html};

use super::access::{Action, Viewer};
use super::csrf::CsrfToken;
use super::page::{self, UiResult, badge, code, csrf_field, field, time};
use crate::api::extract::{Query, uuid_param};
use crate::api::follow::{self, TaskChange};
use crate::api::schema::task::TaskDoc;
use crate::api::tasks::{ListTasksQuery, has_ended, load};
use crate::app::AppState;
use crate::app::streams::Key;

const STATUSES: [&str; 6] = [
    "pending",
    "waiting",
    "running",
    "succeeded",
    "failed",
    "cancelled",
];

/// A task's rack by name; a purged rack (no name left) by its id.
fn rack_label(t: &TaskDoc) -> String {
    t.rack_name.clone().unwrap_or_else(|| t.rack_id.to_string())
}

/// A table of tasks (no stage detail).
pub fn task_table(items: &[TaskDoc]) -> Markup {
    html! {
        @if items.is_empty() { p.muted { "No tasks." } } @else {
            div.table-wrap { table {
                thead { tr { th { "Task" } th { "Operation" } th { "Status" } th.hide-narrow { "Rack" } th { "Created" } } }
                tbody { @for t in items { tr {
                    td { a href=(format!("/ui/tasks/{}", t.id)) { (page::short_id(t.id)) } }
                    td { (t.operation) }
                    td { (badge(&code(&t.status))) }
                    td.hide-narrow { a href=(format!("/ui/racks/{}", t.rack_id)) { (rack_label(t)) } }
                    td { (time(Some(t.created_at))) }
                } } }
            } }
        }
    }
}

/// `GET /ui/tasks`
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    RawQuery(raw): RawQuery,
) -> UiResult {
    let (mut q, pairs): (ListTasksQuery, _) = page::query(raw.as_deref())?;
    q.limit = Some(q.limit.unwrap_or(50));
    let found = crate::api::tasks::list_tasks(State(state), Query(q))
        .await?
        .0;
    let status = field(&pairs, "status");
    let body = html! {
        h1 { "Tasks" }
        form.filters.card method="get" action="/ui/tasks" aria-label="Filter tasks" {
            label { "Status" select name="status" {
                option value="" { "any" }
                @for s in STATUSES { option value=(s) selected[status == s] { (s) } }
            } }
            label { "Operation" input type="text" name="operation" value=(field(&pairs, "operation")) placeholder="power_on"; }
            label { "Rack id" input type="text" name="rack_id" value=(field(&pairs, "rack_id")); }
            label { "Request id" input type="text" name="request_id" value=(field(&pairs, "request_id")); }
            label.inline { input type="checkbox" name="active_only" value="true" checked[field(&pairs, "active_only") == "true"]; "Active only" }
            button type="submit" { "Filter" }
        }
        (task_table(&found.items))
        (page::pager("/ui/tasks", &pairs, found.items.len(), found.total_text(), found.next_cursor.as_deref()))
    };
    Ok(page::ok(page::layout(
        "Tasks",
        "/ui/tasks",
        Some(&viewer),
        body,
    )))
}

/// The part of a task page that changes: status, message, the cancel button while the task
/// runs (`cancel` holds the form's token when the viewer may cancel) and every stage.
pub fn task_body(t: &TaskDoc, cancel: Option<&CsrfToken>) -> Markup {
    html! {
        @if let Some(csrf) = cancel.filter(|_| !has_ended(t)) {
            form method="post" action=(format!("/ui/tasks/{}/cancel", t.id)) {
                (csrf_field(csrf))
                button.danger type="submit" { "Cancel task" }
            }
        }
        div.card {
            dl.facts {
                dt { "Status" } dd data-status=(code(&t.status)) { (badge(&code(&t.status))) }
                dt { "Message" } dd { (t.message) }
                dt { "Started" } dd { (time(t.started_at)) }
                dt { "Finished" } dd { (time(t.finished_at)) }
                @if let Some(r) = &t.rule { dt { "Rule" } dd { (r.name) " (" (r.source) ")" } }
            }
        }
        @for s in t.stages.as_deref().unwrap_or_default() {
            section.stage {
                h3 { "Stage " (s.number) ": " (s.name) " " (badge(&s.status)) }
                div.table-wrap { table.cards {
                    thead { tr { th { "Component" } th { "Status" } th { "Attempts" } th { "Last event" } } }
                    tbody { @for c in &s.components { tr {
                        td data-label="Component" { (c.name) " " span.muted { (code(&c.kind)) } }
                        td data-label="Status" { (badge(&c.status)) }
                        td data-label="Attempts" { (c.attempts) }
                        td data-label="Last event" {
                            @if let Some(e) = &c.error { span.diff-act { (e) } }
                            @else if let Some(ev) = c.events.last() { (ev.message) }
                        }
                    } } }
                } }
            }
        }
        @if t.stages.is_none() { p.muted { "Not planned yet." } }
    }
}

/// `GET /ui/tasks/{id}`: the task, following changes live until it ends.
pub async fn show(
    State(state): State<AppState>,
    viewer: Viewer,
    Extension(csrf): Extension<CsrfToken>,
    Path(id): Path<String>,
) -> UiResult {
    let id = uuid_param("id", &id)?;
    let task = load(&state, id).await?;
    let cancel = viewer.may(Action::CancelTask).then_some(&csrf);
    let body = html! {
        h1 { "Task " (task.operation) }
        p { "Rack " a href=(format!("/ui/racks/{}", task.rack_id)) title=(task.rack_id) { (rack_label(&task)) }
            " · request " span.mono { (task.request_id) } }
        @if has_ended(&task) {
            div id="task-live" { (task_body(&task, cancel)) }
        } @else {
            // The SSE extension swaps in each `task` event and closes on `done`, before the
            // server ends the stream (so the browser never sees a dropped connection).
            div id="task-live" hx-ext="sse" sse-connect=(format!("/ui/tasks/{id}/live"))
                sse-swap="task" sse-close="done" aria-live="polite" {
                (task_body(&task, cancel))
            }
        }
    };
    Ok(page::ok(page::layout(
        &format!("Task {}", task.operation),
        "/ui/tasks",
        Some(&viewer),
        body,
    )))
}

/// `GET /ui/tasks/{id}/live`: `task` events carrying the re-rendered body, then `done`.
pub async fn live(
    State(state): State<AppState>,
    viewer: Viewer,
    Extension(csrf): Extension<CsrfToken>,
    Path(id): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, page::UiError> {
    let id = uuid_param("id", &id)?;
    crate::tasks::store::get(state.db(), id.into()).await?;
    let follow = follow::open(&state, Some(&viewer.identity), &[Key::Task(id)])?;
    let cancel = viewer.may(Action::CancelTask).then_some(csrf);
    let stream = follow::task_changes(state, id, follow).flat_map(move |change| {
        let body = |doc: &TaskDoc| task_body(doc, cancel.as_ref()).into_string();
        let events = match change {
            Ok(TaskChange::Now(doc)) if has_ended(&doc) => vec![
                Event::default().event("task").data(body(&doc)),
                Event::default().event("done").data("ended"),
            ],
            Ok(TaskChange::Now(doc)) => vec![Event::default().event("task").data(body(&doc))],
            // The page keeps what it shows and stops listening; a reload follows the task again.
            Ok(TaskChange::ShuttingDown) => vec![Event::default().event("done").data("shutdown")],
            Err(e) => vec![
                Event::default()
                    .event("task")
                    .data(page::problem_box(&e.into()).into_string()),
                Event::default().event("done").data("error"),
            ],
        };
        futures::stream::iter(events.into_iter().map(Ok))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// `POST /ui/tasks/{id}/cancel`
pub async fn cancel(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> UiResult {
    viewer.require(Action::CancelTask)?;
    let id = uuid_param("id", &id)?;
    state.tasks().cancel(id.into()).await?;
    Ok(Redirect::to(&format!("/ui/tasks/{id}")).into_response())
}

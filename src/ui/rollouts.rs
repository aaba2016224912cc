//! Rollout pages: the keyset-paged list, and one rollout's wave progress (each wave's racks,
//! their outcome and task, the approval gate, the failure budget) followed live over SSE from
//! the database, as `GET /v1/rollouts/{id}/events` does; operators steer it from here.

use std::convert::Infallible;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect};
use futures::{Stream, StreamExt};
use maud::{Markup, html};

use super::access::{Action, Viewer};
use super::page::{self, UiResult, badge, csrf_field, field, time};
use crate::api::extract::{Query, uuid_param};
use crate::api::follow::{self, RolloutChange};
use crate::api::problem::Problem;
use crate::api::rollouts::ListRolloutsQuery;
use crate::api::schema::rollout_view::{CountsDoc, RolloutDoc, WaveDoc};
use crate::app::AppState;
use crate::app::streams::Key;
use crate::error::Code;
use crate::rollouts::model::{Command, RolloutStatus};

/// A bar of a set of racks' outcomes, with the numbers spelled out for screen readers.
fn progress(c: &CountsDoc) -> Markup {
    let total = f64::from(c.total.max(1));
    let label = format!(
        "{} of {} {} done: {} succeeded, {} failed, {} skipped, {} running, {} pending",
        c.succeeded + c.failed + c.skipped + c.not_run,
        c.total,
        if c.total == 1 { "rack" } else { "racks" },
        c.succeeded,
        c.failed,
        c.skipped,
        c.running,
        c.pending
    );
    // Bars as SVG rectangles: their widths are attributes, not inline styles, which the
    // console's Content-Security-Policy refuses.
    let mut x = 0.0;
    let mut bars = Vec::new();
    for (class, n) in [
        ("p-ok", c.succeeded),
        ("p-bad", c.failed),
        ("p-run", c.running),
        ("p-idle", c.skipped + c.not_run),
    ] {
        let width = f64::from(n) * 100.0 / total;
        bars.push((class, format!("{x:.1}"), format!("{width:.1}")));
        x += width;
    }
    html! {
        svg.progress role="img" aria-label=(label) viewBox="0 0 100 1" preserveAspectRatio="none" {
            title { (label) }
            @for (class, x, width) in &bars {
                rect class=(class) x=(x) y="0" width=(width) height="1" {}
            }
        }
    }
}

fn counts_text(c: &CountsDoc) -> String {
    format!(
        "{} succeeded · {} failed · {} running · {} pending · {} skipped · {} not run",
        c.succeeded, c.failed, c.running, c.pending, c.skipped, c.not_run
    )
}

/// `GET /ui/rollouts`
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    RawQuery(raw): RawQuery,
) -> UiResult {
    let (mut q, pairs): (ListRolloutsQuery, _) = page::query(raw.as_deref())?;
    q.limit = Some(q.limit.unwrap_or(50));
    let found = crate::api::rollouts::list_rollouts(State(state), Query(q))
        .await?
        .0;
    let status = field(&pairs, "status");
    let body = html! {
        h1 { "Rollouts" }
        form.filters.card method="get" action="/ui/rollouts" aria-label="Filter rollouts" {
            label { "Status" select name="status" {
                option value="" { "any" }
                @for s in RolloutStatus::ALL.map(RolloutStatus::as_str) {
                    option value=(s) selected[status == s] { (s) }
                }
            } }
            label { "Name" input type="text" name="name" value=(field(&pairs, "name")) placeholder="fw-*"; }
            button type="submit" { "Filter" }
        }
        @if found.items.is_empty() { p.muted { "No rollouts." } } @else {
            div.table-wrap { table {
                thead { tr { th { "Name" } th { "Operation" } th { "Status" } th { "Progress" }
                    th.hide-narrow { "Wave" } th.hide-narrow { "Created" } } }
                tbody { @for r in &found.items { tr {
                    td { a href=(format!("/ui/rollouts/{}", r.id)) { (r.name) } }
                    td { (r.operation) }
                    td { (badge(&r.status)) }
                    td { (progress(&r.counts)) span.muted { (r.counts.succeeded) "/" (r.counts.total) } }
                    td.hide-narrow { (r.current_wave.map_or("—".into(), |w| format!("{} of {}", w + 1, r.waves.len()))) }
                    td.hide-narrow { (time(Some(r.created_at))) }
                } } }
            } }
        }
        (page::pager("/ui/rollouts", &pairs, found.items.len(), found.total_text(), found.next_cursor.as_deref()))
    };
    Ok(page::ok(page::layout(
        "Rollouts",
        "/ui/rollouts",
        Some(&viewer),
        body,
    )))
}

/// The steering forms the rollout's state and the viewer's role allow.
fn controls(r: &RolloutDoc, viewer: &Viewer) -> Markup {
    let Some(csrf) = viewer
        .csrf
        .as_ref()
        .filter(|_| viewer.may(Action::SteerRollout))
    else {
        return html! {};
    };
    if r.ended() {
        return html! {};
    }
    let mut actions: Vec<(&str, &str, bool)> = Vec::new();
    if r.strategy.approval_after_canary && !r.approved {
        actions.push(("approve", "Approve the waves after the canary", false));
    }
    if r.status == "paused" {
        actions.push(("resume", "Resume", false));
    } else {
        actions.push(("pause", "Pause", false));
    }
    actions.push(("abort", "Abort (running tasks finish)", true));
    actions.push(("abort-cancel", "Abort and cancel running tasks", true));
    html! {
        div.actions aria-label="Steer the rollout" role="group" {
            @for (action, label, danger) in actions {
                form method="post" action=(format!("/ui/rollouts/{}/{action}", r.id)) {
                    (csrf_field(csrf))
                    @if danger { button.danger type="submit" { (label) } }
                    @else { button type="submit" { (label) } }
                }
            }
        }
    }
}

fn wave(w: &WaveDoc, current: bool) -> Markup {
    let title = if w.canary {
        format!("Wave {} (canary)", w.index + 1)
    } else {
        format!("Wave {}", w.index + 1)
    };
    html! {
        section.wave.card aria-current=[current.then_some("step")] {
            h3 { (title) " " (badge(&w.status)) @if current { " " span.muted { "current" } } }
            (progress(&w.counts))
            p.muted { (w.counts.total) " racks: " (counts_text(&w.counts)) }
            details open[current || w.status == "running" || w.status == "failed"] {
                summary { "Racks of " (title.to_lowercase()) }
                div.table-wrap { table {
                    thead { tr { th { "Rack" } th { "Outcome" } th { "Task" } th.hide-narrow { "Reason" } } }
                    tbody { @for rack in &w.racks { tr {
                        td { a href=(format!("/ui/racks/{}", rack.rack_id)) { (rack.rack_name) } }
                        td { (badge(&rack.outcome)) }
                        td { @if let Some(t) = rack.task_id {
                            a href=(format!("/ui/tasks/{t}")) { (page::short_id(t)) }
                            " " (badge(rack.task_status.as_deref().unwrap_or("unknown")))
                        } @else { "—" } }
                        td.hide-narrow { (rack.reason.as_deref().unwrap_or("")) }
                    } } }
                } }
            }
        }
    }
}

/// The part of a rollout's page that changes.
pub fn rollout_body(r: &RolloutDoc, viewer: &Viewer) -> Markup {
    let budget = &r.failure_budget_used;
    let limit = match (budget.max_failed_racks, budget.max_failed_fraction) {
        (None, None) => "no limit".to_string(),
        (Some(n), None) => format!("at most {n} {}", racks(n)),
        (None, Some(f)) => format!("at most {:.0}%", f * 100.0),
        (Some(n), Some(f)) => format!("at most {n} {} and {:.0}%", racks(n), f * 100.0),
    };
    let gate = if !r.strategy.approval_after_canary {
        "none"
    } else if r.approved {
        "approved"
    } else if r.status == "awaiting_approval" {
        "waiting for approval"
    } else {
        "approval needed after the canary"
    };
    html! {
        (controls(r, viewer))
        div.card {
            dl.facts {
                dt { "Status" } dd data-status=(r.status) { (badge(&r.status)) }
                dt { "Message" } dd { (r.message) }
                dt { "Operation" } dd { (r.operation) }
                dt { "Progress" } dd { (progress(&r.counts)) (r.counts.total) " racks: " (counts_text(&r.counts)) }
                dt { "Current wave" } dd { (r.current_wave.map_or("—".into(), |w| format!("{} of {}", w + 1, r.waves.len()))) }
                dt { "Approval gate" } dd { (gate) }
                dt { "Failure budget" } dd {
                    (budget.failed_racks) " failed (" (format!("{:.0}%", budget.failed_fraction * 100.0)) "), " (limit)
                    @if budget.exceeded { " " (badge("exceeded")) }
                }
                @if let Some(w) = &r.window {
                    dt { "Window" } dd { (time(Some(w.start))) " – " (time(Some(w.end))) }
                }
                dt { "Started" } dd { (time(r.started_at)) }
                dt { "Finished" } dd { (time(r.finished_at)) }
            }
        }
        h2 { "Waves" }
        @for w in &r.waves { (wave(w, r.current_wave == Some(w.index) && !r.ended())) }
    }
}

async fn load(state: &AppState, id: uuid::Uuid) -> Result<RolloutDoc, Problem> {
    Ok(
        crate::api::rollouts::get_rollout(State(state.clone()), Path(id.to_string()))
            .await?
            .0,
    )
}

/// `GET /ui/rollouts/{id}`: the rollout, following changes live until it ends.
pub async fn show(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> UiResult {
    let id = uuid_param("id", &id)?;
    let r = load(&state, id).await?;
    let body = html! {
        h1 { "Rollout " (r.name) }
        @if r.ended() {
            div id="rollout-live" { (rollout_body(&r, &viewer)) }
        } @else {
            div id="rollout-live" hx-ext="sse" sse-connect=(format!("/ui/rollouts/{id}/live"))
                sse-swap="rollout" sse-close="done" aria-live="polite" {
                (rollout_body(&r, &viewer))
            }
        }
    };
    Ok(page::ok(page::layout(
        &format!("Rollout {}", r.name),
        "/ui/rollouts",
        Some(&viewer),
        body,
    )))
}

/// `GET /ui/rollouts/{id}/live`: `rollout` events carrying the re-rendered body whenever the
/// rollout or one of its tasks changed, then `done` when it ends or the server shuts down.
pub async fn live(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, page::UiError> {
    let id = uuid_param("id", &id)?;
    load(&state, id).await?;
    let follow = follow::open(&state, Some(&viewer.identity), &[Key::Rollout(id)])?;
    let stream = follow::rollout_changes(state, id, follow).map(move |change| {
        let events = match change {
            Ok(RolloutChange::Now(doc)) => {
                let mut events = vec![
                    Event::default()
                        .event("rollout")
                        .data(rollout_body(&doc, &viewer).into_string()),
                ];
                if doc.ended() {
                    events.push(Event::default().event("done").data("ended"));
                }
                events
            }
            Ok(RolloutChange::ShuttingDown) => {
                vec![Event::default().event("done").data("shutdown")]
            }
            Err(e) => vec![
                Event::default()
                    .event("rollout")
                    .data(page::problem_box(&e.into()).into_string()),
                Event::default().event("done").data("error"),
            ],
        };
        futures::stream::iter(events.into_iter().map(Ok))
    });
    let stream = futures::StreamExt::flatten(stream);
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// `POST /ui/rollouts/{id}/{approve|pause|resume|abort|abort-cancel}`
pub async fn steer(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((id, action)): Path<(String, String)>,
) -> UiResult {
    viewer.require(Action::SteerRollout)?;
    let id = uuid_param("id", &id)?;
    let command = match action.as_str() {
        "approve" => Command::Approve,
        "pause" => Command::Pause,
        "resume" => Command::Resume,
        "abort" => Command::Abort {
            cancel_running: false,
        },
        "abort-cancel" => Command::Abort {
            cancel_running: true,
        },
        _ => {
            return Err(Problem::new(
                StatusCode::NOT_FOUND,
                Code::NotFound,
                format!("no rollout action {action:?}"),
            )
            .into());
        }
    };
    state.rollouts().command(id.into(), command).await?;
    Ok(Redirect::to(&format!("/ui/rollouts/{id}")).into_response())
}

/// "rack" or "racks" by count.
fn racks<N: PartialEq + From<u8>>(n: N) -> &'static str {
    if n == N::from(1) { "rack" } else { "racks" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rack_is_one_rack_not_one_racks() {
        let c = CountsDoc {
            total: 1,
            pending: 0,
            running: 0,
            succeeded: 1,
            failed: 0,
            skipped: 0,
            not_run: 0,
        };
        let bar = progress(&c).into_string();
        assert!(bar.contains("1 of 1 rack done"), "{bar}");
        assert_eq!(racks(2_u32), "racks");
        assert_eq!(racks(1_u32), "rack");
    }
}

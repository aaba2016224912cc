//! Holds in the console: badges on the rack and component pages (every hold that counts now on
//! the page's rack, its components or its NVLink domain, so an operator sees why a submission
//! would be `held`), and the holds page with a release button.

use axum::Extension;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Redirect};
use maud::{Markup, html};

use super::access::{Action, Viewer};
use super::csrf::CsrfToken;
use super::page::{self, UiResult, badge, csrf_field, time};
use crate::api::extract::Query;
use crate::api::holds::ListHoldsQuery;
use crate::app::AppState;
use crate::error::Result;
use crate::ids::{ComponentId, NvlDomainId, RackId};
use crate::inventory::holds::{self, Hold};

/// The active holds on these racks, components and domains (the readiness check's own query).
pub async fn active(
    state: &AppState,
    racks: &[RackId],
    components: &[ComponentId],
    domains: &[NvlDomainId],
) -> Result<Vec<Hold>> {
    holds::active_on(state.db(), racks, components, domains, state.now()).await
}

/// One `held` badge per hold with its owner, reason and expiry; `—` when nothing is held.
pub fn badges(holds: &[Hold]) -> Markup {
    html! {
        @if holds.is_empty() { "—" }
        @for h in holds {
            span.badge.b-warn data-hold=(h.id.uuid()) { "held" } " "
            (h.owner) ": " (h.reason)
            @if let Some(at) = h.expires_at { " (until " (time(Some(at))) ")" }
            br;
        }
    }
}

/// `kind id` of a hold's target, linked to its console page where it has one.
fn target_cell(t: &crate::api::schema::readiness::HoldTargetDoc) -> Markup {
    use crate::api::schema::readiness::HoldTargetDoc as T;
    match t {
        T::Rack(held) => html! { "rack " a href=(format!("/ui/racks/{}", held.id)) { (held.id) } },
        T::Component(held) => {
            html! { "component " a href=(format!("/ui/components/{}", held.id)) { (held.id) } }
        }
        T::NvlDomain(held) => {
            html! { "NVLink domain " a href=(format!("/ui/nvl-domains/{}", held.id)) { (held.id) } }
        }
    }
}

/// `GET /ui/holds`: the holds (filters and paging of `GET /v1/holds`), each with a release
/// button for those who may run operations; whether it is theirs to release the API decides.
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    Extension(csrf): Extension<CsrfToken>,
    RawQuery(raw): RawQuery,
) -> UiResult {
    let (mut q, pairs): (ListHoldsQuery, _) = page::query(raw.as_deref())?;
    q.limit = Some(q.limit.unwrap_or(50));
    let can = viewer.may(Action::RunOperation);
    let found = crate::api::holds::list_holds(State(state), Query(q))
        .await?
        .0;
    let body = html! {
        h1 { "Holds" }
        @if found.items.is_empty() { p.muted { "No holds." } } @else {
            div.table-wrap { table {
                thead { tr { th { "Target" } th { "Owner" } th { "Reason" } th { "State" } th { "Expires" }
                    th.hide-narrow { "Created by" } @if can { th { "Actions" } } } }
                tbody { @for h in &found.items { tr data-hold=(h.id) {
                    td { (target_cell(&h.target)) }
                    td { (h.owner) }
                    td { (h.reason) }
                    td { (badge(if h.active { "held" } else { "expired" })) }
                    td { (time(h.expires_at)) }
                    td.hide-narrow { (h.created_by) }
                    @if can { td { form method="post" action=(format!("/ui/holds/{}/release", h.id)) {
                        (csrf_field(&csrf))
                        button.secondary type="submit" aria-label=(format!("release hold {}", h.id)) { "release" }
                    } } }
                } } }
            } }
        }
        (page::pager("/ui/holds", &pairs, found.items.len(), found.total_text(), found.next_cursor.as_deref()))
    };
    Ok(page::ok(page::layout(
        "Holds",
        "/ui/holds",
        Some(&viewer),
        body,
    )))
}

/// `POST /ui/holds/{id}/release`: deletes the hold as the signed-in person (an operator its own,
/// an admin any: the API's rule, whose `403` is shown as a page).
pub async fn release(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> UiResult {
    viewer.require(Action::RunOperation)?;
    let identity = Some(Extension(viewer.identity.clone()));
    crate::api::holds::delete_hold(State(state), identity, Path(id)).await?;
    Ok(Redirect::to("/ui/holds").into_response())
}

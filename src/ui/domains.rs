//! The NVLink-domain page: the domain's racks side by side, each drawn as its elevation, since
//! a domain is operated (and upgraded) as one.

use axum::extract::{Path, State};
use maud::html;

use super::access::Viewer;
use super::elevation::{self, Marks};
use super::page::{self, UiResult};
use crate::api::extract::Query;
use crate::api::validation::ListDriftQuery;
use crate::app::AppState;
use crate::db::page::PageRequest;
use crate::inventory::racks::RackFilter;

/// Racks drawn on one page: a domain is one NVL72/NVL576 group, a handful of racks.
const MAX_RACKS: u64 = 64;

/// `GET /ui/nvl-domains/{id_or_name}`
pub async fn show(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id_or_name): Path<String>,
) -> UiResult {
    let domain = crate::inventory::nvl::get(state.db(), &id_or_name).await?;
    let filter = RackFilter {
        nvl_domain: Some(domain.id.to_string()),
        ..RackFilter::default()
    };
    let page = PageRequest::parse(Some(MAX_RACKS), None)?;
    let racks = crate::inventory::racks::list(state.db(), &filter, &page, true).await?;
    let mut drawn = Vec::with_capacity(racks.items.len());
    for rack in racks.items {
        let rack = crate::api::schema::rack::RackDoc::from(rack);
        let drift_q = ListDriftQuery {
            rack: Some(rack.id.to_string()),
            kind: None,
            diff_kind: None,
            limit: Some(1000),
            cursor: None,
            count: None,
        };
        let drift = crate::api::validation::list_drift(State(state.clone()), Query(drift_q))
            .await?
            .0;
        let marks = Marks::of_rack(&state, rack.id, &drift.items).await?;
        let components = rack.components.clone().unwrap_or_default();
        let svg = elevation::rack_svg(&rack.name, &components, &marks);
        drawn.push((rack, svg));
    }
    let id: uuid::Uuid = domain.id.into();
    let mixes = crate::drift::domains::mixed(state.db(), Some(&[id]), &Default::default()).await?;
    let body = html! {
        h1 { "NVLink domain " (domain.name) }
        @if viewer.may(super::access::Action::RunOperation) && !drawn.is_empty() {
            p { a.button href=(format!("/ui/run?nvl_domain={id}")) { "Run an operation on this domain" } }
        }
        @for m in &mixes {
            div.error role="alert" {
                strong { "domain_mixed" } ": the racks run different " (m.component_type.as_str()) " firmware"
                ul { @for (rack, versions) in &m.versions {
                    li { (rack) ": " span.mono { (versions.iter().cloned().collect::<Vec<_>>().join(", ")) } }
                } }
            }
        }
        @if drawn.is_empty() { p.muted { "No rack in this domain." } }
        div.elevations {
            @for (rack, svg) in &drawn {
                figure {
                    figcaption { a href=(format!("/ui/racks/{}", rack.id)) { (rack.name) } }
                    (svg)
                }
            }
        }
        (elevation::legend())
    };
    Ok(page::ok(page::layout(
        &domain.name,
        "/ui/racks",
        Some(&viewer),
        body,
    )))
}

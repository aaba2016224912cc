//! Hold badges on the rack and component pages: every hold that counts now on the page's rack,
//! its components or its NVLink domain, so an operator sees why a submission would be `held`.

use maud::{Markup, html};

use super::page::time;
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

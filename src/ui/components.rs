//! One component's page, where a rack elevation's tray leads: what it is, where it sits, what
//! it runs and what was last seen of it, and the tasks that touched it.

use axum::extract::{Path, State};
use maud::html;

use super::access::Viewer;
use super::page::{self, UiResult, badge, code, time};
use crate::api::extract::{Query, uuid_param};
use crate::api::schema::component::ComponentDoc;
use crate::api::tasks::ListTasksQuery;
use crate::app::AppState;

/// `GET /ui/components/{id}`
pub async fn show(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> UiResult {
    let id = uuid_param("id", &id)?;
    let mut c = ComponentDoc::from(
        crate::inventory::components::find(state.db(), id.into())
            .await?
            .component,
    );
    crate::api::maintenance::mark_components(state.db(), &mut [&mut c]).await?;
    let rack = match c.rack_id {
        Some(r) => Some(crate::inventory::racks::get(state.db(), r.into(), false).await?),
        None => None,
    };
    let q = ListTasksQuery {
        component_id: Some(id),
        limit: Some(20),
        ..Default::default()
    };
    let tasks = crate::api::tasks::list_tasks(State(state.clone()), Query(q))
        .await?
        .0;
    let power = c
        .power_state
        .as_ref()
        .map(code)
        .unwrap_or_else(|| "unknown".into());
    let racks: Vec<_> = c.rack_id.map(Into::into).into_iter().collect();
    let domains: Vec<_> = rack
        .as_ref()
        .and_then(|r| r.nvl_domain_id)
        .into_iter()
        .collect();
    let held = super::holds::active(&state, &racks, &[id.into()], &domains).await?;
    let body = html! {
        h1 { "Component " (c.name) }
        div.card { dl.facts {
            dt { "Type" } dd { (code(&c.kind)) }
            dt { "Rack" } dd { @if let Some(r) = &rack {
                a href=(format!("/ui/racks/{}", r.id)) { (r.name) } } @else { "—" } }
            dt { "Position" } dd { (super::racks::position(&c)) }
            dt { "Manufacturer" } dd { (c.manufacturer) }
            dt { "Serial number" } dd.mono { (c.serial_number) }
            dt { "Firmware (expected)" } dd.mono { (c.firmware_version.as_deref().unwrap_or("—")) }
            dt { "Firmware (observed)" } dd.mono { (c.observed_firmware_version.as_deref().unwrap_or("—")) }
            dt { "Power" } dd { (badge(&power))
                @if let Some(task) = c.maintenance_task_id {
                    " " span.badge.b-warn data-maintenance="true" { "in maintenance" } " "
                    a href=(format!("/ui/tasks/{task}")) { "task" }
                } }
            dt { "Holds" } dd { (super::holds::badges(&held)) }
            dt { "Last seen" } dd { (time(c.last_seen_at)) }
            dt { "BMCs" } dd.mono { @for b in &c.bmcs {
                (code(&b.kind)) " " (b.mac_address) " " (b.ip_address.as_deref().unwrap_or("")) br;
            } }
        } }
        h2 { "Tasks" }
        (super::tasks::task_table(&tasks.items))
    };
    Ok(page::ok(page::layout(
        &c.name,
        "/ui/racks",
        Some(&viewer),
        body,
    )))
}

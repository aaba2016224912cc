//! Rack elevations: each rack drawn as an SVG, server-side, from its components' positions, so an
//! operator sees at a glance which tray is off, drifting or under a task, and reaches it in one
//! click. Used by the rack page and, racks side by side, by the NVLink-domain page.

use std::collections::HashSet;

use axum::extract::State;
use maud::{Markup, html};
use uuid::Uuid;

use super::page::code;
use crate::api::extract::Query;
use crate::api::problem::ApiResult;
use crate::api::schema::component::ComponentDoc;
use crate::api::schema::drift::DriftDoc;
use crate::api::tasks::ListTasksQuery;
use crate::app::AppState;

const WIDTH: u32 = 300;
const ROW: u32 = 22;
const PAD: u32 = 6;

/// What colours a tray besides its power: the components with recorded drift, those under an
/// active task, and those in maintenance.
#[derive(Debug, Default)]
pub struct Marks {
    pub drift: HashSet<Uuid>,
    pub busy: HashSet<Uuid>,
    /// Under a running task: planned work (`in_maintenance` in the API); drawn hatched.
    pub maintenance: HashSet<Uuid>,
}

impl Marks {
    /// The marks of one rack: its drift records, the components of its active tasks, and
    /// those of its running tasks (in maintenance).
    pub async fn of_rack(state: &AppState, rack: Uuid, drift: &[DriftDoc]) -> ApiResult<Self> {
        let q = ListTasksQuery {
            rack_id: Some(rack),
            active_only: true,
            limit: Some(1000),
            ..Default::default()
        };
        let active = crate::api::tasks::list_tasks(State(state.clone()), Query(q))
            .await?
            .0;
        Ok(Self {
            drift: drift.iter().filter_map(|d| d.diff.component_id).collect(),
            busy: active
                .items
                .iter()
                .flat_map(|t| t.component_ids.iter().copied())
                .collect(),
            maintenance: active
                .items
                .iter()
                .filter(|t| t.status == crate::api::schema::task::TaskStatusDoc::Running)
                .flat_map(|t| t.component_ids.iter().copied())
                .collect(),
        })
    }
}

/// Top of the rack first: the highest slot (U position) on top, trays with only a tray index
/// after, then the unplaced ones by name.
fn ordered(components: &[ComponentDoc]) -> Vec<&ComponentDoc> {
    let mut out: Vec<&ComponentDoc> = components.iter().collect();
    out.sort_by(|a, b| {
        let key = |c: &ComponentDoc| (c.position.slot_id, c.position.tray_idx);
        key(b).cmp(&key(a)).then_with(|| a.name.cmp(&b.name))
    });
    out
}

fn place(c: &ComponentDoc) -> String {
    match (c.position.slot_id, c.position.tray_idx) {
        (Some(s), _) => format!("U{s}"),
        (None, Some(t)) => format!("#{t}"),
        (None, None) => "—".into(),
    }
}

fn fill(power: &str) -> &'static str {
    match power {
        "on" => "#2e8b57",
        "off" => "#8a939c",
        _ => "#ffffff",
    }
}

/// One rack's elevation: a tray per component, labelled with its place and name, filled by
/// power, outlined red when drifting, marked amber when a task holds it, linking to its page.
pub fn rack_svg(rack_name: &str, components: &[ComponentDoc], marks: &Marks) -> Markup {
    let trays = ordered(components);
    let height = PAD * 2 + ROW * u32::try_from(trays.len().max(1)).unwrap_or(u32::MAX / ROW);
    html! {
        svg.elevation xmlns="http://www.w3.org/2000/svg" role="img"
            viewBox=(format!("0 0 {WIDTH} {height}")) width="100%"
            aria-label=(format!("Elevation of rack {rack_name}")) {
            defs { pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)" {
                line x1="0" y1="0" x2="0" y2="6" stroke="#333" stroke-width="2" {}
            } }
            rect x="0" y="0" width=(WIDTH) height=(height) rx="4" fill="#2b2f36" {}
            @for (i, c) in trays.iter().enumerate() {
                (tray(c, marks, PAD + ROW * u32::try_from(i).unwrap_or(0)))
            }
        }
    }
}

fn tray(c: &ComponentDoc, marks: &Marks, y: u32) -> Markup {
    let power = c
        .power_state
        .as_ref()
        .map(code)
        .unwrap_or_else(|| "unknown".into());
    let drift = marks.drift.contains(&c.id);
    let busy = marks.busy.contains(&c.id);
    let maintenance = marks.maintenance.contains(&c.id);
    let text = if power == "on" { "#fff" } else { "#111" };
    let mut title = format!(
        "{} ({}), {}: power {power}",
        c.name,
        code(&c.kind),
        place(c)
    );
    for (on, word) in [
        (drift, "drift"),
        (busy, "task running"),
        (maintenance, "maintenance"),
    ] {
        if on {
            title.push_str(", ");
            title.push_str(word);
        }
    }
    let (x, w, h) = (PAD, WIDTH - 2 * PAD, ROW - 3);
    html! {
        a.tray href=(format!("/ui/components/{}", c.id)) data-component=(c.id) data-power=(power)
            data-drift=(drift) data-task=(busy) data-maintenance=(maintenance) {
            title { (title) }
            rect x=(x) y=(y) width=(w) height=(h) rx="2" fill=(fill(&power))
                stroke=(if drift { "#d0312d" } else { "#555" }) stroke-width=(if drift { 3 } else { 1 }) {}
            @if maintenance { rect x=(x) y=(y) width=(w) height=(h) fill="url(#hatch)" opacity="0.5" {} }
            text x=(x + 6) y=(y + 14) font-size="11" font-family="monospace" fill=(text) {
                (place(c)) " " (c.name)
            }
            @if busy { rect x=(x + w - 14) y=(y + 4) width="10" height=(h - 8) rx="2" fill="#f0a500" {} }
        }
    }
}

/// What the colours mean, under every elevation (colours in console.css: the console's CSP
/// allows no inline style).
pub fn legend() -> Markup {
    html! {
        p.legend.muted {
            span.swatch.on {} " on · "
            span.swatch.off {} " off · "
            span.swatch.unknown {} " unknown · "
            span.swatch.drift {} " drift · "
            span.swatch.busy {} " task active · "
            span.swatch.maintenance {} " in maintenance (a task runs on it)"
        }
    }
}

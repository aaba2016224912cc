//! The readiness check on the console's plan page: every hold and not-ready component in the
//! way, as the API's dry run lists them in `blockers`, before anyone clicks "Confirm and run".
//! Without an override nothing can be confirmed; an admin who ticked the override sees exactly
//! what it goes past.

use maud::{Markup, html};

use crate::tasks::submission::readiness::{Obstacle, ReadinessCode};

/// The box above the plan: nothing when nothing is in the way.
pub fn blockers(found: &[Obstacle], overridden: bool, admin: bool) -> Markup {
    if found.is_empty() && !overridden {
        return html! {};
    }
    let held = found.iter().any(|o| o.code == ReadinessCode::Held);
    let code = if overridden {
        "readiness_override"
    } else if held {
        "held"
    } else {
        "not_ready"
    };
    html! {
        div.error role="alert" data-code=(code) {
            @if overridden {
                strong { "The readiness check is overridden: " }
                "this runs although its targets are held or not ready; the audit log records \
                 every hold and alert overridden."
            } @else {
                strong { @if held { "Held: " } @else { "Not ready: " } }
                "nothing can be started while these stand in the way."
                @if admin { " An admin may override the readiness check (Back, then tick it)." }
                @else { " Ask the hold's owner to release it, or an admin to override." }
            }
            ul { @for o in found { (item(o)) } }
        }
    }
}

fn item(o: &Obstacle) -> Markup {
    html! {
        li data-hold=[o.hold_id.map(|h| h.uuid())] {
            "rack " (o.rack_name)
            @if let Some(c) = &o.component_name { ", " (c) }
            ": " (o.message)
        }
    }
}

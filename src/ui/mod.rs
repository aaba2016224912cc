//! The operator console: server-rendered HTML pages under `/ui`, a second HTTP face next to
//! [`crate::api`]. Pages call the same domain services (and the API's own handlers, in
//! process) so both faces answer alike; nothing here is part of the OpenAPI document.
//!
//! htmx and its SSE extension are vendored into the binary ([`assets`]); [`shield`] is the front
//! door (same-origin check on every unsafe request, security headers); every form carries a
//! CSRF token derived from the session ([`csrf`]); signing in opens a server-side session whose
//! id is all the cookie holds ([`login`], [`sessions`], [`session`]); [`access`] is the one
//! place that decides which actions are offered.

pub mod access;
pub mod assets;
pub mod components;
pub mod csrf;
pub mod domains;
pub mod elevation;
pub mod holds;
pub mod login;
pub mod page;
pub mod racks;
mod readiness;
pub mod rollouts;
pub mod run;
pub mod session;
pub mod sessions;
pub mod shield;
pub mod tasks;
pub mod views;

use axum::Router;
use axum::response::Redirect;
use axum::routing::{get, post};

use crate::app::AppState;

/// How the API's guard answers for the console: the session, the sign-in redirect, and
/// problems as pages.
pub fn face() -> crate::api::access::ConsoleFace {
    crate::api::access::ConsoleFace {
        session: session::resolve,
        to_login: session::to_login,
        error_page: page::error_page,
    }
}

/// Every console route, mounted beside the API by [`crate::service::router`] (which puts
/// [`shield::protect`] in front of them).
pub fn routes(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/ui", get(|| async { Redirect::to("/ui/racks") }))
        .route("/ui/", get(|| async { Redirect::to("/ui/racks") }))
        .route("/ui/assets/{file}", get(assets::serve))
        .route("/ui/login", get(login::show).post(login::submit))
        .route("/ui/logout", post(login::logout))
        .route("/ui/racks", get(racks::list))
        .route("/ui/racks/{id}", get(racks::show))
        .route("/ui/components/{id}", get(components::show))
        .route("/ui/nvl-domains/{id_or_name}", get(domains::show))
        .route("/ui/run", get(run::form).post(run::confirm))
        .route("/ui/run/preview", post(run::preview))
        .route("/ui/tasks", get(tasks::list))
        .route("/ui/tasks/{id}", get(tasks::show))
        .route("/ui/tasks/{id}/live", get(tasks::live))
        .route("/ui/tasks/{id}/cancel", post(tasks::cancel))
        .route("/ui/drift", get(views::drift))
        .route("/ui/schedules", get(views::schedules))
        .route("/ui/schedules/{id}/{action}", post(views::schedule_action))
        .route("/ui/rules", get(views::rules))
        .route("/ui/rules/{id}", get(views::rule))
        .route("/ui/holds", get(holds::list))
        .route("/ui/holds/{id}/release", post(holds::release))
        .route("/ui/rollouts", get(rollouts::list))
        .route("/ui/rollouts/{id}", get(rollouts::show))
        .route("/ui/rollouts/{id}/live", get(rollouts::live))
        .route("/ui/rollouts/{id}/{action}", post(rollouts::steer))
        .layer(axum::middleware::from_fn_with_state(state, csrf::protect))
}

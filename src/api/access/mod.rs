//! Who may call which route. Each route declares the access it needs once, where it is
//! declared: `security(("access" = ["viewer"]))` in its `#[utoipa::path]`. The guard's table
//! ([`table`]) is read back from the generated document, and the document's own security
//! ([`crate::api::openapi::secure`]) is derived from the same declaration, so the two cannot
//! drift apart. A route that declares nothing needs `admin` (and is logged).
//!
//! The console's pages are not in the OpenAPI document; they are decided by path prefix
//! ([`table::PREFIXES`]).

mod guard;
mod refused;
pub mod table;
#[cfg(test)]
mod tests;

use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;

use super::problem::Problem;
use crate::auth::Role;

pub use guard::guard;
pub use table::{access_for, routes};

/// What a route asks of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone: probes, the OpenAPI document, Swagger UI.
    Public,
    /// Anyone, but a caller whose bearer credentials check out is known to the handler (which
    /// shows such a caller more): readiness, whose details name internal addresses.
    Probe,
    /// Public unless `FLOW_METRICS_PUBLIC=false`, then `viewer`.
    Metrics,
    /// At least this role.
    Needs(Role),
    /// An operation: `operator`, or `viewer` for a `dry_run=true` preview.
    Runs,
    /// The operator console: at least this role, held by the console's server-side session
    /// (never a bearer header); without a live session a browser is sent to sign in.
    Session(Role),
}

use Access::{Metrics, Needs, Probe, Public, Runs, Session};
use Role::{Admin, Editor, Operator, Viewer};

impl Access {
    /// The word a route declares in `security(("access" = [word]))`: `public`, `probe`,
    /// `metrics`, `runs`, or a role's name.
    pub fn declared(word: &str) -> Option<Access> {
        match word {
            "public" => Some(Public),
            "probe" => Some(Probe),
            "metrics" => Some(Metrics),
            "runs" => Some(Runs),
            other => Role::parse(other).map(Needs),
        }
    }
}

/// How the console answers for itself where the guard stops a request: its server-side
/// session, its sign-in redirect and its error page. The console (`ui`) supplies it when it is
/// mounted beside the API (`service::router`), so the guard serves both faces without `api`
/// knowing the console.
#[derive(Clone, Copy)]
pub struct ConsoleFace {
    /// The identity of the browser's live session (`Missing` without one; never a credential).
    pub session: for<'a> fn(
        &'a crate::app::AppState,
        &'a HeaderMap,
        &'a axum::http::Extensions,
    ) -> futures::future::BoxFuture<
        'a,
        Result<crate::auth::Identity, crate::auth::AuthError>,
    >,
    /// Where a browser without a valid session goes: the sign-in page.
    pub to_login: fn(&Method, &Uri, &HeaderMap) -> Response,
    /// A problem as a whole console page.
    pub error_page: fn(Problem) -> Response,
}

/// The role a request needs, or `None` when it is public.
fn needed(access: Access, query: Option<&str>, metrics_public: bool) -> Option<Role> {
    match access {
        Public | Probe => None,
        Metrics if metrics_public => None,
        Metrics => Some(Viewer),
        Needs(role) | Session(role) => Some(role),
        Runs if is_dry_run(query) => Some(Viewer),
        Runs => Some(Operator),
    }
}

/// Console forms that only show what would happen (the run form's plan preview): like
/// `dry_run=true`, they change nothing, so they are not audited.
const PREVIEWS: &[&str] = &["/ui/run/preview"];

/// Whether a request only previews: a `dry_run=true` query or one of [`PREVIEWS`].
fn is_preview(path: &str, query: Option<&str>) -> bool {
    PREVIEWS.contains(&path) || is_dry_run(query)
}

fn is_dry_run(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        form_urlencoded::parse(q.as_bytes()).any(|(k, v)| k == "dry_run" && v == "true")
    })
}

/// What the OpenAPI description says a route needs.
pub fn describe(access: Access) -> Option<&'static str> {
    match access {
        Public | Probe => None,
        Metrics => Some("Requires the `viewer` role (`FLOW_METRICS_PUBLIC=false`)."),
        Needs(Viewer) => Some("Requires the `viewer` role (any role)."),
        Needs(Operator) => Some("Requires the `operator` role (or `admin`)."),
        Needs(Editor) => Some("Requires the `editor` role (or `admin`)."),
        Needs(Admin) => Some("Requires the `admin` role."),
        Runs => Some(
            "Requires the `operator` role (or `admin`); a `dry_run=true` preview needs only `viewer`.",
        ),
        Session(_) => None,
    }
}

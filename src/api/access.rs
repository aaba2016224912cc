//! Who may call which route: the one table deciding the role each route needs, the middleware
//! that authenticates, authorises and audits every request by it, and the OpenAPI security
//! derived from it. A route missing from the table needs `admin` (and is logged), and a test
//! walks the OpenAPI document so none goes missing.

use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::problem::Problem;
use crate::app::AppState;
use crate::audit;
use crate::auth::{AuthError, Identity, Role};
use crate::error::Code;

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
    /// The operator console: at least this role, presented in the console's session cookie
    /// (never a bearer header); without a valid session a browser is sent to sign in.
    Session(Role),
}

use Access::{Metrics, Needs, Probe, Public, Runs, Session};

/// How the console answers for itself where the guard stops a request: its session credential,
/// its sign-in redirect and its error page. The console (`ui`) supplies it when it is mounted
/// beside the API (`service::router`), so the guard serves both faces without `api` knowing
/// the console.
#[derive(Clone, Copy)]
pub struct ConsoleFace {
    /// The credential of the browser's session, if it presents one.
    pub token: for<'a> fn(&'a HeaderMap) -> Option<&'a str>,
    /// Where a browser without a valid session goes: the sign-in page.
    pub to_login: fn(&Method, &Uri, &HeaderMap) -> Response,
    /// A problem as a whole console page.
    pub error_page: fn(Problem) -> Response,
}
use Role::{Admin, Editor, Operator, Viewer};

/// Every route, one line each: method, path template (as the OpenAPI document spells it), access.
pub const ROUTES: &[(&str, &str, Access)] = &[
    ("GET", "/healthz", Public),
    ("GET", "/readyz", Probe),
    ("GET", "/metrics", Metrics),
    ("GET", "/openapi.json", Public),
    ("GET", "/v1/version", Needs(Viewer)),
    // Inventory: editors write, purge is admin-only.
    ("GET", "/v1/racks", Needs(Viewer)),
    ("GET", "/v1/racks/by-serial", Needs(Viewer)),
    ("GET", "/v1/racks/{id}", Needs(Viewer)),
    ("POST", "/v1/expected-racks", Needs(Editor)),
    ("PATCH", "/v1/racks/{id}", Needs(Editor)),
    ("DELETE", "/v1/racks/{id}", Needs(Editor)),
    ("POST", "/v1/racks/{id}/purge", Needs(Admin)),
    ("GET", "/v1/components", Needs(Viewer)),
    ("GET", "/v1/components/by-mac/{mac}", Needs(Viewer)),
    ("GET", "/v1/components/by-serial", Needs(Viewer)),
    ("GET", "/v1/components/{id}", Needs(Viewer)),
    ("POST", "/v1/components", Needs(Editor)),
    ("PATCH", "/v1/components/{id}", Needs(Editor)),
    ("DELETE", "/v1/components/{id}", Needs(Editor)),
    ("POST", "/v1/components/{id}/purge", Needs(Admin)),
    ("GET", "/v1/nvl-domains", Needs(Viewer)),
    ("GET", "/v1/nvl-domains/{id_or_name}", Needs(Viewer)),
    ("GET", "/v1/nvl-domains/{id_or_name}/racks", Needs(Viewer)),
    ("POST", "/v1/nvl-domains", Needs(Editor)),
    ("POST", "/v1/nvl-domains/{id_or_name}/racks", Needs(Editor)),
    (
        "DELETE",
        "/v1/nvl-domains/{id_or_name}/racks/{rack}",
        Needs(Editor),
    ),
    // Operations and tasks: operators run and cancel.
    ("POST", "/v1/operations/bring-up", Runs),
    ("POST", "/v1/operations/firmware-upgrade", Runs),
    ("POST", "/v1/operations/ingest", Runs),
    ("POST", "/v1/operations/power-off", Runs),
    ("POST", "/v1/operations/power-on", Runs),
    ("POST", "/v1/operations/power-reset", Runs),
    ("POST", "/v1/racks/{id}/bring-up", Runs),
    ("POST", "/v1/racks/{id}/firmware", Runs),
    ("PATCH", "/v1/racks/{id}/power", Runs),
    ("GET", "/v1/tasks", Needs(Viewer)),
    ("GET", "/v1/tasks/{id}", Needs(Viewer)),
    ("GET", "/v1/tasks/{id}/events", Needs(Viewer)),
    ("GET", "/v1/racks/{id}/tasks", Needs(Viewer)),
    ("POST", "/v1/tasks/{id}/cancel", Needs(Operator)),
    // Validation asks the devices (operator); recorded drift is a read.
    ("POST", "/v1/validation", Needs(Operator)),
    ("GET", "/v1/racks/{id}/validation", Needs(Operator)),
    ("GET", "/v1/drift", Needs(Viewer)),
    // Rules: admin-only changes.
    ("GET", "/v1/operation-rules", Needs(Viewer)),
    ("GET", "/v1/operation-rules/{id}", Needs(Viewer)),
    ("GET", "/v1/operation-rules/{id}/versions", Needs(Viewer)),
    ("GET", "/v1/racks/{id}/operation-rules", Needs(Viewer)),
    ("POST", "/v1/operation-rules", Needs(Admin)),
    ("PUT", "/v1/operation-rules/{id}", Needs(Admin)),
    ("DELETE", "/v1/operation-rules/{id}", Needs(Admin)),
    ("POST", "/v1/operation-rules/{id}/default", Needs(Admin)),
    ("DELETE", "/v1/operation-rules/{id}/default", Needs(Admin)),
    (
        "PUT",
        "/v1/racks/{id}/operation-rules/{operation}",
        Needs(Admin),
    ),
    (
        "DELETE",
        "/v1/racks/{id}/operation-rules/{operation}",
        Needs(Admin),
    ),
    // Schedules: admins define them, operators trigger, pause and resume.
    ("GET", "/v1/task-schedules", Needs(Viewer)),
    ("GET", "/v1/task-schedules/{id}", Needs(Viewer)),
    ("GET", "/v1/task-schedules/{id}/runs", Needs(Viewer)),
    ("GET", "/v1/task-schedules/{id}/scope", Needs(Viewer)),
    ("POST", "/v1/task-schedules/conflicts", Needs(Viewer)),
    ("POST", "/v1/task-schedules", Needs(Admin)),
    ("PATCH", "/v1/task-schedules/{id}", Needs(Admin)),
    ("DELETE", "/v1/task-schedules/{id}", Needs(Admin)),
    ("POST", "/v1/task-schedules/{id}/scope", Needs(Admin)),
    (
        "DELETE",
        "/v1/task-schedules/{id}/scope/{rack}",
        Needs(Admin),
    ),
    ("POST", "/v1/task-schedules/{id}/pause", Needs(Operator)),
    ("POST", "/v1/task-schedules/{id}/resume", Needs(Operator)),
    ("POST", "/v1/task-schedules/{id}/trigger", Needs(Operator)),
    // Rollouts: operators run and steer them (a dry run is a viewer's preview), viewers watch.
    ("POST", "/v1/rollouts", Runs),
    ("GET", "/v1/rollouts", Needs(Viewer)),
    ("GET", "/v1/rollouts/{id}", Needs(Viewer)),
    ("GET", "/v1/rollouts/{id}/events", Needs(Viewer)),
    ("POST", "/v1/rollouts/{id}/pause", Needs(Operator)),
    ("POST", "/v1/rollouts/{id}/resume", Needs(Operator)),
    ("POST", "/v1/rollouts/{id}/approve", Needs(Operator)),
    ("POST", "/v1/rollouts/{id}/abort", Needs(Operator)),
    // Tokens and the audit log.
    ("GET", "/v1/tokens", Needs(Admin)),
    ("POST", "/v1/tokens", Needs(Admin)),
    ("DELETE", "/v1/tokens/{id}", Needs(Admin)),
    ("GET", "/v1/audit", Needs(Admin)),
];

/// Route families decided by path prefix (the operator console, which is not in the OpenAPI
/// document): method (`*`: any), prefix, access. A path matches a prefix it equals or continues
/// with `/`; the first matching row decides, so narrower rows come first. [`ROUTES`] is
/// consulted before this table.
pub const PREFIXES: &[(&str, &str, Access)] = &[
    // What the sign-in page itself needs.
    ("GET", "/ui/assets", Public),
    ("*", "/ui/login", Public),
    ("POST", "/ui/logout", Public),
    // Pages read; forms act (the console checks each action's own role again).
    ("GET", "/ui", Session(Viewer)),
    ("HEAD", "/ui", Session(Viewer)),
    ("*", "/ui", Session(Operator)),
];

/// The tables' decision for a route, if they have one. `HEAD` is a `GET` without its body: a
/// route without a `HEAD` row of its own takes its `GET` row's decision.
pub fn access_for(method: &str, path: &str) -> Option<Access> {
    decided(method, path).or_else(|| {
        method
            .eq_ignore_ascii_case("HEAD")
            .then(|| decided("GET", path))
            .flatten()
    })
}

fn decided(method: &str, path: &str) -> Option<Access> {
    let method_matches = |m: &str| m == "*" || m.eq_ignore_ascii_case(method);
    ROUTES
        .iter()
        .find(|(m, p, _)| method_matches(m) && *p == path)
        .or_else(|| {
            PREFIXES.iter().find(|(m, prefix, _)| {
                method_matches(m)
                    && path
                        .strip_prefix(prefix)
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
        })
        .map(|(_, _, access)| *access)
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

fn mutating(method: &Method) -> bool {
    matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    )
}

/// `401` with the challenge RFC 6750 defines; `error=` says why a presented token failed.
fn unauthorized(err: &AuthError) -> Response {
    auth_failed(err);
    let challenge = match err {
        AuthError::Missing => "Bearer realm=\"flow\"".to_string(),
        other => {
            format!("Bearer realm=\"flow\", error=\"invalid_token\", error_description=\"{other}\"")
        }
    };
    let mut response = Problem::new(
        StatusCode::UNAUTHORIZED,
        Code::Unauthorized,
        err.to_string(),
    )
    .into_response();
    if let Ok(value) = challenge.parse() {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// Counts a refused credential in `flow_auth_failures_total`.
fn auth_failed(err: &AuthError) {
    let reason = match err {
        AuthError::Missing => "missing",
        AuthError::Expired => "expired",
        AuthError::Invalid | AuthError::KeysUnavailable => "invalid",
    };
    crate::telemetry::metrics::auth_failure(reason);
}

fn forbidden_problem(identity: &Identity, needed: Role) -> Problem {
    let held = identity
        .roles
        .iter()
        .map(|r| r.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let held = if held.is_empty() {
        "no Flow role".to_string()
    } else {
        held
    };
    let also = if needed == Admin { "" } else { " (or admin)" };
    Problem::new(
        StatusCode::FORBIDDEN,
        Code::Forbidden,
        format!(
            "this needs the {needed} role{also}; {} has {held}",
            identity.actor
        ),
    )
}

/// The middleware on every route: authenticate, authorise by [`ROUTES`], and run a mutating
/// request inside an audit context whose rows get the answer's status.
pub async fn guard(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map_or_else(
        || request.uri().path().to_string(),
        |m| m.as_str().to_string(),
    );
    let method = request.method().clone();
    let access = access_for(method.as_str(), &route).unwrap_or_else(|| {
        tracing::error!(%method, %route, "route has no access decision; requiring admin");
        Needs(Admin)
    });
    let Some(needed) = needed(access, request.uri().query(), state.config().metrics.public) else {
        if access == Probe {
            probe_identity(&state, &mut request).await;
        }
        return next.run(request).await;
    };
    // The console answers in HTML and takes its session cookie; everything else takes only a
    // bearer header (a cookie on `/v1` would let any page the browser visits act as the user).
    let console = match access {
        Session(_) => request.extensions().get::<ConsoleFace>().copied(),
        _ => None,
    };
    let auth = state.authenticator();
    let identity = if auth.modes().is_none() {
        Identity::anonymous()
    } else {
        let presented = if let Some(face) = console {
            (face.token)(request.headers())
        } else {
            bearer(request.headers())
        };
        let Some(presented) = presented else {
            return match console {
                Some(face) => (face.to_login)(request.method(), request.uri(), request.headers()),
                None => unauthorized(&AuthError::Missing),
            };
        };
        match auth.authenticate(presented).await {
            Ok(identity) => identity,
            Err(AuthError::KeysUnavailable) => {
                let problem = Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    Code::Unavailable,
                    "credentials cannot be checked right now; retry",
                );
                return match console {
                    Some(face) => (face.error_page)(problem),
                    None => problem.into_response(),
                };
            }
            Err(e) => {
                tracing::info!(%method, %route, reason = %e, "refused a bearer token");
                return match console {
                    Some(face) => {
                        auth_failed(&e);
                        (face.to_login)(request.method(), request.uri(), request.headers())
                    }
                    None => unauthorized(&e),
                };
            }
        }
    };
    // Handlers that show who is acting (the console) read it from here.
    request.extensions_mut().insert(identity.clone());
    let role = identity.role_for(needed);
    let audited = mutating(&method) && !is_dry_run(request.uri().query());
    let request_id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let client = request
        .extensions()
        .get::<super::client::ClientAddr>()
        .map(|c| c.0.to_string());
    let context = Arc::new(
        audit::Context::new(
            &identity.actor,
            role.or(identity.main_role()).map(Role::as_str),
            method.as_str(),
            &route,
            request_id,
        )
        .from_client(client),
    );
    let mut on_panic = AuditOnPanic {
        state: audited.then(|| state.clone()),
        context: context.clone(),
    };
    let response = match role {
        Some(_) => audit::scope(context.clone(), next.run(request)).await,
        None => match console {
            Some(face) => (face.error_page)(forbidden_problem(&identity, needed)),
            None => forbidden_problem(&identity, needed).into_response(),
        },
    };
    on_panic.state = None;
    if audited {
        finish_audit(&state, &context, response.status()).await;
    }
    response
}

/// Audits the attempted change of a request whose handler panicked: the unwind skips the
/// guard's own bookkeeping, so this runs on drop during the unwind (the panic layer outside
/// answers 500). Disarmed once the handler returns.
struct AuditOnPanic {
    /// Set for a request that is audited.
    state: Option<AppState>,
    context: Arc<audit::Context>,
}

impl Drop for AuditOnPanic {
    fn drop(&mut self) {
        if let Some(state) = self.state.take()
            && std::thread::panicking()
        {
            let context = self.context.clone();
            tokio::spawn(async move {
                finish_audit(&state, &context, StatusCode::INTERNAL_SERVER_ERROR).await;
            });
        }
    }
}

/// The bearer credential of a request's `Authorization` header, if it has one.
fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .filter(|t| !t.is_empty())
}

/// On a [`Probe`] route: the caller's identity when its credentials check out (anyone under
/// `FLOW_AUTH=none`); a caller without them, or with bad ones, stays anonymous and unrefused.
async fn probe_identity(state: &AppState, request: &mut Request) {
    let auth = state.authenticator();
    let identity = if auth.modes().is_none() {
        Some(Identity::anonymous())
    } else if let Some(presented) = bearer(request.headers()) {
        auth.authenticate(presented).await.ok()
    } else {
        None
    };
    if let Some(identity) = identity {
        request.extensions_mut().insert(identity);
    }
}

/// Gives the rows a request recorded its status, or records the request itself when it changed
/// nothing (refused, failed, or a route whose store records nothing).
async fn finish_audit(state: &AppState, context: &audit::Context, status: StatusCode) {
    let ids = context.recorded();
    let result = if ids.is_empty() {
        audit::record_request(state.db(), context, status.as_u16(), state.now()).await
    } else {
        audit::set_status(state.db(), &ids, status.as_u16()).await
    };
    if let Err(e) = result {
        tracing::error!(error = %e, route = %context.route, "recording the request's outcome in the audit log failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_takes_the_decision_of_get_everywhere() {
        for (method, path, access) in ROUTES {
            if *method == "GET" {
                assert_eq!(access_for("HEAD", path), Some(*access), "{path}");
            }
        }
        assert_eq!(access_for("HEAD", "/healthz"), Some(Public));
        assert_eq!(access_for("HEAD", "/ui/racks"), Some(Session(Viewer)));
        assert_eq!(access_for("HEAD", "/no/such/route"), None);
    }

    async fn boom() -> &'static str {
        panic!("boom in a handler")
    }

    #[tokio::test]
    async fn a_panicking_handler_answers_500_and_its_attempted_change_is_audited() {
        use tower::ServiceExt;
        let path = std::env::temp_dir().join(format!("flow-panic-{}.db", uuid::Uuid::new_v4()));
        let url = format!("sqlite://{}?mode=rwc", path.display());
        let db = crate::db::connect(&crate::db::DbOptions::new(url))
            .await
            .unwrap();
        crate::db::migrate(&db).await.unwrap();
        let config = crate::config::Config::default();
        let state = crate::app::App::builder(db.clone(), config)
            .build()
            .into_state();
        // The real guard and the real panic layer around a handler that panics.
        let router = axum::Router::new()
            .route("/v1/racks/{id}", axum::routing::patch(boom))
            .route_layer(axum::middleware::from_fn_with_state(state.clone(), guard))
            .with_state(state)
            .layer(tower_http::catch_panic::CatchPanicLayer::custom(
                super::super::panic_answer as super::super::PanicAnswer,
            ));
        let request = axum::http::Request::patch("/v1/racks/x")
            .header("x-request-id", "req-panic-1")
            .body(axum::body::Body::empty())
            .unwrap();
        let answer = router.oneshot(request).await.unwrap();
        assert_eq!(answer.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            answer.headers()[header::CONTENT_TYPE],
            "application/problem+json"
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let row = loop {
            let rows = crate::audit::query::list(&db, &Default::default(), 10)
                .await
                .unwrap();
            if let Some(row) = rows.into_iter().find(|r| r.route == "/v1/racks/{id}") {
                break row;
            }
            assert!(std::time::Instant::now() < deadline, "no audit row");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        };
        assert_eq!(row.status, Some(500));
        assert_eq!(row.method, "PATCH");
        assert_eq!(row.request_id.as_deref(), Some("req-panic-1"));
        db.close().await.ok();
        let _ = std::fs::remove_file(&path);
    }
}

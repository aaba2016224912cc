//! The middleware on every route: authenticates the caller (bearer header, or the console's
//! session), authorises by the route's declared [`super::Access`], and audits every change.

use std::sync::Arc;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::Access::{Needs, Probe, Session};
use super::refused::{auth_failed, forbidden_problem, unauthorized};
use super::{ConsoleFace, access_for, is_preview, needed};
use crate::api::problem::Problem;
use crate::app::AppState;
use crate::audit;
use crate::auth::{AuthError, Identity, Role, Role::Admin};
use crate::error::Code;

fn unavailable() -> Problem {
    Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        Code::Unavailable,
        "credentials cannot be checked right now; retry",
    )
}

fn mutating(method: &Method) -> bool {
    matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    )
}

/// The middleware on every route: authenticate, authorise by the route's declared access
/// ([`access_for`]), and run a mutating
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
    } else if let Some(face) = console {
        match (face.session)(&state, request.headers(), request.extensions()).await {
            Ok(identity) => identity,
            Err(AuthError::KeysUnavailable) => return (face.error_page)(unavailable()),
            Err(e) => {
                if e != AuthError::Missing {
                    auth_failed(&e);
                }
                return (face.to_login)(request.method(), request.uri(), request.headers());
            }
        }
    } else {
        let Some(presented) = bearer(request.headers()) else {
            return unauthorized(&AuthError::Missing);
        };
        match auth.authenticate(presented).await {
            Ok(identity) => identity,
            Err(AuthError::KeysUnavailable) => return unavailable().into_response(),
            Err(e) => {
                tracing::info!(%method, %route, reason = %e, "refused a bearer token");
                return unauthorized(&e);
            }
        }
    };
    // Handlers that show who is acting (the console) read it from here.
    request.extensions_mut().insert(identity.clone());
    let role = identity.role_for(needed);
    if role.is_some() && !mutating(&method) {
        // A read records nothing: no audit context to build (it costs a handful of strings
        // per request on the hottest routes).
        return next.run(request).await;
    }
    let audited = mutating(&method) && !is_preview(request.uri().path(), request.uri().query());
    let request_id = request
        .headers()
        .get(crate::api::request_id::X_REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let client = request
        .extensions()
        .get::<crate::api::client::ClientAddr>()
        .map(|c| c.0.to_string());
    let context = Arc::new(
        audit::Context::new(
            &identity.actor,
            role.or(identity.main_role()).map(Role::as_str),
            method.as_str(),
            &route,
            request_id,
        )
        .from_client(client)
        .with_roles(identity.roles.clone()),
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
    let result = if context.recorded().is_empty() {
        audit::record_request(state.db(), context, status.as_u16(), state.now()).await
    } else {
        // Rows written with this very status (a create's 201) need no update.
        audit::set_status(
            state.db(),
            &context.unsettled(status.as_u16()),
            status.as_u16(),
        )
        .await
    };
    if let Err(e) = result {
        tracing::error!(error = %e, route = %context.route, "recording the request's outcome in the audit log failed");
    }
}

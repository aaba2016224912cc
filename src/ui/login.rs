//! Signing in and out. The form takes a credential the API would accept as a bearer token (an
//! API token `flow_…` or an identity provider's JWT), checks it with the API's own
//! [`crate::auth::Authenticator`] and keeps it in the session cookie ([`super::session`]).
//! The credential is never logged or shown back; a wrong one gets the same answer as an
//! unknown one, as on the API.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;

use super::csrf::CsrfToken;
use super::page::{self, csrf_field};
use super::session::{self, safe_next};
use crate::api::problem::{FieldErrorDoc, Problem};
use crate::app::AppState;
use crate::auth::AuthError;
use crate::error::Code;

/// Where a signed-in browser goes when it did not come from a page.
const HOME: &str = "/ui/racks";

fn next_of(pairs: &[(String, String)]) -> String {
    pairs
        .iter()
        .find(|(k, _)| k == "next")
        .and_then(|(_, v)| safe_next(v))
        .unwrap_or(HOME)
        .to_string()
}

/// The form, with the problem of the last attempt if any.
fn form(status: StatusCode, csrf: &CsrfToken, next: &str, problem: Option<Problem>) -> Response {
    let body = html! {
        h1 { "Sign in" }
        @if let Some(p) = &problem { (page::problem_box(p)) }
        form.card.signin method="post" action=(session::LOGIN) {
            (csrf_field(csrf))
            input type="hidden" name="next" value=(next);
            label for="token" { "API token or identity-provider token (JWT)" }
            input id="token" type="password" name="token" required autocomplete="off"
                autofocus aria-describedby="token-help";
            p.muted id="token-help" {
                "The same credential the API takes as a bearer token. Create an API token with "
                code { "flow token create --name NAME --role operator" } "."
            }
            div.actions { button type="submit" { "Sign in" } }
        }
    };
    (status, page::layout("Sign in", "", None, body)).into_response()
}

/// `GET /ui/login`: the form; with `FLOW_AUTH=none` there is nothing to sign in to.
pub async fn show(
    State(state): State<AppState>,
    Extension(csrf): Extension<CsrfToken>,
    RawQuery(raw): RawQuery,
) -> Response {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(raw.as_deref().unwrap_or("")).unwrap_or_default();
    let next = next_of(&pairs);
    if state.authenticator().modes().is_none() {
        return Redirect::to(&next).into_response();
    }
    form(StatusCode::OK, &csrf, &next, None)
}

/// `POST /ui/login`: checks the credential; on success keeps it in the session cookie and goes
/// back to the page that asked for it.
pub async fn submit(
    State(state): State<AppState>,
    Extension(csrf): Extension<CsrfToken>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(&body).unwrap_or_default();
    let next = next_of(&pairs);
    let auth = state.authenticator();
    if auth.modes().is_none() {
        return Redirect::to(&next).into_response();
    }
    let token = pairs
        .iter()
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.trim())
        .unwrap_or("");
    let refused = |status: StatusCode, detail: &str| {
        let mut p = Problem::new(status, Code::Unauthorized, detail);
        // Name the field, like every other form error.
        p.errors = vec![FieldErrorDoc {
            field: "token".into(),
            message: detail.into(),
        }];
        form(status, &csrf, &next, Some(p))
    };
    if token.is_empty() {
        return refused(StatusCode::BAD_REQUEST, "enter a token");
    }
    if !session::storable(token) {
        return refused(StatusCode::UNAUTHORIZED, &AuthError::Invalid.to_string());
    }
    let identity = match auth.authenticate(token).await {
        Ok(identity) => identity,
        Err(AuthError::KeysUnavailable) => {
            return refused(
                StatusCode::SERVICE_UNAVAILABLE,
                "credentials cannot be checked right now; try again shortly",
            );
        }
        Err(e) => {
            // The reason only, never the credential.
            tracing::info!(reason = %e, "console sign-in refused");
            crate::telemetry::metrics::auth_failure("sign_in");
            return refused(StatusCode::UNAUTHORIZED, &e.to_string());
        }
    };
    if identity.main_role().is_none() {
        return refused(
            StatusCode::FORBIDDEN,
            "these credentials carry no Flow role (viewer, operator, editor or admin)",
        );
    }
    tracing::info!(actor = %identity.actor, "signed in to the console");
    let mut response = Redirect::to(&next).into_response();
    if let Some(cookie) = session::set(token, session::over_https(&uri, &headers)) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// `POST /ui/logout`: forgets the session (the credential itself stays valid until it expires
/// or is revoked: the browser only stops holding it).
pub async fn logout(uri: Uri, headers: HeaderMap) -> Response {
    let mut response = Redirect::to(session::LOGIN).into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        session::clear(session::over_https(&uri, &headers)),
    );
    response
}

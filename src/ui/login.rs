//! Signing in and out. The form takes a credential the API would accept as a bearer token (an
//! API token `flow_…` or an identity provider's JWT), checks it with the API's own
//! [`crate::auth::Authenticator`] and opens a server-side session for the identity
//! ([`super::sessions`]); the cookie gets only the session's id ([`super::session`]). Signing
//! in always opens a new session (one the browser already presented is ended: no fixation);
//! signing out ends it. The credential is never logged, stored or shown back; a wrong one gets
//! the same answer as an unknown one, as on the API.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{Extensions, HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;

use super::csrf::CsrfToken;
use super::page::{self, csrf_field};
use super::session::{self, safe_next};
use super::sessions;
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

/// Credentials longer than this are not ours (JWTs are a few KiB at most).
const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// `POST /ui/login`: checks the credential; on success opens a session and goes back to the
/// page that asked for it.
pub async fn submit(
    State(state): State<AppState>,
    Extension(csrf): Extension<CsrfToken>,
    extensions: Extensions,
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
    if token.len() > MAX_TOKEN_BYTES {
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
    let https = session::https(&extensions);
    // A session this browser already had (perhaps one planted in it) ends here: the new one
    // has a fresh id.
    if let Some(old) = session::id(&headers, https)
        && let Err(e) = sessions::close(state.db(), old).await
    {
        tracing::warn!(error = %e, "ending the previous console session failed");
    }
    let bound_to = if auth.modes().token && token.starts_with(crate::auth::tokens::PREFIX) {
        match crate::auth::tokens::id_of(state.db(), token).await {
            Ok(id) => id,
            Err(e) => return opening_failed(&e),
        }
    } else {
        None
    };
    let opening = sessions::Opening {
        until: if bound_to.is_none() {
            jwt_expiry(token)
        } else {
            None
        },
        identity,
        token: bound_to,
    };
    let limits = sessions::Limits::from_config(state.config());
    let id = match sessions::open(state.db(), &opening, state.now(), limits).await {
        Ok(id) => id,
        Err(e) => return opening_failed(&e),
    };
    tracing::info!(actor = %opening.identity.actor, "signed in to the console");
    let mut response = Redirect::to(&next).into_response();
    if let Some(cookie) = session::set(session::COOKIE, &id, https) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// The `exp` of a JWT that was just verified (so its claims can be read as they are): the
/// session opened with it ends then at the latest.
fn jwt_expiry(jwt: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    use base64::Engine;
    let payload = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    chrono::DateTime::from_timestamp(claims.get("exp")?.as_i64()?, 0)
}

fn opening_failed(e: &crate::error::Error) -> Response {
    tracing::error!(error = %e, "opening a console session failed");
    page::error_page(Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        Code::Unavailable,
        "the session could not be opened; try again shortly",
    ))
}

/// `POST /ui/logout`: ends the session on the server (its id is worthless afterwards, even to
/// someone who copied the cookie) and forgets the cookie.
pub async fn logout(
    State(state): State<AppState>,
    extensions: Extensions,
    headers: HeaderMap,
) -> Response {
    if let Some(id) = session::id(&headers, session::https(&extensions))
        && let Err(e) = sessions::close(state.db(), id).await
    {
        tracing::error!(error = %e, "ending a console session failed");
        return page::error_page(Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            Code::Unavailable,
            "signing out failed; try again shortly",
        ));
    }
    let mut response = Redirect::to(session::LOGIN).into_response();
    for cleared in session::clear(&headers) {
        response.headers_mut().append(header::SET_COOKIE, cleared);
    }
    response
}

//! CSRF protection for every console form: the token a form carries is an HMAC-SHA256, under the
//! server's key ([`super::sessions::key`]), of the browser's session id, or, before sign-in
//! (the sign-in form itself, and every form with `FLOW_AUTH=none`), of a random pre-session
//! cookie. A POST whose field is not the token of the cookies it came with is refused before
//! any handler runs. A page elsewhere can plant cookies (they ignore ports) but cannot compute
//! the token of the victim's session, so a planted cookie/field pair fails.

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

use super::session;
use crate::api::problem::Problem;
use crate::app::AppState;
use crate::error::Code;

/// Name of the hidden form field.
pub const FIELD: &str = "csrf";
/// The pre-session cookie (`__Host-flow_csrf` over https).
const COOKIE: &str = "flow_csrf";
/// Console forms are a few fields; anything larger is not one of ours.
const MAX_FORM_BYTES: usize = 64 * 1024;

/// The token of this browser's session, for pages to embed in their forms.
#[derive(Debug, Clone)]
pub struct CsrfToken(pub String);

/// What the token is bound to: the session, or the browser before it has one.
fn binding(headers: &HeaderMap, https: bool) -> Option<String> {
    if let Some(id) = session::id(headers, https) {
        return Some(format!("session:{id}"));
    }
    session::cookie(headers, &session::name(COOKIE, https))
        .filter(|v| v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(|v| format!("browser:{v}"))
}

/// The token of a binding under the server's key.
pub fn token(key: &hmac::Key, binding: &str) -> String {
    URL_SAFE_NO_PAD.encode(hmac::sign(key, binding.as_bytes()).as_ref())
}

fn new_cookie_value() -> Option<String> {
    let mut bytes = [0u8; 32];
    SystemRandom::new().fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn refused(detail: &str) -> Response {
    super::page::error_page(Problem::new(StatusCode::FORBIDDEN, Code::Csrf, detail))
}

fn unavailable() -> Response {
    super::page::error_page(Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        Code::Unavailable,
        "the console cannot check its forms right now; try again shortly",
    ))
}

/// Issues the token on reads and checks it on every other method.
pub async fn protect(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let key = match super::sessions::key(&state).await {
        Ok(key) => key,
        Err(e) => {
            tracing::warn!(error = %e, "reading the console's CSRF key failed");
            return unavailable();
        }
    };
    let https = session::https(req.extensions());
    let bound = binding(req.headers(), https);
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let Some(bound) = bound else {
            return refused("the form's session expired; reload the page and try again");
        };
        let expected = token(&key, &bound);
        let (parts, body) = req.into_parts();
        let Ok(bytes) = to_bytes(body, MAX_FORM_BYTES).await else {
            return refused("the form is too large");
        };
        let fields: Vec<(String, String)> =
            serde_urlencoded::from_bytes(&bytes).unwrap_or_default();
        let sent = fields.iter().find(|(k, _)| k == FIELD).map(|(_, v)| v);
        // Verified in constant time: timing does not reveal a prefix of the token.
        let valid = sent
            .and_then(|t| URL_SAFE_NO_PAD.decode(t.as_bytes()).ok())
            .is_some_and(|tag| hmac::verify(&key, bound.as_bytes(), &tag).is_ok());
        if !valid {
            return refused(
                "the form's security token does not match; reload the page and try again",
            );
        }
        let mut req = Request::from_parts(parts, Body::from(bytes));
        req.extensions_mut().insert(CsrfToken(expected));
        return next.run(req).await;
    }
    let (bound, fresh) = match bound {
        Some(b) => (b, None),
        None => match new_cookie_value() {
            Some(value) => (format!("browser:{value}"), Some(value)),
            None => return unavailable(),
        },
    };
    let mut req = req;
    req.extensions_mut().insert(CsrfToken(token(&key, &bound)));
    let mut response = next.run(req).await.into_response();
    if let Some(value) = fresh
        && let Some(cookie) = session::set(COOKIE, &value, https)
    {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

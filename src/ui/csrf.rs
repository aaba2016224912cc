//! CSRF protection for every console form: a double-submit token. The first page a browser
//! loads sets a random token in an HttpOnly, `SameSite=Strict` cookie; pages embed the same
//! token in each form; a POST whose form field differs from its cookie is refused before any
//! handler runs. A cross-site page can neither read the cookie nor make the browser send it.

use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api::problem::Problem;
use crate::error::Code;

/// Name of the cookie and of the hidden form field.
pub const FIELD: &str = "csrf";
const COOKIE: &str = "flow_csrf";
/// Console forms are a few fields; anything larger is not one of ours.
const MAX_FORM_BYTES: usize = 64 * 1024;

/// The token of this browser session, for pages to embed in their forms.
#[derive(Debug, Clone)]
pub struct CsrfToken(pub String);

fn cookie_token(req: &Request) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_string())
        .filter(|v| v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn new_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Compares without an early exit, so timing does not reveal a prefix of the token.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn refused(detail: &str) -> Response {
    super::page::error_page(Problem::new(StatusCode::FORBIDDEN, Code::Csrf, detail))
}

/// Issues the token on reads and checks it on every other method.
pub async fn protect(req: Request, next: Next) -> Response {
    let existing = cookie_token(&req);
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let Some(expected) = existing else {
            return refused("the form's session expired; reload the page and try again");
        };
        let (parts, body) = req.into_parts();
        let Ok(bytes) = to_bytes(body, MAX_FORM_BYTES).await else {
            return refused("the form is too large");
        };
        let fields: Vec<(String, String)> =
            serde_urlencoded::from_bytes(&bytes).unwrap_or_default();
        let sent = fields
            .iter()
            .find(|(k, _)| k == FIELD)
            .map(|(_, v)| v.as_str());
        if !sent.is_some_and(|t| same(t, &expected)) {
            return refused(
                "the form's security token does not match; reload the page and try again",
            );
        }
        let mut req = Request::from_parts(parts, Body::from(bytes));
        req.extensions_mut().insert(CsrfToken(expected));
        return next.run(req).await;
    }
    let (token, fresh) = match existing {
        Some(t) => (t, false),
        None => (new_token(), true),
    };
    let secure = super::session::over_https(req.uri(), req.headers());
    let mut req = req;
    req.extensions_mut().insert(CsrfToken(token.clone()));
    let mut response = next.run(req).await.into_response();
    if fresh {
        let cookie = format!("{COOKIE}={token}; {}", super::session::attributes(secure));
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}

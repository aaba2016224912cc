//! The console's session cookie: it carries only the id of a server-side session
//! ([`super::sessions`]), never a credential. Over https it is `__Host-flow_session` (`Secure`,
//! `Path=/`, no `Domain`: no other host or plain-http page can plant it), else `flow_session`;
//! always `HttpOnly` and `SameSite=Strict`. The API's guard resolves it for console routes
//! only ([`resolve`]), never for `/v1/*`, and sends a browser without a live one to sign in.

use axum::http::{Extensions, HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Redirect, Response};
use futures::future::BoxFuture;

use super::sessions;
use crate::app::AppState;
use crate::auth::{AuthError, Identity};

/// Name of the session cookie over plain http.
pub const COOKIE: &str = "flow_session";
/// Where a browser signs in.
pub const LOGIN: &str = "/ui/login";
/// What `__Host-` cookies are prefixed with over https.
const HOST_PREFIX: &str = "__Host-";

/// Whether this request reached Flow over https, as the console's front door
/// ([`super::shield`]) decided it (a forwarded scheme counts only from a trusted proxy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Https(pub bool);

/// Whether the request came over https (false when the front door did not say).
pub fn https(extensions: &Extensions) -> bool {
    extensions.get::<Https>().is_some_and(|h| h.0)
}

/// A cookie's name as sent over `https` or plain http.
pub fn name(base: &str, https: bool) -> String {
    if https {
        format!("{HOST_PREFIX}{base}")
    } else {
        base.to_string()
    }
}

/// A cookie's value by name.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value.trim())
}

/// The session id this browser presents, if it looks like one of ours.
pub fn id(headers: &HeaderMap, https: bool) -> Option<&str> {
    cookie(headers, &name(COOKIE, https)).filter(|v| sessions::well_formed(v))
}

/// The attributes every console cookie carries.
pub fn attributes(secure: bool) -> &'static str {
    if secure {
        "Path=/; HttpOnly; SameSite=Strict; Secure"
    } else {
        "Path=/; HttpOnly; SameSite=Strict"
    }
}

/// `Set-Cookie` for a console cookie (`value` is base64url or hex: nothing to escape).
pub fn set(base: &str, value: &str, secure: bool) -> Option<HeaderValue> {
    let cookie = format!("{}={value}; {}", name(base, secure), attributes(secure));
    HeaderValue::from_str(&cookie).ok()
}

/// `Set-Cookie`s forgetting the session cookie under each name the browser presented.
pub fn clear(headers: &HeaderMap) -> Vec<HeaderValue> {
    [false, true]
        .into_iter()
        .filter(|https| cookie(headers, &name(COOKIE, *https)).is_some())
        .filter_map(|https| {
            let cookie = format!("{}=; Max-Age=0; {}", name(COOKIE, https), attributes(https));
            HeaderValue::from_str(&cookie).ok()
        })
        .collect()
}

/// The identity of the browser's live session (the guard's [`ConsoleFace`] hook):
/// `Missing` without a session cookie, `Invalid` for one that is unknown, ended, expired, or
/// whose token was revoked, `KeysUnavailable` when the database cannot say.
///
/// [`ConsoleFace`]: crate::api::access::ConsoleFace
pub fn resolve<'a>(
    state: &'a AppState,
    headers: &'a HeaderMap,
    extensions: &'a Extensions,
) -> BoxFuture<'a, Result<Identity, AuthError>> {
    Box::pin(async move {
        let Some(id) = id(headers, https(extensions)) else {
            return Err(AuthError::Missing);
        };
        let limits = sessions::Limits::from_config(state.config());
        match sessions::find(state.db(), id, state.now(), limits).await {
            Ok(Some(identity)) => Ok(identity),
            Ok(None) => Err(AuthError::Invalid),
            Err(e) => {
                tracing::warn!(error = %e, "looking up a console session failed");
                Err(AuthError::KeysUnavailable)
            }
        }
    })
}

/// A console page to come back to after signing in: only a path of the console itself, so the
/// sign-in form cannot be used to send someone elsewhere.
pub fn safe_next(next: &str) -> Option<&str> {
    (next.starts_with("/ui/")
        && !next.starts_with(LOGIN)
        && !next.contains("//")
        && !next.contains('\\')
        && next.bytes().all(|b| b.is_ascii_graphic()))
    .then_some(next)
}

/// The answer to a console request without a live session: pages go to the sign-in form (and
/// come back afterwards); anything else (a form post, the live stream) is told to sign in.
pub fn to_login(method: &axum::http::Method, uri: &Uri, headers: &HeaderMap) -> Response {
    let mut response = if method == axum::http::Method::GET {
        let here = uri.path_and_query().map_or("/ui/racks", |p| p.as_str());
        match safe_next(here) {
            Some(next) => Redirect::to(&format!(
                "{LOGIN}?{}",
                serde_urlencoded::to_string([("next", next)]).unwrap_or_default()
            ))
            .into_response(),
            None => Redirect::to(LOGIN).into_response(),
        }
    } else {
        Redirect::to(LOGIN).into_response()
    };
    // A stale or wrong session cookie is dropped, so the next request starts clean.
    for cleared in clear(headers) {
        response.headers_mut().append(header::SET_COOKIE, cleared);
    }
    *response.status_mut() = StatusCode::SEE_OTHER;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_console_paths_are_followed_after_sign_in() {
        assert_eq!(
            safe_next("/ui/tasks?status=running"),
            Some("/ui/tasks?status=running")
        );
        for bad in [
            "https://evil.test/",
            "//evil.test",
            "/ui//evil",
            "/v1/racks",
            "/ui/login",
            "/ui/\\x",
            "",
        ] {
            assert_eq!(safe_next(bad), None, "{bad}");
        }
    }

    #[test]
    fn cookies_are_host_prefixed_and_secure_over_https_only() {
        let secure = set(COOKIE, "abc", true).unwrap();
        assert_eq!(
            secure.to_str().unwrap(),
            "__Host-flow_session=abc; Path=/; HttpOnly; SameSite=Strict; Secure"
        );
        let plain = set(COOKIE, "abc", false).unwrap();
        assert_eq!(
            plain.to_str().unwrap(),
            "flow_session=abc; Path=/; HttpOnly; SameSite=Strict"
        );
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, "__Host-flow_session=x".parse().unwrap());
        let cleared = clear(&headers);
        assert_eq!(cleared.len(), 1);
        assert!(
            cleared[0]
                .to_str()
                .unwrap()
                .starts_with("__Host-flow_session=; Max-Age=0")
        );
        assert!(
            id(&headers, false).is_none(),
            "the plain name is not the secure one"
        );
    }
}

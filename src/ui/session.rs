//! The console's session: the credential a person signed in with (an API token or a JWT) kept
//! in an HttpOnly, `SameSite=Strict` cookie scoped to `/ui`. The API's guard reads it for console
//! routes only, never for `/v1/*` (there a cookie would let any page the browser visits act
//! with the person's rights); the guard sends a browser without a valid one to the sign-in page.

use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Redirect, Response};

/// Name of the session cookie.
pub const COOKIE: &str = "flow_session";
/// Where a browser signs in.
pub const LOGIN: &str = "/ui/login";
/// Credentials longer than this are not ours (JWTs are a few KiB at most).
const MAX_TOKEN_BYTES: usize = 8 * 1024;

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

/// Whether a credential may be kept in a cookie: API tokens and JWTs are made of these
/// characters only, so nothing can break out of the cookie's value.
pub fn storable(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= MAX_TOKEN_BYTES
        && token.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'+' | b'/' | b'=')
        })
}

/// The credential of this browser's session, if it has one.
pub fn token(headers: &HeaderMap) -> Option<&str> {
    cookie(headers, COOKIE).filter(|t| storable(t))
}

/// Whether the browser reached Flow over https (directly, or through a proxy that says so),
/// in which case the cookies get `Secure` and are never sent back over plain http.
pub fn over_https(uri: &Uri, headers: &HeaderMap) -> bool {
    let forwarded_proto = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("https")
        });
    let forwarded = headers
        .get(header::FORWARDED)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split([';', ','])
                .any(|p| p.trim().eq_ignore_ascii_case("proto=https"))
        });
    uri.scheme_str() == Some("https") || forwarded_proto || forwarded
}

/// The attributes every console cookie carries.
pub fn attributes(secure: bool) -> &'static str {
    if secure {
        "Path=/ui; HttpOnly; SameSite=Strict; Secure"
    } else {
        "Path=/ui; HttpOnly; SameSite=Strict"
    }
}

/// `Set-Cookie` keeping `token` for this browser session (until the browser closes; the token's
/// own expiry still applies on every request).
pub fn set(token: &str, secure: bool) -> Option<HeaderValue> {
    if !storable(token) {
        return None;
    }
    HeaderValue::from_str(&format!("{COOKIE}={token}; {}", attributes(secure))).ok()
}

/// `Set-Cookie` forgetting the session (spelled out: `from_static` needs a literal, and a
/// unit test keeps it in step with [`COOKIE`] and [`attributes`]).
pub fn clear(secure: bool) -> HeaderValue {
    HeaderValue::from_static(if secure {
        "flow_session=; Max-Age=0; Path=/ui; HttpOnly; SameSite=Strict; Secure"
    } else {
        "flow_session=; Max-Age=0; Path=/ui; HttpOnly; SameSite=Strict"
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

/// The answer to a console request without a valid session: pages go to the sign-in form (and
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
    if token(headers).is_some() || cookie(headers, COOKIE).is_some() {
        response
            .headers_mut()
            .append(header::SET_COOKIE, clear(over_https(uri, headers)));
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
    fn only_token_characters_go_into_the_cookie() {
        assert!(storable("flow_AbC-12_x"));
        assert!(storable("eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"));
        for bad in ["", "a;b", "a b", "a\r\nSet-Cookie: x=1", "a,b", "\"a\""] {
            assert!(!storable(bad), "{bad:?}");
            assert!(set(bad, false).is_none());
        }
        for secure in [false, true] {
            let expected = format!("{COOKIE}=; Max-Age=0; {}", attributes(secure));
            assert_eq!(clear(secure).to_str().unwrap(), expected);
        }
        let set = set("flow_x", true).unwrap();
        let set = set.to_str().unwrap();
        for part in [
            "flow_session=flow_x",
            "HttpOnly",
            "SameSite=Strict",
            "Path=/ui",
            "Secure",
        ] {
            assert!(set.contains(part), "{set}");
        }
    }
}

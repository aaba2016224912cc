//! The console's front door, in front of every `/ui` route (and of the API's guard): decides
//! whether the browser came over https (a forwarded scheme counts only from a proxy in
//! `FLOW_TRUSTED_PROXIES`), refuses every unsafe request that does not come from Flow's own
//! origin, and puts the console's security headers on every answer.
//!
//! Same origin means `Sec-Fetch-Site: same-origin`, or an `Origin` (without one, a `Referer`)
//! equal to Flow's own scheme, host and port. Cookies ignore ports and `SameSite=Strict` calls
//! another port of the same host "same-site", so this check, not the cookie, is what stops a
//! page on another port from submitting the console's forms.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use super::session::Https;
use crate::api::client::TrustedProxies;
use crate::api::problem::Problem;
use crate::config::Config;
use crate::error::Code;

/// What console pages allow: their own scripts and styles only, never inside a frame.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; frame-ancestors 'none'; \
     img-src 'self' data:; base-uri 'none'; form-action 'self'";

/// The proxies whose `X-Forwarded-Proto` / `Forwarded: proto=` is believed.
#[derive(Debug, Clone)]
pub struct Shield {
    trusted: TrustedProxies,
}

impl Shield {
    pub fn new(config: &Config) -> Self {
        let networks = crate::config::parse_networks(&config.server.trusted_proxies);
        Self {
            trusted: TrustedProxies::new(networks.unwrap_or_default()),
        }
    }

    fn over_https(&self, request: &Request) -> bool {
        if request.uri().scheme_str() == Some("https") {
            return true;
        }
        let peer = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip());
        peer.is_some_and(|peer| self.trusted.trusts(peer)) && forwarded_https(request.headers())
    }
}

/// Whether the nearest proxy says the browser used https.
fn forwarded_https(headers: &HeaderMap) -> bool {
    let text = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    if let Some(proto) = text(header::HeaderName::from_static("x-forwarded-proto")) {
        return proto
            .rsplit(',')
            .next()
            .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"));
    }
    text(header::FORWARDED).is_some_and(|v| {
        v.rsplit(',').next().is_some_and(|element| {
            element
                .split(';')
                .any(|p| p.trim().eq_ignore_ascii_case("proto=https"))
        })
    })
}

fn console(path: &str) -> bool {
    path == "/ui" || path.starts_with("/ui/")
}

fn safe(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    )
}

/// `scheme://host[:port]` of a URL, with the scheme's default port left out.
fn origin_of(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    parsed.host()?;
    Some(parsed.origin().ascii_serialization())
}

/// Flow's own origin as this request addressed it.
fn own_origin(request: &Request, https: bool) -> Option<String> {
    let host = match request.uri().authority() {
        Some(authority) => authority.as_str().to_string(),
        None => request
            .headers()
            .get(header::HOST)?
            .to_str()
            .ok()?
            .to_string(),
    };
    let scheme = if https { "https" } else { "http" };
    origin_of(&format!("{scheme}://{host}/"))
}

/// Whether an unsafe request comes from a page of Flow's own origin.
pub fn same_origin(request: &Request, https: bool) -> bool {
    let headers = request.headers();
    let value = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    if value(header::HeaderName::from_static("sec-fetch-site")) == Some("same-origin") {
        return true;
    }
    let Some(own) = own_origin(request, https) else {
        return false;
    };
    let theirs = match value(header::ORIGIN) {
        Some(origin) => origin_of(origin),
        None => value(header::REFERER).and_then(origin_of),
    };
    theirs.is_some_and(|theirs| theirs == own)
}

fn console_headers(path: &str, response: &mut Response) {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // Pages show who is signed in and carry the session's form token: never kept in a cache.
    if !path.starts_with("/ui/assets/") {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
}

/// The middleware: marks the scheme, refuses cross-origin unsafe requests with `403`, adds the
/// console's headers.
pub async fn protect(State(shield): State<Shield>, mut request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    if !console(&path) {
        return next.run(request).await;
    }
    let https = shield.over_https(&request);
    request.extensions_mut().insert(Https(https));
    let mut response = if safe(request.method()) || same_origin(&request, https) {
        next.run(request).await
    } else {
        tracing::info!(method = %request.method(), %path, "refused a console request from another origin");
        super::page::error_page(Problem::new(
            StatusCode::FORBIDDEN,
            Code::Csrf,
            "this request did not come from a page of this console; open the console and try again",
        ))
    };
    console_headers(&path, &mut response);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(headers: &[(&str, &str)]) -> Request {
        let mut builder = Request::post("/ui/run").header("host", "127.0.0.1:8080");
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(axum::body::Body::empty()).unwrap()
    }

    #[test]
    fn only_flows_own_origin_port_included_may_post() {
        for good in [
            vec![("origin", "http://127.0.0.1:8080")],
            vec![("referer", "http://127.0.0.1:8080/ui/racks?x=1")],
            vec![("sec-fetch-site", "same-origin")],
        ] {
            assert!(same_origin(&post(&good), false), "{good:?}");
        }
        for bad in [
            vec![],
            vec![("origin", "http://127.0.0.1:9999")],
            vec![("origin", "https://127.0.0.1:8080")],
            vec![("origin", "null")],
            vec![("referer", "http://127.0.0.1:9999/attack.html")],
            vec![("sec-fetch-site", "same-site")],
            vec![
                ("sec-fetch-site", "same-site"),
                ("referer", "http://127.0.0.1:9999/"),
            ],
        ] {
            assert!(!same_origin(&post(&bad), false), "{bad:?}");
        }
        assert!(same_origin(
            &post(&[("origin", "https://127.0.0.1:8080")]),
            true
        ));
    }

    #[test]
    fn a_forwarded_scheme_is_the_nearest_proxys() {
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-proto", "http, https".parse().unwrap());
        assert!(forwarded_https(&headers));
        headers.insert("x-forwarded-proto", "https, http".parse().unwrap());
        assert!(!forwarded_https(&headers));
        let mut headers = HeaderMap::new();
        headers.insert(
            header::FORWARDED,
            "for=1.2.3.4;proto=https".parse().unwrap(),
        );
        assert!(forwarded_https(&headers));
    }
}

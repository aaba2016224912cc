//! The console's session attacked as a hostile page or a thief would: planted CSRF pairs, the
//! session id replayed as a bearer token, a session used after sign-out or after its token was
//! revoked, a planted session cookie (fixation), idle and absolute expiry on a moving clock,
//! posts from another origin, and the security headers on every answer. (The same attack from
//! a page on another port, in a real browser: `tests/ui/console_test.py`.)

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Method, Request};
use chrono::Duration;
use flow::app::App;
use flow::auth::Role;
use flow::clock::{Clock, ManualClock};
use flow::config::Config;

use super::signin::{form, get_with, secured, sign_in};
use super::{assert_html, cookie_of, form_token, post_form};
use crate::auth::{Jwks, TestKey, api_token, auth_config, bearer, claims};
use crate::support::fixtures::gb200_rack;
use crate::support::{Backend, TestApp, TestDb, TestResponse};

/// The session id in a browser's `Cookie` header.
fn session_id(cookie: &str) -> String {
    cookie
        .split("; ")
        .find_map(|pair| pair.strip_prefix("flow_session="))
        .expect("a session cookie")
        .to_string()
}

/// A rack made through the API, for forms to name.
async fn rack(app: &TestApp) -> String {
    let admin = bearer(&api_token(app, "rack-maker", Role::Admin).await);
    let r = app
        .call(
            Method::POST,
            "/v1/expected-racks",
            Some(&gb200_rack(1, 1)),
            &[("authorization", &admin)],
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    r.body["id"].as_str().unwrap().to_string()
}

/// A form post with exactly these headers (no `Sec-Fetch-Site` unless given).
async fn post_raw(app: &TestApp, path: &str, body: &str, headers: &[(&str, &str)]) -> TestResponse {
    let mut b = Request::post(path).header("content-type", "application/x-www-form-urlencoded");
    for (name, value) in headers {
        b = b.header(*name, *value);
    }
    app.send(b.body(Body::from(body.to_string())).unwrap())
        .await
}

#[tokio::test]
async fn a_planted_csrf_pair_does_not_pass_for_a_signed_in_session() {
    let app = secured().await;
    let rack = rack(&app).await;
    let operator = api_token(&app, "ops", Role::Operator).await;
    let (cookie, csrf) = sign_in(&app, &operator).await;
    let session = format!("flow_session={}", session_id(&cookie));
    // A genuine pre-session pair, fetched by the attacker from Flow's own sign-in page...
    let (their_cookie, their_token) = cookie_of(&app.get("/ui/login").await);
    // ...and one made up: any 64-hex value as both cookie and field.
    let made_up = "ab".repeat(32);
    for (planted, field) in [
        (their_cookie.clone(), their_token.clone()),
        (format!("flow_csrf={made_up}"), made_up.clone()),
    ] {
        let body = form(&[
            ("rack", &rack),
            ("operation", "power_off"),
            ("csrf", &field),
        ]);
        let jar = format!("{planted}; {session}");
        let r = post_form(&app, "/ui/run/preview", Some(&jar), &body).await;
        assert_html(&r, 403);
        assert!(r.text.contains("security token"), "{}", r.text);
    }
    // The session's own token passes.
    let body = form(&[("rack", &rack), ("operation", "power_off"), ("csrf", &csrf)]);
    let r = post_form(&app, "/ui/run/preview", Some(&cookie), &body).await;
    assert_html(&r, 200);
    assert_eq!(app.count_rows("tasks").await, 0);
}

#[tokio::test]
async fn the_session_id_is_not_a_credential_anywhere_but_the_console() {
    let app = secured().await;
    let admin = api_token(&app, "root", Role::Admin).await;
    let (cookie, _) = sign_in(&app, &admin).await;
    let id = session_id(&cookie);
    assert!(!cookie.contains(&admin), "the cookie carries the token");
    for path in ["/v1/racks", "/v1/tokens", "/v1/audit"] {
        let r = get_with(&app, path, &[("authorization", &bearer(&id))]).await;
        assert_eq!(r.status.as_u16(), 401, "{path}: {}", r.text);
    }
    // Stored only hashed: the id itself is nowhere in the database.
    let stored = app.count_rows("console_sessions").await;
    assert_eq!(stored, 1);
    let page = get_with(&app, "/ui/racks", &[("cookie", &cookie)]).await;
    assert_html(&page, 200);
    assert!(!page.text.contains(&id), "the page shows the session id");
}

#[tokio::test]
async fn revoking_the_token_ends_the_sessions_opened_with_it() {
    let app = secured().await;
    let admin = bearer(&api_token(&app, "root", Role::Admin).await);
    let operator = api_token(&app, "night", Role::Operator).await;
    let (cookie, _) = sign_in(&app, &operator).await;
    assert_html(
        &get_with(&app, "/ui/racks", &[("cookie", &cookie)]).await,
        200,
    );
    let tokens = get_with(&app, "/v1/tokens", &[("authorization", &admin)]).await;
    let id = tokens.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "night")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = app
        .call(
            Method::DELETE,
            &format!("/v1/tokens/{id}"),
            None,
            &[("authorization", &admin)],
        )
        .await;
    assert!(r.status.is_success(), "{}", r.text);
    let r = get_with(&app, "/ui/racks", &[("cookie", &cookie)]).await;
    assert_eq!(r.status.as_u16(), 303, "{}", r.text);
    assert!(r.header("location").unwrap().starts_with("/ui/login"));
    assert!(r.header("set-cookie").unwrap().contains("Max-Age=0"));
    assert_eq!(app.count_rows("console_sessions").await, 0);
}

#[tokio::test]
async fn a_planted_session_cookie_is_never_adopted_by_signing_in() {
    let app = secured().await;
    // The attacker signs in with a viewer token of their own and plants that session's id in
    // the victim's browser, which then signs in as an operator.
    let attacker = api_token(&app, "mallory", Role::Viewer).await;
    let (attacker_cookie, _) = sign_in(&app, &attacker).await;
    let planted = session_id(&attacker_cookie);
    let made_up = "A".repeat(43);
    let victim = api_token(&app, "alice", Role::Operator).await;
    for planted in [planted.clone(), made_up] {
        // The browser carries the planted cookie from the sign-in page on.
        let jar = format!("flow_session={planted}");
        let csrf = form_token(&get_with(&app, "/ui/login", &[("cookie", &jar)]).await);
        let body = form(&[("token", &victim), ("csrf", &csrf)]);
        let r = post_form(&app, "/ui/login", Some(&jar), &body).await;
        assert_eq!(r.status.as_u16(), 303, "{}", r.text);
        let set = r.header("set-cookie").unwrap();
        let fresh = set
            .split(';')
            .next()
            .unwrap()
            .strip_prefix("flow_session=")
            .unwrap();
        assert_ne!(fresh, planted, "the planted id was adopted");
        // The planted id opens nothing: not the victim's session, nor the attacker's any more.
        let r = get_with(
            &app,
            "/ui/racks",
            &[("cookie", &format!("flow_session={planted}"))],
        )
        .await;
        assert_eq!(r.status.as_u16(), 303, "{}", r.text);
        let page = get_with(
            &app,
            "/ui/racks",
            &[("cookie", &format!("flow_session={fresh}"))],
        )
        .await;
        assert_html(&page, 200);
        assert!(page.text.contains("token:alice"), "{}", page.text);
    }
}

/// A console with a clock the test moves: sessions idle out after 10 minutes and end 1 hour
/// after sign-in.
async fn on_a_clock(mut config: Config) -> (TestApp, Arc<ManualClock>) {
    config.auth.session_idle_minutes = 10;
    config.auth.session_max_hours = 1;
    let db = TestDb::new(Backend::Sqlite).await;
    let clock = Arc::new(ManualClock::starting_now());
    let state = App::builder(db.db.clone(), config)
        .clock(clock.clone())
        .build()
        .into_state();
    let router = flow::service::router(state);
    (TestApp { router, db }, clock)
}

#[tokio::test]
async fn sessions_end_when_idle_and_at_their_absolute_limit() {
    let mut config = Config::default();
    config.auth.mode = "token".into();
    let (app, clock) = on_a_clock(config).await;
    let secret = api_token(&app, "ops", Role::Operator).await;
    let live = |cookie: String| {
        let app = &app;
        async move {
            get_with(app, "/ui/racks", &[("cookie", &cookie)])
                .await
                .status
        }
    };
    // Idle: used every 9 minutes it lives on; left alone for 11 it ends.
    let (cookie, _) = sign_in(&app, &secret).await;
    for _ in 0..3 {
        clock.advance(Duration::minutes(9));
        assert_eq!(live(cookie.clone()).await, 200);
    }
    clock.advance(Duration::minutes(11));
    assert_eq!(live(cookie.clone()).await.as_u16(), 303);
    // Absolute: however busy, it ends an hour after sign-in.
    let (cookie, _) = sign_in(&app, &secret).await;
    for _ in 0..6 {
        clock.advance(Duration::minutes(9));
        assert_eq!(live(cookie.clone()).await, 200);
    }
    clock.advance(Duration::minutes(7));
    assert_eq!(live(cookie.clone()).await.as_u16(), 303);
    assert_eq!(app.count_rows("console_sessions").await, 0);
}

#[tokio::test]
async fn a_session_opened_with_a_jwt_ends_when_the_jwt_expires() {
    let key = TestKey::es256("console");
    let jwks = Jwks::serve(&[&key]).await;
    let (app, clock) = on_a_clock(auth_config(&jwks)).await;
    let mut claims = claims("alice", &["operator"]);
    claims["exp"] = (clock.now() + Duration::minutes(5)).timestamp().into();
    let (cookie, _) = sign_in(&app, &key.sign(&claims)).await;
    let page = get_with(&app, "/ui/racks", &[("cookie", &cookie)]).await;
    assert!(page.text.contains("user:alice"), "{}", page.text);
    clock.advance(Duration::minutes(4));
    assert_html(
        &get_with(&app, "/ui/racks", &[("cookie", &cookie)]).await,
        200,
    );
    // Well inside the idle limit, but past the JWT's own expiry.
    clock.advance(Duration::minutes(2));
    let r = get_with(&app, "/ui/racks", &[("cookie", &cookie)]).await;
    assert_eq!(r.status.as_u16(), 303, "{}", r.text);
}

#[tokio::test]
async fn posts_from_another_origin_are_refused_even_with_a_valid_session_and_token() {
    let app = secured().await;
    let rack = rack(&app).await;
    let operator = api_token(&app, "ops", Role::Operator).await;
    let (cookie, csrf) = sign_in(&app, &operator).await;
    let body = form(&[("rack", &rack), ("operation", "power_off"), ("csrf", &csrf)]);
    let host = ("host", "127.0.0.1:8080");
    for headers in [
        vec![host, ("origin", "http://127.0.0.1:8081")],
        vec![host, ("origin", "null")],
        vec![host, ("referer", "http://127.0.0.1:8081/attack.html")],
        vec![
            host,
            ("sec-fetch-site", "same-site"),
            ("origin", "http://localhost:8080"),
        ],
        vec![host],
    ] {
        let mut with_cookie = headers.clone();
        with_cookie.push(("cookie", &cookie));
        for path in ["/ui/run/preview", "/ui/run", "/ui/logout"] {
            let r = post_raw(&app, path, &body, &with_cookie).await;
            assert_html(&r, 403);
            assert!(r.text.contains("another") || r.text.contains("page of this console"));
        }
    }
    // Signing in is refused the same way (no login CSRF).
    let (csrf_cookie, login_csrf) = cookie_of(&app.get("/ui/login").await);
    let login = form(&[("token", &operator), ("csrf", &login_csrf)]);
    let r = post_raw(
        &app,
        "/ui/login",
        &login,
        &[
            host,
            ("origin", "http://127.0.0.1:8081"),
            ("cookie", &csrf_cookie),
        ],
    )
    .await;
    assert_html(&r, 403);
    assert!(r.header("set-cookie").is_none());
    assert_eq!(app.count_rows("tasks").await, 0);
    // The same post from Flow's own origin, port included, goes through.
    for same in [
        ("origin", "http://127.0.0.1:8080"),
        ("referer", "http://127.0.0.1:8080/ui/run"),
    ] {
        let r = post_raw(
            &app,
            "/ui/run/preview",
            &body,
            &[host, same, ("cookie", &cookie)],
        )
        .await;
        assert_html(&r, 200);
    }
}

#[tokio::test]
async fn every_answer_carries_the_security_headers() {
    let app = secured().await;
    let admin = api_token(&app, "root", Role::Admin).await;
    for path in [
        "/healthz",
        "/v1/racks",
        "/openapi.json",
        "/ui/login",
        "/ui/racks",
    ] {
        let r = app.get(path).await;
        assert_eq!(
            r.header("x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
        assert_eq!(r.header("referrer-policy"), Some("no-referrer"), "{path}");
    }
    let (cookie, _) = sign_in(&app, &admin).await;
    for (path, headers) in [
        ("/ui/login", vec![]),
        ("/ui/racks", vec![("cookie", cookie.as_str())]),
        ("/ui/racks", vec![]),
    ] {
        let r = get_with(&app, path, &headers).await;
        let csp = r.header("content-security-policy").unwrap_or_default();
        assert!(
            csp.starts_with("default-src 'self'; frame-ancestors 'none'"),
            "{path}: {csp}"
        );
        assert_eq!(r.header("x-frame-options"), Some("DENY"), "{path}");
        assert_eq!(r.header("cache-control"), Some("no-store"), "{path}");
    }
    // The one answer that carries a secret is never cached either.
    let r = app
        .call(
            Method::POST,
            "/v1/tokens",
            Some(&serde_json::json!({"name": "ci", "role": "viewer"})),
            &[("authorization", &bearer(&admin))],
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert!(r.body["secret"].is_string());
    assert_eq!(r.header("cache-control"), Some("no-store"));
}

#[tokio::test]
async fn over_https_from_a_trusted_proxy_the_cookie_is_host_prefixed() {
    let mut config = Config::default();
    config.auth.mode = "token".into();
    config.server.trusted_proxies = vec!["10.0.0.0/8".into()];
    let app = TestApp::with_config(Backend::Sqlite, config).await;
    let secret = api_token(&app, "ops", Role::Operator).await;
    let from = |peer: &str| -> SocketAddr { format!("{peer}:40000").parse().unwrap() };
    let sign_in_via = |peer: SocketAddr| {
        let app = &app;
        let secret = secret.clone();
        async move {
            let mut get = Request::get("/ui/login")
                .header("x-forwarded-proto", "https")
                .body(Body::empty())
                .unwrap();
            get.extensions_mut().insert(ConnectInfo(peer));
            let page = app.send(get).await;
            let csrf_cookie = page
                .header("set-cookie")
                .unwrap()
                .split(';')
                .next()
                .unwrap()
                .to_string();
            let mut post = Request::post("/ui/login")
                .header("content-type", "application/x-www-form-urlencoded")
                .header("x-forwarded-proto", "https")
                .header("sec-fetch-site", "same-origin")
                .header("cookie", &csrf_cookie)
                .body(Body::from(form(&[
                    ("token", &secret),
                    ("csrf", &form_token(&page)),
                ])))
                .unwrap();
            post.extensions_mut().insert(ConnectInfo(peer));
            (csrf_cookie, app.send(post).await)
        }
    };
    let (csrf_cookie, r) = sign_in_via(from("10.1.2.3")).await;
    assert!(
        csrf_cookie.starts_with("__Host-flow_csrf="),
        "{csrf_cookie}"
    );
    assert_eq!(r.status.as_u16(), 303, "{}", r.text);
    let set = r.header("set-cookie").unwrap();
    assert!(set.starts_with("__Host-flow_session="), "{set}");
    assert!(
        set.ends_with("; Path=/; HttpOnly; SameSite=Strict; Secure"),
        "{set}"
    );
    assert!(!set.contains("Domain"), "{set}");
    // From anyone else the forwarded scheme is not believed.
    let (csrf_cookie, r) = sign_in_via(from("192.0.2.7")).await;
    assert!(csrf_cookie.starts_with("flow_csrf="), "{csrf_cookie}");
    let set = r.header("set-cookie").unwrap();
    assert!(set.starts_with("flow_session="), "{set}");
    assert!(!set.contains("Secure"), "{set}");
}

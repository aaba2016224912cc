//! Signing in to the console with `FLOW_AUTH` on: the form, the session cookie, what each role
//! is offered and refused, and that the cookie never authenticates the API.

use axum::http::Method;
use flow::auth::Role;
use flow::config::Config;
use serde_json::json;

use super::{assert_html, cookie_of, post_form};
use crate::auth::{api_token, bearer};
use crate::support::fixtures::gb200_rack;
use crate::support::{Backend, TestApp, TestResponse};

/// A console with API tokens required (SQLite: what is tested is the HTTP face).
pub(super) async fn secured() -> TestApp {
    let mut config = Config::default();
    config.auth.mode = "token".into();
    TestApp::with_config(Backend::Sqlite, config).await
}

pub(super) async fn get_with(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> TestResponse {
    app.call(Method::GET, path, None, headers).await
}

pub(super) fn form(fields: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(fields).unwrap()
}

/// Signs in with `secret`, coming back to `next`; returns the `Cookie` header of the browser
/// afterwards (the pre-session CSRF cookie and the session) and the session's CSRF token.
pub(super) async fn sign_in(app: &TestApp, secret: &str) -> (String, String) {
    let (csrf_cookie, csrf) = cookie_of(&app.get("/ui/login").await);
    let body = form(&[("token", secret), ("csrf", &csrf), ("next", "/ui/tasks")]);
    let r = post_form(app, "/ui/login", Some(&csrf_cookie), &body).await;
    assert_eq!(r.status.as_u16(), 303, "{}", r.text);
    assert_eq!(r.header("location"), Some("/ui/tasks"));
    let set = r.header("set-cookie").expect("a session cookie");
    for attribute in ["flow_session=", "HttpOnly", "SameSite=Strict", "Path=/;"] {
        assert!(set.contains(attribute), "{set}");
    }
    assert!(
        !set.contains("Secure"),
        "plain http keeps the cookie: {set}"
    );
    let session = set.split(';').next().unwrap();
    let cookie = format!("{csrf_cookie}; {session}");
    // Forms from now on carry the session's token, not the sign-in form's.
    let page = get_with(app, "/ui/racks", &[("cookie", &cookie)]).await;
    assert_html(&page, 200);
    let token = super::form_token(&page);
    assert_ne!(token, csrf, "the token did not change with the session");
    (cookie, token)
}

#[tokio::test]
async fn without_a_session_pages_go_to_sign_in_and_a_bad_token_gets_the_form_back() {
    let app = secured().await;
    let r = app.get("/ui/racks?name=x").await;
    assert_eq!(r.status.as_u16(), 303, "{}", r.text);
    assert_eq!(
        r.header("location"),
        Some("/ui/login?next=%2Fui%2Fracks%3Fname%3Dx")
    );
    let r = post_form(&app, "/ui/run", None, "").await;
    assert_eq!(r.status.as_u16(), 303, "{}", r.text);
    assert_eq!(r.header("location"), Some("/ui/login"));
    // What the sign-in page needs is served without a session.
    assert_eq!(app.get("/ui/assets/console.css").await.status, 200);
    let page = app.get("/ui/login?next=/ui/drift").await;
    assert_html(&page, 200);
    assert!(page.text.contains("type=\"password\""), "{}", page.text);
    assert!(page.text.contains("<label for=\"token\""), "{}", page.text);
    assert!(page.text.contains("value=\"/ui/drift\""), "{}", page.text);
    let (cookie, csrf) = cookie_of(&page);

    let wrong = "flow_ThisIsNotAToken0123456789";
    let r = post_form(
        &app,
        "/ui/login",
        Some(&cookie),
        &form(&[("token", wrong), ("csrf", &csrf)]),
    )
    .await;
    assert_html(&r, 401);
    assert!(r.text.contains("role=\"alert\""), "{}", r.text);
    assert!(r.text.contains("<strong>token</strong>"), "{}", r.text);
    assert!(r.text.contains("invalid token"), "{}", r.text);
    assert!(!r.text.contains(wrong), "the credential is shown back");
    assert!(r.header("set-cookie").is_none());
    let r = post_form(&app, "/ui/login", Some(&cookie), &form(&[("csrf", &csrf)])).await;
    assert_html(&r, 400);
    // The sign-in form is a form like the others: no CSRF token, no sign-in.
    let secret = api_token(&app, "ops", Role::Operator).await;
    let r = post_form(
        &app,
        "/ui/login",
        Some(&cookie),
        &form(&[("token", &secret)]),
    )
    .await;
    assert_html(&r, 403);
    assert!(r.header("set-cookie").is_none());
    // Only console pages are followed after signing in.
    let body = form(&[
        ("token", &secret),
        ("csrf", &csrf),
        ("next", "https://evil.test/"),
    ]);
    let r = post_form(&app, "/ui/login", Some(&cookie), &body).await;
    assert_eq!(r.status.as_u16(), 303, "{}", r.text);
    assert_eq!(r.header("location"), Some("/ui/racks"));
}

#[tokio::test]
async fn a_good_token_signs_in_and_signing_out_forgets_it() {
    let app = secured().await;
    let secret = api_token(&app, "night-shift", Role::Operator).await;
    let (cookie, csrf) = sign_in(&app, &secret).await;
    let page = get_with(&app, "/ui/racks", &[("cookie", &cookie)]).await;
    assert_html(&page, 200);
    for expected in [
        "token:night-shift",
        "(operator)",
        "Sign out",
        "action=\"/ui/logout\"",
    ] {
        assert!(
            page.text.contains(expected),
            "lacks {expected}: {}",
            page.text
        );
    }
    assert!(!page.text.contains(&secret), "the credential is shown");

    let r = post_form(&app, "/ui/logout", Some(&cookie), &form(&[("csrf", &csrf)])).await;
    assert_eq!(r.status.as_u16(), 303, "{}", r.text);
    assert_eq!(r.header("location"), Some("/ui/login"));
    let cleared = r.header("set-cookie").unwrap();
    assert!(cleared.starts_with("flow_session=;"), "{cleared}");
    // The session ended on the server: the old cookie opens nothing any more.
    let r = get_with(&app, "/ui/racks", &[("cookie", &cookie)]).await;
    assert_eq!(r.status.as_u16(), 303, "{}", r.text);
    assert_eq!(app.count_rows("console_sessions").await, 0);
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
    // A revoked or wrong session is sent to sign in again, its cookie dropped.
    let stale = format!(
        "{}; flow_session=flow_revoked0123456789",
        cookie_of(&app.get("/ui/login").await).0
    );
    let r = get_with(&app, "/ui/tasks", &[("cookie", &stale)]).await;
    assert_eq!(r.status.as_u16(), 303, "{}", r.text);
    assert!(r.header("set-cookie").unwrap().contains("Max-Age=0"));
}

#[tokio::test]
async fn the_session_cookie_does_not_authenticate_the_api() {
    let app = secured().await;
    let secret = api_token(&app, "admin", Role::Admin).await;
    let (cookie, _) = sign_in(&app, &secret).await;
    for path in ["/v1/racks", "/v1/tasks", "/v1/audit"] {
        let r = get_with(&app, path, &[("cookie", &cookie)]).await;
        assert_eq!(r.status.as_u16(), 401, "{path}: {}", r.text);
        assert!(r.header("www-authenticate").is_some());
    }
    let r = app
        .call(
            Method::POST,
            "/v1/expected-racks",
            Some(&gb200_rack(1, 1)),
            &[("cookie", &cookie)],
        )
        .await;
    assert_eq!(r.status.as_u16(), 401, "{}", r.text);
    assert_eq!(app.count_rows("racks").await, 0);
    let r = get_with(&app, "/v1/racks", &[("authorization", &bearer(&secret))]).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Nor does a bearer header open the console: it takes the session only.
    let r = get_with(&app, "/ui/racks", &[("authorization", &bearer(&secret))]).await;
    assert_eq!(r.status.as_u16(), 303, "{}", r.text);
}

#[tokio::test]
async fn a_viewer_is_offered_no_action_and_a_forged_form_is_refused() {
    let app = secured().await;
    let admin = bearer(&api_token(&app, "admin", Role::Admin).await);
    let auth = [("authorization", admin.as_str())];
    let r = app
        .call(
            Method::POST,
            "/v1/expected-racks",
            Some(&gb200_rack(1, 1)),
            &auth,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let rack = r.body["id"].as_str().unwrap().to_string();
    let schedule = json!({
        "name": "nightly",
        "spec": {"type": "interval", "spec": "1h"},
        "operation": {"kind": "power_on"},
        "target_spec": {"racks": [{"name": "rack-0001"}]},
    });
    let r = app
        .call(Method::POST, "/v1/task-schedules", Some(&schedule), &auth)
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let schedule = r.body["id"].as_str().unwrap().to_string();
    let rollout =
        super::rollouts::stored(&app, "fw wave", flow::rollouts::RolloutStatus::Running).await;

    let viewer = api_token(&app, "watcher", Role::Viewer).await;
    let (cookie, csrf) = sign_in(&app, &viewer).await;
    let headers = [("cookie", cookie.as_str())];
    let offered = [
        (format!("/ui/racks/{rack}"), "/ui/run?rack="),
        ("/ui/racks".to_string(), "Run an operation"),
        ("/ui/schedules".to_string(), "/pause"),
        (format!("/ui/rollouts/{rollout}"), "/approve"),
    ];
    for (path, action) in &offered {
        let page = get_with(&app, path, &headers).await;
        assert_html(&page, 200);
        assert!(page.text.contains("(viewer)"), "{path}: {}", page.text);
        assert!(
            !page.text.contains(action),
            "{path} offers {action} to a viewer"
        );
    }
    assert_html(
        &get_with(&app, &format!("/ui/run?rack={rack}"), &headers).await,
        403,
    );
    let forged = form(&[("csrf", &csrf), ("rack", &rack), ("operation", "power_off")]);
    for path in [
        "/ui/run/preview".to_string(),
        "/ui/run".to_string(),
        format!("/ui/schedules/{schedule}/pause"),
        format!("/ui/tasks/{}/cancel", uuid::Uuid::new_v4()),
        format!("/ui/rollouts/{rollout}/abort"),
    ] {
        let r = post_form(&app, &path, Some(&cookie), &forged).await;
        assert_html(&r, 403);
        assert!(r.text.contains("role=\"alert\""), "{path}: {}", r.text);
        assert!(r.text.contains("operator"), "{path}: {}", r.text);
    }
    assert_eq!(app.count_rows("tasks").await, 0);
    let r = get_with(&app, &format!("/v1/task-schedules/{schedule}"), &auth).await;
    assert_eq!(r.body["enabled"], true);

    // An operator is offered the same actions.
    let operator = api_token(&app, "ops", Role::Operator).await;
    let (cookie, _) = sign_in(&app, &operator).await;
    for (path, action) in &offered {
        let page = get_with(&app, path, &[("cookie", &cookie)]).await;
        assert_html(&page, 200);
        assert!(
            page.text.contains(action),
            "{path} lacks {action}: {}",
            page.text
        );
    }
}

#[tokio::test]
async fn an_operator_is_not_offered_the_readiness_override_and_a_forged_one_is_refused() {
    let app = secured().await;
    let admin = bearer(&api_token(&app, "admin", Role::Admin).await);
    let auth = [("authorization", admin.as_str())];
    let r = app
        .call(
            Method::POST,
            "/v1/expected-racks",
            Some(&gb200_rack(1, 1)),
            &auth,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let rack = r.body["id"].as_str().unwrap().to_string();
    let operator = api_token(&app, "op", Role::Operator).await;
    let (cookie, csrf) = sign_in(&app, &operator).await;
    let headers = [("cookie", cookie.as_str())];
    let page = get_with(&app, &format!("/ui/run?rack={rack}"), &headers).await;
    assert_html(&page, 200);
    assert!(
        !page.text.contains("override_readiness_check"),
        "{}",
        page.text
    );
    let forged = form(&[
        ("rack", &rack),
        ("operation", "power_on"),
        ("override_readiness_check", "true"),
        ("csrf", &csrf),
    ]);
    for path in ["/ui/run/preview", "/ui/run"] {
        let r = post_form(&app, path, Some(&cookie), &forged).await;
        assert_html(&r, 403);
        assert!(
            r.text.contains("override_readiness_check"),
            "{path}: {}",
            r.text
        );
    }
}

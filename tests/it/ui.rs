//! The operator console's HTML routes: status codes, content types, readable errors, CSRF,
//! keyset paging and the escaping of user data; sign-in and roles in [`signin`], rollouts in
//! [`rollouts`]. (Its behaviour in a browser is checked by
//! `tests/ui/console_test.py`, run by `scripts/test`.)

mod attacks;
mod rollouts;
mod signin;

use axum::body::Body;
use axum::http::{Method, Request};

use crate::on_both_backends;
use crate::support::fixtures::gb200_rack;
use crate::support::{TestApp, TestResponse};

on_both_backends!(
    every_page_answers_html_and_the_assets_are_served_from_the_binary,
    errors_are_readable_pages_with_the_problem_status,
    user_data_renders_inert,
    racks_are_filtered_and_paged_by_cursor,
    forms_need_the_session_csrf_token,
    a_preview_shows_the_plan_without_creating_a_task,
    schedules_are_paused_and_resumed_from_their_page,
    the_rack_and_component_pages_show_the_holds_that_count,
    holds_are_listed_and_released_with_the_csrf_token,
    an_admin_overrides_the_readiness_check_only_through_the_confirmation,
    a_domain_page_runs_an_operation_on_every_live_rack_of_the_domain,
);

fn assert_html(r: &TestResponse, status: u16) {
    assert_eq!(r.status.as_u16(), status, "{}", r.text);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(r.text.starts_with("<!DOCTYPE html>"), "{}", r.text);
}

async fn every_page_answers_html_and_the_assets_are_served_from_the_binary(app: TestApp) {
    let rack = app.create_rack(&gb200_rack(1, 2)).await;
    let id = rack["id"].as_str().unwrap();
    let r = app.get("/ui").await;
    assert!(r.status.is_redirection(), "{}", r.status);
    assert_eq!(r.header("location"), Some("/ui/racks"));
    for path in [
        "/ui/racks".to_string(),
        format!("/ui/racks/{id}"),
        format!("/ui/run?rack={id}"),
        "/ui/tasks".into(),
        "/ui/tasks?status=running&active_only=true".into(),
        "/ui/drift".into(),
        "/ui/drift?kind=mismatch&type=compute".into(),
        "/ui/schedules".into(),
        "/ui/rules".into(),
    ] {
        let r = app.get(&path).await;
        assert_html(&r, 200);
        assert!(!r.text.contains("\"type\":"), "{path} shows raw JSON");
    }
    let page = app.get(&format!("/ui/racks/{id}")).await;
    for expected in [
        "compute",
        "nvswitch",
        "powershelf",
        "SN-0001-compute-00",
        "02:00:01:00:01:00",
    ] {
        assert!(page.text.contains(expected), "rack page lacks {expected}");
    }
    for (asset, kind) in [
        ("htmx-2.0.11.js", "text/javascript; charset=utf-8"),
        ("htmx-ext-sse-2.2.4.js", "text/javascript; charset=utf-8"),
        ("console.css", "text/css; charset=utf-8"),
    ] {
        let r = app.get(&format!("/ui/assets/{asset}")).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-type"), Some(kind));
        assert!(r.text.len() > 1000, "{asset} is empty");
    }
    assert_eq!(app.get("/ui/assets/other.js").await.status, 404);
    // The console is not part of the REST API's document.
    let doc = app.get("/openapi.json").await;
    assert!(!doc.text.contains("/ui/"));
}

async fn errors_are_readable_pages_with_the_problem_status(app: TestApp) {
    let r = app.get("/ui/racks/not-a-uuid").await;
    assert_html(&r, 400);
    assert!(r.text.contains("role=\"alert\""), "{}", r.text);
    assert!(r.text.contains("<strong>id</strong>"), "{}", r.text);
    let r = app
        .get(&format!("/ui/racks/{}", uuid::Uuid::new_v4()))
        .await;
    assert_html(&r, 404);
    let r = app
        .get(&format!("/ui/tasks/{}", uuid::Uuid::new_v4()))
        .await;
    assert_html(&r, 404);
    let r = app.get("/ui/racks?limit=0").await;
    assert_html(&r, 400);
    assert!(r.text.contains("limit"), "{}", r.text);
    let r = app.get("/ui/racks?colour=red").await;
    assert_html(&r, 400);
}

async fn user_data_renders_inert(app: TestApp) {
    let mut body = gb200_rack(2, 1);
    body["name"] = "<script>alert(1)</script>".into();
    body["model"] = "\"><img src=x onerror=alert(2)>".into();
    body["description"] = "<b>bold</b>".into();
    let rack = app.create_rack(&body).await;
    let id = rack["id"].as_str().unwrap();
    for path in [
        "/ui/racks".to_string(),
        format!("/ui/racks/{id}"),
        format!("/ui/run?rack={id}"),
    ] {
        let r = app.get(&path).await;
        assert_html(&r, 200);
        assert!(!r.text.contains("<script>alert(1)"), "{path}: {}", r.text);
        assert!(!r.text.contains("<img src=x"), "{path}: {}", r.text);
        assert!(
            r.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{path}: {}",
            r.text
        );
    }
}

async fn racks_are_filtered_and_paged_by_cursor(app: TestApp) {
    for n in 1..=3 {
        app.create_rack(&gb200_rack(n, 1)).await;
    }
    let first = app.get("/ui/racks?limit=2").await;
    assert_html(&first, 200);
    assert!(
        first.text.contains("2 shown, more on the next page"),
        "{}",
        first.text
    );
    let next = first
        .text
        .split("href=\"")
        .filter_map(|s| s.split('"').next())
        .find(|href| href.contains("cursor="))
        .expect("a next-page link")
        .replace("&amp;", "&");
    let second = app.get(&next).await;
    assert_html(&second, 200);
    assert!(
        second.text.contains("<span>1 shown</span>"),
        "{}",
        second.text
    );
    assert!(second.text.contains("rack-0003"), "{}", second.text);
    // Empty filter fields mean no filter; a glob narrows.
    let r = app.get("/ui/racks?name=*0002*&model=&room=").await;
    assert_html(&r, 200);
    assert!(r.text.contains("<span>1 shown</span>"), "{}", r.text);
}

/// The pre-session CSRF cookie a page set (`name=value`) and the token its forms carry.
fn cookie_of(r: &TestResponse) -> (String, String) {
    let set = r.header("set-cookie").expect("a CSRF cookie");
    assert!(set.contains("HttpOnly"), "{set}");
    assert!(set.contains("SameSite=Strict"), "{set}");
    let pair = set.split(';').next().unwrap().to_string();
    (pair, form_token(r))
}

/// The CSRF token of the forms on a page.
fn form_token(r: &TestResponse) -> String {
    r.text
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a form with a CSRF token")
        .to_string()
}

/// A form post as the console's own pages send it (a browser says `Sec-Fetch-Site:
/// same-origin`; the attack tests send what other pages would).
async fn post_form(app: &TestApp, path: &str, cookie: Option<&str>, form: &str) -> TestResponse {
    let mut b = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("sec-fetch-site", "same-origin");
    if let Some(c) = cookie {
        b = b.header("cookie", c);
    }
    app.send(b.body(Body::from(form.to_string())).unwrap())
        .await
}

async fn forms_need_the_session_csrf_token(app: TestApp) {
    let rack = app.create_rack(&gb200_rack(1, 1)).await;
    let id = rack["id"].as_str().unwrap();
    let page = app.get(&format!("/ui/run?rack={id}")).await;
    let (cookie, token) = cookie_of(&page);
    assert!(
        page.text
            .contains(&format!("name=\"csrf\" value=\"{token}\""))
    );
    let form = format!("rack={id}&operation=power_on&csrf={token}");
    assert_html(&post_form(&app, "/ui/run/preview", None, &form).await, 403);
    // The token is not the cookie: sending the cookie's own value back fails.
    let cookie_value = cookie.split_once('=').unwrap().1;
    assert_ne!(cookie_value, token);
    let forged = format!("rack={id}&operation=power_on&csrf={cookie_value}");
    assert_html(
        &post_form(&app, "/ui/run/preview", Some(&cookie), &forged).await,
        403,
    );
    let no_field = format!("rack={id}&operation=power_on");
    assert_html(
        &post_form(&app, "/ui/run/preview", Some(&cookie), &no_field).await,
        403,
    );
    assert_html(
        &post_form(&app, "/ui/run/preview", Some(&cookie), &form).await,
        200,
    );
    // A browser that has the cookie is not given a new one.
    let again = app
        .send(
            Request::get("/ui/racks")
                .header("cookie", &cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert!(again.header("set-cookie").is_none());
}

async fn a_preview_shows_the_plan_without_creating_a_task(app: TestApp) {
    let rack = app.create_rack(&gb200_rack(1, 2)).await;
    let id = rack["id"].as_str().unwrap();
    let (cookie, token) = cookie_of(&app.get(&format!("/ui/run?rack={id}")).await);
    let form =
        format!("rack={id}&operation=power_on&description=&conflict_strategy=reject&csrf={token}");
    let audited = app.count_rows("audit_log").await;
    let r = post_form(&app, "/ui/run/preview", Some(&cookie), &form).await;
    assert_html(&r, 200);
    // A preview changes nothing, so, like an API dry run, it is not in the audit log.
    assert_eq!(app.count_rows("audit_log").await, audited);
    let body = serde_json::json!({"target_spec": {"racks": [{"id": id}]}});
    let dry = app
        .post("/v1/operations/power-on?dry_run=true", &body)
        .await;
    assert_eq!(dry.status, 200, "{}", dry.text);
    assert_eq!(app.count_rows("audit_log").await, audited);
    for expected in [
        "rack-0001",
        "Stage",
        "powershelf",
        "Confirm and run",
        "name=\"key\"",
    ] {
        assert!(
            r.text.contains(expected),
            "plan lacks {expected}: {}",
            r.text
        );
    }
    assert_eq!(app.count_rows("tasks").await, 0);
    let bad = format!("rack={id}&operation=launch&csrf={token}");
    let r = post_form(&app, "/ui/run/preview", Some(&cookie), &bad).await;
    assert_html(&r, 400);
    assert!(r.text.contains("<strong>operation</strong>"), "{}", r.text);
    let none = format!("operation=power_on&csrf={token}");
    assert_html(
        &post_form(&app, "/ui/run/preview", Some(&cookie), &none).await,
        400,
    );
}

async fn schedules_are_paused_and_resumed_from_their_page(app: TestApp) {
    app.create_rack(&gb200_rack(1, 1)).await;
    let body = serde_json::json!({
        "name": "nightly <on>",
        "spec": {"type": "interval", "spec": "1h"},
        "operation": {"kind": "power_on"},
        "target_spec": {"racks": [{"name": "rack-0001"}]},
    });
    let r = app.post("/v1/task-schedules", &body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_string();
    let page = app.get("/ui/schedules").await;
    assert_html(&page, 200);
    assert!(page.text.contains("nightly &lt;on&gt;"), "{}", page.text);
    assert!(page.text.contains(&format!("/ui/schedules/{id}/pause")));
    let (cookie, token) = cookie_of(&page);
    let form = format!("csrf={token}");
    let r = post_form(
        &app,
        &format!("/ui/schedules/{id}/pause"),
        Some(&cookie),
        &form,
    )
    .await;
    assert!(r.status.is_redirection(), "{}", r.text);
    assert_eq!(
        app.get(&format!("/v1/task-schedules/{id}")).await.body["enabled"],
        false
    );
    let page = app.get("/ui/schedules").await;
    assert!(
        page.text.contains(&format!("/ui/schedules/{id}/resume")),
        "{}",
        page.text
    );
    let r = post_form(
        &app,
        &format!("/ui/schedules/{id}/resume"),
        Some(&cookie),
        &form,
    )
    .await;
    assert!(r.status.is_redirection(), "{}", r.text);
    assert_eq!(
        app.get(&format!("/v1/task-schedules/{id}")).await.body["enabled"],
        true
    );
    let r = post_form(
        &app,
        &format!("/ui/schedules/{id}/explode"),
        Some(&cookie),
        &form,
    )
    .await;
    assert_html(&r, 404);
    // Without the token nothing changes.
    let r = post_form(
        &app,
        &format!("/ui/schedules/{id}/pause"),
        Some(&cookie),
        "",
    )
    .await;
    assert_html(&r, 403);
    assert_eq!(
        app.get(&format!("/v1/task-schedules/{id}")).await.body["enabled"],
        true
    );
}

async fn the_rack_and_component_pages_show_the_holds_that_count(app: TestApp) {
    let rack = app.create_rack(&gb200_rack(1, 1)).await;
    let id = rack["id"].as_str().unwrap();
    let tray = rack["components"][0]["id"].as_str().unwrap();
    let other = rack["components"][1]["id"].as_str().unwrap();
    let page = app.get(&format!("/ui/racks/{id}")).await;
    assert_html(&page, 200);
    assert!(!page.text.contains("data-hold="), "{}", page.text);
    let hold = app
        .post(
            "/v1/holds",
            &serde_json::json!({"target": {"component": {"id": tray}}, "owner": "slurm", "reason": "job <4711>"}),
        )
        .await;
    assert_eq!(hold.status, 201, "{}", hold.text);
    let hold_id = hold.body["id"].as_str().unwrap();
    let marker = format!("data-hold=\"{hold_id}\"");
    // The rack shows its component's hold; the held component too; a sibling does not.
    let page = app.get(&format!("/ui/racks/{id}")).await;
    assert!(page.text.contains(&marker), "{}", page.text);
    assert!(
        page.text.contains("slurm: job &lt;4711&gt;"),
        "{}",
        page.text
    );
    let held = app.get(&format!("/ui/components/{tray}")).await;
    assert_html(&held, 200);
    assert!(held.text.contains(&marker), "{}", held.text);
    let sibling = app.get(&format!("/ui/components/{other}")).await;
    assert!(!sibling.text.contains("data-hold="), "{}", sibling.text);
    // Once deleted, the badge is gone.
    assert_eq!(
        app.delete(&format!("/v1/holds/{hold_id}")).await.status,
        204
    );
    let page = app.get(&format!("/ui/racks/{id}")).await;
    assert!(!page.text.contains("data-hold="), "{}", page.text);
}

async fn holds_are_listed_and_released_with_the_csrf_token(app: TestApp) {
    app.create_rack(&gb200_rack(1, 1)).await;
    let page = app.get("/ui/holds").await;
    assert_html(&page, 200);
    assert!(page.text.contains("No holds."), "{}", page.text);
    let hold = app
        .post(
            "/v1/holds",
            &serde_json::json!({"target": {"rack": {"name": "rack-0001"}}, "owner": "slurm <s>", "reason": "job 1"}),
        )
        .await;
    assert_eq!(hold.status, 201, "{}", hold.text);
    let id = hold.body["id"].as_str().unwrap();
    let page = app.get("/ui/holds?owner=slurm%20%3Cs%3E").await;
    assert_html(&page, 200);
    assert!(page.text.contains("slurm &lt;s&gt;"), "{}", page.text);
    let action = format!("/ui/holds/{id}/release");
    assert!(page.text.contains(&action), "{}", page.text);
    let other = app.get("/ui/holds?owner=k8s").await;
    assert!(!other.text.contains(&action), "{}", other.text);
    let (cookie, token) = cookie_of(&page);
    // Without the form token nothing is released.
    assert_html(&post_form(&app, &action, Some(&cookie), "").await, 403);
    assert_eq!(app.get(&format!("/v1/holds/{id}")).await.status, 200);
    let r = post_form(&app, &action, Some(&cookie), &format!("csrf={token}")).await;
    assert!(r.status.is_redirection(), "{}", r.text);
    assert_eq!(r.header("location"), Some("/ui/holds"));
    assert_eq!(app.get(&format!("/v1/holds/{id}")).await.status, 404);
    // Releasing it again is the API's 404, as a page.
    assert_html(
        &post_form(&app, &action, Some(&cookie), &format!("csrf={token}")).await,
        404,
    );
}

async fn an_admin_overrides_the_readiness_check_only_through_the_confirmation(app: TestApp) {
    let rack = app.create_rack(&gb200_rack(1, 1)).await;
    let id = rack["id"].as_str().unwrap();
    let hold =
        serde_json::json!({"target": {"rack": {"id": id}}, "owner": "slurm", "reason": "job 1"});
    assert_eq!(app.post("/v1/holds", &hold).await.status, 201);
    // Without auth the viewer is an admin: the form offers the override.
    let page = app.get(&format!("/ui/run?rack={id}")).await;
    assert!(
        page.text.contains("name=\"override_readiness_check\""),
        "{}",
        page.text
    );
    let (cookie, token) = cookie_of(&page);
    let base =
        format!("rack={id}&operation=power_on&description=&conflict_strategy=reject&csrf={token}");
    // Not overridden: the preview says nothing of it and the confirmation is the hold's 409.
    let plain = post_form(&app, "/ui/run/preview", Some(&cookie), &base).await;
    assert_html(&plain, 200);
    assert!(!plain.text.contains("readiness_override"), "{}", plain.text);
    assert_html(&post_form(&app, "/ui/run", Some(&cookie), &base).await, 409);
    // Overridden: the preview warns and carries it to the confirmation, which passes the check.
    let over = format!("{base}&override_readiness_check=true");
    let preview = post_form(&app, "/ui/run/preview", Some(&cookie), &over).await;
    assert_html(&preview, 200);
    assert!(
        preview.text.contains("data-code=\"readiness_override\""),
        "{}",
        preview.text
    );
    assert!(
        preview
            .text
            .contains("name=\"override_readiness_check\" value=\"true\""),
        "{}",
        preview.text
    );
    let confirmed = post_form(&app, "/ui/run", Some(&cookie), &over).await;
    assert!(
        ![400, 403, 409].contains(&confirmed.status.as_u16()),
        "{} {}",
        confirmed.status,
        confirmed.text
    );
}

async fn a_domain_page_runs_an_operation_on_every_live_rack_of_the_domain(app: TestApp) {
    crate::nvl_targets::domains(&app, 3).await;
    let domain = app.get("/v1/nvl-domains/nvl-a").await;
    let id = domain.body["id"].as_str().unwrap().to_string();
    let page = app.get("/ui/nvl-domains/nvl-a").await;
    assert_html(&page, 200);
    let run = format!("/ui/run?nvl_domain={id}");
    assert!(page.text.contains(&run), "{}", page.text);
    let form_page = app.get(&run).await;
    assert_html(&form_page, 200);
    assert!(
        form_page
            .text
            .contains(&format!("name=\"nvl_domain\" value=\"{id}\"")),
        "{}",
        form_page.text
    );
    let (cookie, token) = cookie_of(&form_page);
    let form = format!("nvl_domain={id}&operation=power_on&csrf={token}");
    let preview = post_form(&app, "/ui/run/preview", Some(&cookie), &form).await;
    assert_html(&preview, 200);
    for shown in ["rack-0001", "rack-0002", "Confirm and run"] {
        assert!(
            preview.text.contains(shown),
            "lacks {shown}: {}",
            preview.text
        );
    }
    assert!(!preview.text.contains("rack-0003"), "{}", preview.text);
    // Racks and domains together are refused, naming the field.
    let rack = app.get("/v1/racks?name=rack-0003").await.body["items"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let both = format!("{form}&rack={rack}");
    let refused = post_form(&app, "/ui/run/preview", Some(&cookie), &both).await;
    assert_html(&refused, 400);
    assert!(
        refused.text.contains("<strong>rack</strong>"),
        "{}",
        refused.text
    );
    assert_eq!(app.count_rows("tasks").await, 0);
}

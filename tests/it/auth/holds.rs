//! Issue 27 roles: an `operator` creates holds and deletes only its own, an `admin` any; only
//! an admin may set `override_readiness_check`.

use axum::http::Method;
use serde_json::json;

use super::{api_token, call_as};
use crate::on_both_secured;
use crate::support::fixtures::gb200_rack;
use crate::support::{Backend, TestApp};
use flow::auth::Role;

async fn operators_delete_their_own_holds_admins_any_and_only_admins_override(backend: Backend) {
    let mut config = flow::config::Config::default();
    config.auth.mode = "token".into();
    let app = TestApp::with_config(backend, config).await;
    let admin = api_token(&app, "admin", Role::Admin).await;
    let slurm = api_token(&app, "slurm", Role::Operator).await;
    let other = api_token(&app, "other", Role::Operator).await;
    let r = call_as(
        &app,
        &admin,
        Method::POST,
        "/v1/expected-racks",
        Some(&gb200_rack(1, 1)),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let body =
        json!({"target": {"rack": {"name": "rack-0001"}}, "owner": "slurm", "reason": "job 1"});
    let mine = call_as(&app, &slurm, Method::POST, "/v1/holds", Some(&body)).await;
    assert_eq!(mine.status, 201, "{}", mine.text);
    assert_eq!(mine.body["created_by"], "token:slurm");
    let path = format!("/v1/holds/{}", mine.body["id"].as_str().unwrap());
    call_as(&app, &other, Method::DELETE, &path, None)
        .await
        .assert_problem(403, "forbidden");
    assert_eq!(
        call_as(&app, &slurm, Method::DELETE, &path, None)
            .await
            .status,
        204
    );
    let again = call_as(&app, &slurm, Method::POST, "/v1/holds", Some(&body)).await;
    let path = format!("/v1/holds/{}", again.body["id"].as_str().unwrap());
    assert_eq!(
        call_as(&app, &admin, Method::DELETE, &path, None)
            .await
            .status,
        204
    );

    let op = json!({"target_spec": {"racks": [{"name": "rack-0001"}]}, "override_readiness_check": true});
    let refused = call_as(
        &app,
        &slurm,
        Method::POST,
        "/v1/operations/power-off",
        Some(&op),
    )
    .await;
    refused.assert_problem(403, "forbidden");
    assert!(
        refused.text.contains("override_readiness_check"),
        "{}",
        refused.text
    );
}

on_both_secured!(
    operators_delete_their_own_holds_admins_any_and_only_admins_override,
    the_rack_shortcuts_accept_the_override_from_admins_only,
);

/// The rack shortcuts (`/v1/racks/{id}/power|firmware|bring-up`) take `override_readiness_check`
/// like the operation endpoints: refused for an operator, past the hold for an admin.
async fn the_rack_shortcuts_accept_the_override_from_admins_only(backend: Backend) {
    let mut config = flow::config::Config::default();
    config.auth.mode = "token".into();
    let app = TestApp::with_config(backend, config).await;
    let admin = api_token(&app, "admin", Role::Admin).await;
    let slurm = api_token(&app, "slurm", Role::Operator).await;
    let r = call_as(
        &app,
        &admin,
        Method::POST,
        "/v1/expected-racks",
        Some(&gb200_rack(1, 1)),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let rack = r.body["id"].as_str().unwrap().to_string();
    let hold =
        json!({"target": {"rack": {"name": "rack-0001"}}, "owner": "slurm", "reason": "job 1"});
    let held = call_as(&app, &slurm, Method::POST, "/v1/holds", Some(&hold)).await;
    assert_eq!(held.status, 201, "{}", held.text);

    let shortcuts = [
        (Method::PATCH, "power", json!({"state": "off"})),
        (Method::POST, "firmware", json!({})),
        (Method::POST, "bring-up", json!({})),
    ];
    for (method, op, body) in shortcuts {
        let path = format!("/v1/racks/{rack}/{op}");
        // Without the override the hold refuses it, for everyone.
        call_as(&app, &admin, method.clone(), &path, Some(&body))
            .await
            .assert_problem(409, "held");
        let mut overriding = body.clone();
        overriding["override_readiness_check"] = json!(true);
        let refused = call_as(&app, &slurm, method.clone(), &path, Some(&overriding)).await;
        refused.assert_problem(403, "forbidden");
        assert!(
            refused.text.contains("override_readiness_check"),
            "{op}: {}",
            refused.text
        );
        // An admin gets past the check: whatever answers now, it is not the hold.
        let passed = call_as(&app, &admin, method.clone(), &path, Some(&overriding)).await;
        assert!(
            ![400, 403, 409].contains(&passed.status.as_u16()),
            "{op}: {} {}",
            passed.status,
            passed.text
        );
    }
}

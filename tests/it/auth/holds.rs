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

on_both_secured!(operators_delete_their_own_holds_admins_any_and_only_admins_override);

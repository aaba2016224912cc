//! The audit log: one row per change with before/after, refused requests too, filters and
//! paging; a failed audit write fails the change; schedules act as `schedule:<name>`; secrets
//! never reach a log line.

use std::io::Write;
use std::sync::{Arc, Mutex};

use axum::http::Method;
use flow::auth::Role;
use sea_orm::ConnectionTrait;
use serde_json::{Value, json};

use super::{TestKey, api_token, bearer, call_as, claims, secured_app};
use crate::support::fixtures::readme_rack;
use crate::support::{Backend, TestApp};

async fn audit(app: &TestApp, admin: &str, query: &str) -> Value {
    let r = call_as(app, admin, Method::GET, &format!("/v1/audit{query}"), None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.body
}

async fn every_change_is_recorded_with_who_before_and_after_and_refusals_too(backend: Backend) {
    let key = TestKey::es256("k1");
    let (app, _jwks) = secured_app(backend, &key).await;
    let admin = api_token(&app, "auditor", Role::Admin).await;
    let editor = bearer(&key.sign(&claims("erin", &["editor"])));
    let viewer = bearer(&key.sign(&claims("vic", &["viewer"])));
    let created = app
        .call(
            Method::POST,
            "/v1/expected-racks",
            Some(&readme_rack()),
            &[("authorization", &editor), ("x-request-id", "req-create-1")],
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let id = created.body["id"].as_str().unwrap().to_string();
    let patched = app
        .call(
            Method::PATCH,
            &format!("/v1/racks/{id}"),
            Some(&json!({"description": "row 7"})),
            &[("authorization", &editor)],
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.text);
    let refused = app
        .call(
            Method::DELETE,
            &format!("/v1/racks/{id}"),
            None,
            &[("authorization", &viewer)],
        )
        .await;
    refused.assert_problem(403, "forbidden");

    let rack_log = audit(&app, &admin, &format!("?resource=rack:{id}")).await;
    let items = rack_log["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{rack_log}");
    let (patch, create) = (&items[0], &items[1]);
    assert_eq!(create["actor"], "user:erin");
    assert_eq!(create["role"], "editor");
    assert_eq!(create["method"], "POST");
    assert_eq!(create["route"], "/v1/expected-racks");
    assert_eq!(create["status"], 201);
    assert_eq!(create["request_id"], "req-create-1");
    assert!(create["before"].is_null());
    assert_eq!(create["after"]["name"], "g10");
    assert_eq!(patch["route"], "/v1/racks/{id}");
    assert_eq!(patch["status"], 200);
    assert!(patch["before"]["description"].is_null(), "{patch}");
    assert_eq!(patch["after"]["description"], "row 7");

    let vic = audit(&app, &admin, "?actor=user:vic").await;
    let vic = &vic["items"].as_array().unwrap()[0];
    assert_eq!(
        (vic["status"].as_u64(), vic["method"].as_str()),
        (Some(403), Some("DELETE"))
    );
    assert_eq!(vic["role"], "viewer");

    // Rules: admin-only, with before/after too.
    let rule = call_as(
        &app,
        &admin,
        Method::POST,
        "/v1/operation-rules",
        Some(&rule_body("slow")),
    )
    .await;
    assert_eq!(rule.status, 201, "{}", rule.text);
    let rule_id = rule.body["id"].as_str().unwrap().to_string();
    let replaced = call_as(
        &app,
        &admin,
        Method::PUT,
        &format!("/v1/operation-rules/{rule_id}"),
        Some(&rule_body("slower")),
    )
    .await;
    assert_eq!(replaced.status, 200, "{}", replaced.text);
    let rules = audit(&app, &admin, &format!("?resource=rule:{rule_id}")).await;
    let latest = &rules["items"][0];
    assert_eq!(latest["actor"], "token:auditor");
    assert_eq!(latest["before"]["name"], "slow");
    assert_eq!(latest["after"]["name"], "slower");

    // Paging by cursor and time filters.
    let first = audit(&app, &admin, "?limit=1").await;
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    let second = audit(&app, &admin, &format!("?limit=1&cursor={cursor}")).await;
    assert_ne!(first["items"][0]["id"], second["items"][0]["id"]);
    let future = audit(&app, &admin, "?since=2999-01-01T00:00:00Z").await;
    assert!(future["items"].as_array().unwrap().is_empty());
    let past = audit(&app, &admin, "?until=2000-01-01T00:00:00Z").await;
    assert!(past["items"].as_array().unwrap().is_empty());
    let bad = call_as(&app, &admin, Method::GET, "/v1/audit?cursor=nope", None).await;
    assert_eq!(bad.error_fields(), ["cursor"]);
    app.db.cleanup().run().await;
}

fn rule_body(name: &str) -> Value {
    json!({"name": name, "operation": "power_on", "stages": [
        {"component_types": ["compute"], "max_parallel": 1, "timeout": "1m",
         "actions": [{"action": "power_control"}]}]})
}

async fn a_change_whose_audit_row_cannot_be_written_does_not_happen(backend: Backend) {
    let key = TestKey::es256("k1");
    let (app, _jwks) = secured_app(backend, &key).await;
    let editor = api_token(&app, "ed", Role::Editor).await;
    app.db
        .db
        .execute_unprepared("DROP TABLE audit_log")
        .await
        .unwrap();
    let r = call_as(
        &app,
        &editor,
        Method::POST,
        "/v1/expected-racks",
        Some(&readme_rack()),
    )
    .await;
    r.assert_problem(500, "internal");
    assert_eq!(app.count_rows("racks").await, 0, "nothing unaudited");
    app.db.cleanup().run().await;
}

/// A writer into a shared buffer: every log line of the test, at every level.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

async fn no_secret_reaches_a_log_line(backend: Backend) {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let key = TestKey::es256("k1");
    let (app, _jwks) = secured_app(backend, &key).await;
    let admin = api_token(&app, "admin", Role::Admin).await;
    let jwt = key.sign(&claims("alice", &["editor"]));
    let mut expired = claims("alice", &["editor"]);
    expired["exp"] = json!(0);
    let expired = key.sign(&expired);
    let created = call_as(
        &app,
        &admin,
        Method::POST,
        "/v1/tokens",
        Some(&json!({"name": "ci", "role": "viewer"})),
    )
    .await;
    let secret = created.body["secret"].as_str().unwrap().to_string();
    for token in [&admin, &jwt, &expired, &secret, &format!("{secret}x")] {
        call_as(
            &app,
            token,
            Method::POST,
            "/v1/expected-racks",
            Some(&json!({})),
        )
        .await;
        call_as(&app, token, Method::GET, "/v1/racks", None).await;
    }
    let audit_rows = audit(&app, &admin, "?limit=1000").await.to_string();
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        text.contains("refused a bearer token"),
        "the log was captured: {text}"
    );
    for token in [&admin, &secret, &jwt, &expired] {
        let signature = token.rsplit('.').next().unwrap();
        assert!(!text.contains(signature), "a secret reached the log");
        assert!(
            !audit_rows.contains(signature),
            "a secret reached the audit log"
        );
    }
    app.db.cleanup().run().await;
}

crate::on_both_secured!(
    every_change_is_recorded_with_who_before_and_after_and_refusals_too,
    a_change_whose_audit_row_cannot_be_written_does_not_happen,
    no_secret_reaches_a_log_line,
);

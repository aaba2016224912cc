//! Safety interlocks (issue 27): holds, health reports and the readiness check at submission.
//! Without Temporal a submission that passes the check answers `503 engine_unavailable`, so a
//! `409 held` / `not_ready` here is the check itself refusing.

use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::TestApp;
use crate::support::fixtures::{component_id, gb200_rack};

fn power_off_rack(name: &str) -> Value {
    json!({"target_spec": {"racks": [{"name": name}]}})
}

async fn holds_are_created_listed_filtered_paged_deleted_and_audited(app: TestApp) {
    let rack = app.create_rack(&gb200_rack(1, 2)).await;
    app.create_rack(&gb200_rack(2, 1)).await;
    let tray = component_id(&rack, "r0001-gpu00");
    let on_rack = app
        .post("/v1/holds", &json!({"target": {"rack": {"name": "rack-0001"}}, "owner": "slurm", "reason": "job 4711"}))
        .await;
    assert_eq!(on_rack.status, 201, "{}", on_rack.text);
    assert_eq!(on_rack.body["active"], true);
    assert_eq!(on_rack.body["target"]["rack"]["id"], rack["id"]);
    let on_tray = app
        .post(
            "/v1/holds",
            &json!({"target": {"component": {"id": tray}}, "owner": "k8s", "reason": "pod"}),
        )
        .await;
    assert_eq!(on_tray.status, 201, "{}", on_tray.text);
    app.post(
        "/v1/holds",
        &json!({"target": {"rack": {"name": "rack-0002"}}, "owner": "slurm", "reason": "job 2"}),
    )
    .await;

    let all = app.get("/v1/holds?count=exact").await;
    assert_eq!(all.body["total"], 3, "{}", all.text);
    let by_rack = app.get("/v1/holds?rack=rack-0001&count=exact").await;
    assert_eq!(
        by_rack.body["total"], 2,
        "rack and its tray: {}",
        by_rack.text
    );
    let by_component = app
        .get(&format!("/v1/holds?component={tray}&count=exact"))
        .await;
    assert_eq!(by_component.body["total"], 1, "{}", by_component.text);
    let by_owner = app
        .get("/v1/holds?owner=slurm&active=true&count=exact")
        .await;
    assert_eq!(by_owner.body["total"], 2, "{}", by_owner.text);
    let first = app.get("/v1/holds?limit=2").await;
    assert_eq!(first.body["items"].as_array().unwrap().len(), 2);
    let cursor = first.body["next_cursor"].as_str().unwrap().to_string();
    let second = app.get(&format!("/v1/holds?limit=2&cursor={cursor}")).await;
    assert_eq!(
        second.body["items"].as_array().unwrap().len(),
        1,
        "{}",
        second.text
    );
    assert!(second.body["next_cursor"].is_null());

    let id = on_rack.body["id"].as_str().unwrap().to_string();
    assert_eq!(
        app.get(&format!("/v1/holds/{id}")).await.body["owner"],
        "slurm"
    );
    assert_eq!(app.delete(&format!("/v1/holds/{id}")).await.status, 204);
    app.get(&format!("/v1/holds/{id}"))
        .await
        .assert_problem(404, "not_found");
    let log = app.get(&format!("/v1/audit?resource=hold:{id}")).await;
    let entries = log.body["items"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "create and delete: {}", log.text);
}

async fn bad_hold_input_is_refused_naming_the_field(app: TestApp) {
    app.create_rack(&gb200_rack(1, 1)).await;
    let missing = app
        .post(
            "/v1/holds",
            &json!({"target": {"rack": {"name": "nope"}}, "owner": "slurm", "reason": "r"}),
        )
        .await;
    missing.assert_problem(404, "not_found");
    assert!(missing.text.contains("nope"), "{}", missing.text);
    let id = uuid::Uuid::now_v7();
    let missing = app
        .post(
            "/v1/holds",
            &json!({"target": {"component": {"id": id}}, "owner": "slurm", "reason": "r"}),
        )
        .await;
    missing.assert_problem(404, "not_found");
    assert!(missing.text.contains(&id.to_string()), "{}", missing.text);
    let missing = app
        .post(
            "/v1/holds",
            &json!({"target": {"nvl_domain": {"name": "nvl9"}}, "owner": "slurm", "reason": "r"}),
        )
        .await;
    missing.assert_problem(404, "not_found");
    let past = json!({"target": {"rack": {"name": "rack-0001"}}, "owner": "slurm", "reason": "r",
        "expires_at": "2020-01-01T00:00:00Z"});
    app.post("/v1/holds", &past)
        .await
        .assert_invalid_field("expires_at", &past);
    let two = json!({"target": {"rack": {"name": "rack-0001"}, "component": {"id": id}}, "owner": "slurm", "reason": "r"});
    app.post("/v1/holds", &two)
        .await
        .assert_invalid_field("target", &two);
    let no_owner = json!({"target": {"rack": {"name": "rack-0001"}}, "owner": " ", "reason": "r"});
    app.post("/v1/holds", &no_owner)
        .await
        .assert_invalid_field("owner", &no_owner);
    assert_eq!(app.count_rows("holds").await, 0);
}

async fn a_held_rack_refuses_submissions_and_the_dry_run_lists_the_hold(app: TestApp) {
    app.create_rack(&gb200_rack(1, 1)).await;
    let hold = app
        .post("/v1/holds", &json!({"target": {"rack": {"name": "rack-0001"}}, "owner": "slurm", "reason": "job 4711"}))
        .await;
    let hold_id = hold.body["id"].as_str().unwrap().to_string();
    // Two submissions at once against the one hold: both refused, naming it.
    let body = power_off_rack("rack-0001");
    let (a, b) = tokio::join!(
        app.post("/v1/operations/power-off", &body),
        app.post("/v1/operations/power-off", &body)
    );
    for r in [&a, &b] {
        r.assert_problem(409, "held");
        assert!(
            r.text.contains(&hold_id) && r.text.contains("job 4711"),
            "{}",
            r.text
        );
    }
    assert_eq!(app.count_rows("tasks").await, 0);
    let plan = app
        .post("/v1/operations/power-off?dry_run=true", &body)
        .await;
    assert_eq!(plan.status, 200, "{}", plan.text);
    assert_eq!(plan.body["blockers"][0]["code"], "held", "{}", plan.text);
    assert_eq!(plan.body["blockers"][0]["hold_id"], hold_id.as_str());
}

async fn a_hold_stops_counting_once_it_expires(app: TestApp) {
    app.create_rack(&gb200_rack(1, 1)).await;
    let at = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let hold = app
        .post("/v1/holds", &json!({"target": {"rack": {"name": "rack-0001"}}, "owner": "slurm", "reason": "job", "expires_at": at}))
        .await;
    assert_eq!(hold.status, 201, "{}", hold.text);
    let body = power_off_rack("rack-0001");
    app.post("/v1/operations/power-off", &body)
        .await
        .assert_problem(409, "held");
    // The hour passes: move its expiry behind us, as the clock would.
    use sea_orm::EntityTrait;
    flow::db::entities::holds::Entity::update_many()
        .col_expr(
            flow::db::entities::holds::Column::ExpiresAt,
            sea_orm::sea_query::Expr::value(chrono::Utc::now() - chrono::Duration::seconds(1)),
        )
        .exec(&app.db.db)
        .await
        .unwrap();
    let active = app.get("/v1/holds?active=true&count=exact").await;
    assert_eq!(active.body["total"], 0, "{}", active.text);
    let expired = app.get("/v1/holds?active=false").await;
    assert_eq!(
        expired.body["items"][0]["active"], false,
        "{}",
        expired.text
    );
    // Past the check: only the missing engine refuses it now.
    app.post("/v1/operations/power-off", &body)
        .await
        .assert_problem(503, "engine_unavailable");
}

async fn health_reports_are_replaced_listed_and_deleted_and_prevent_operations_blocks(
    app: TestApp,
) {
    let rack = app.create_rack(&gb200_rack(1, 1)).await;
    let tray = component_id(&rack, "r0001-gpu00");
    let path = format!("/v1/components/{tray}/health-reports/dcgm");
    let blocking = json!({"alerts": [
        {"id": "xid-79", "message": "GPU fell off the bus", "classifications": ["PreventOperations"]},
        {"id": "temp", "message": "warm", "classifications": ["SiteSpecific"]}]});
    let put = app
        .call(axum::http::Method::PUT, &path, Some(&blocking), &[])
        .await;
    assert_eq!(put.status, 201, "{}", put.text);
    assert_eq!(put.body["prevents_operations"], true);
    assert_eq!(
        put.body["alerts"][1]["classifications"][0], "SiteSpecific",
        "unknown kept"
    );
    let body = json!({"target_spec": {"components": [{"id": tray}]}});
    let refused = app.post("/v1/operations/power-on", &body).await;
    refused.assert_problem(409, "not_ready");
    assert!(refused.text.contains("xid-79"), "{}", refused.text);
    assert!(
        !refused.text.contains("temp"),
        "only PreventOperations blocks: {}",
        refused.text
    );

    // Replaced by a report whose only alert is of a class Flow does not know: kept, not blocking.
    let other =
        json!({"alerts": [{"id": "temp", "message": "warm", "classifications": ["SiteSpecific"]}]});
    let put = app
        .call(axum::http::Method::PUT, &path, Some(&other), &[])
        .await;
    assert_eq!(put.status, 200, "{}", put.text);
    app.post("/v1/operations/power-on", &body)
        .await
        .assert_problem(503, "engine_unavailable");
    let list = app
        .get(&format!("/v1/components/{tray}/health-reports"))
        .await;
    assert_eq!(
        list.body["items"].as_array().unwrap().len(),
        1,
        "{}",
        list.text
    );
    assert_eq!(app.delete(&path).await.status, 204);
    app.delete(&path).await.assert_problem(404, "not_found");
    let nobody = format!(
        "/v1/components/{}/health-reports/dcgm",
        uuid::Uuid::now_v7()
    );
    app.call(axum::http::Method::PUT, &nobody, Some(&other), &[])
        .await
        .assert_problem(404, "not_found");
    let log = app
        .get(&format!("/v1/audit?resource=health_report:{tray}/dcgm"))
        .await;
    assert_eq!(
        log.body["items"].as_array().unwrap().len(),
        3,
        "{}",
        log.text
    );
}

async fn switches_of_a_domain_whose_compute_trays_are_on_are_not_powered_off(app: TestApp) {
    let a = app.create_rack(&gb200_rack(1, 1)).await;
    let b = app.create_rack(&gb200_rack(2, 1)).await;
    app.post("/v1/nvl-domains", &json!({"name": "nvl1"})).await;
    let attach = app
        .post(
            "/v1/nvl-domains/nvl1/racks",
            &json!({"racks": [{"name": "rack-0001"}, {"name": "rack-0002"}]}),
        )
        .await;
    assert_eq!(attach.status, 200, "{}", attach.text);
    let tray_b = component_id(&b, "r0002-gpu00");
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
    flow::db::entities::components::Entity::update_many()
        .col_expr(
            flow::db::entities::components::Column::PowerState,
            sea_orm::sea_query::Expr::value("on"),
        )
        .filter(
            flow::db::entities::components::Column::Id.eq(uuid::Uuid::parse_str(&tray_b).unwrap()),
        )
        .exec(&app.db.db)
        .await
        .unwrap();
    let switch = component_id(&a, "r0001-nvsw0");
    let off = json!({"target_spec": {"components": [{"id": switch}]}});
    let refused = app.post("/v1/operations/power-off", &off).await;
    refused.assert_problem(409, "not_ready");
    assert!(refused.text.contains("r0002-gpu00"), "{}", refused.text);
    let reset = app
        .post(
            "/v1/operations/power-reset",
            &json!({"target_spec": {"components": [{"id": switch}]}, "mode": "warm"}),
        )
        .await;
    reset.assert_problem(409, "not_ready");
    // With the compute tray in the same request (it powers off first), the check passes.
    let both = json!({"target_spec": {"components": [{"id": switch}, {"id": tray_b}]}});
    app.post("/v1/operations/power-off", &both)
        .await
        .assert_problem(503, "engine_unavailable");
    // Powering on is never refused for it.
    app.post("/v1/operations/power-on", &off)
        .await
        .assert_problem(503, "engine_unavailable");
}

async fn a_tray_whose_bmc_was_last_seen_unreachable_is_not_ready_for_firmware_only(app: TestApp) {
    let rack = app.create_rack(&gb200_rack(1, 1)).await;
    let tray = component_id(&rack, "r0001-gpu00");
    use sea_orm::{ActiveValue::Set, EntityTrait};
    let now = chrono::Utc::now();
    flow::db::entities::component_drifts::Entity::insert(
        flow::db::entities::component_drifts::ActiveModel {
            id: Set(uuid::Uuid::now_v7()),
            source: Set("redfish".into()),
            component_type: Set("compute".into()),
            kind: Set("unreachable".into()),
            component_id: Set(Some(uuid::Uuid::parse_str(&tray).unwrap())),
            external_id: Set(None),
            address: Set(None),
            fields: Set(json!([])),
            message: Set(Some("connection refused".into())),
            stale: Set(false),
            since: Set(now),
            checked_at: Set(now),
        },
    )
    .exec_without_returning(&app.db.db)
    .await
    .unwrap();
    let target = json!({"components": [{"id": tray}]});
    let firmware = app
        .post(
            "/v1/operations/firmware-upgrade",
            &json!({"target_spec": target, "target_version": "1.2.3"}),
        )
        .await;
    firmware.assert_problem(409, "not_ready");
    assert!(firmware.text.contains("unreachable"), "{}", firmware.text);
    let on = app
        .post("/v1/operations/power-on", &json!({"target_spec": target}))
        .await;
    on.assert_problem(503, "engine_unavailable");
}

on_both_backends!(
    holds_are_created_listed_filtered_paged_deleted_and_audited,
    bad_hold_input_is_refused_naming_the_field,
    a_held_rack_refuses_submissions_and_the_dry_run_lists_the_hold,
    a_hold_stops_counting_once_it_expires,
    health_reports_are_replaced_listed_and_deleted_and_prevent_operations_blocks,
    switches_of_a_domain_whose_compute_trays_are_on_are_not_powered_off,
    a_tray_whose_bmc_was_last_seen_unreachable_is_not_ready_for_firmware_only,
);

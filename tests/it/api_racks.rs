//! `/v1/expected-racks` and `/v1/racks`: create, read, list, patch, delete, purge.

use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::TestApp;
use crate::support::fixtures::{gb200_rack, readme_rack};

on_both_backends!(
    the_readme_example_is_found_by_component_serial_with_exactly_its_values,
    creating_a_rack_answers_201_with_location_etag_and_components,
    a_rack_is_read_by_id_and_by_serial_with_or_without_components,
    model_and_plain_text_description_round_trip_unchanged,
    racks_are_listed_in_name_order_with_filters_and_stable_cursors,
    lists_count_their_matches_only_when_asked_exactly_or_by_estimate,
    a_patch_merges_fields_and_location_keys_and_reports_component_changes,
    a_patch_honours_if_match_and_rejects_a_taken_name,
    a_patch_merges_a_whole_component_list_all_or_nothing,
    a_deleted_rack_disappears_and_frees_its_keys_until_purged,
    concurrent_writers_all_succeed_and_a_contested_name_goes_to_exactly_one,
);

async fn the_readme_example_is_found_by_component_serial_with_exactly_its_values(app: TestApp) {
    let rack = app.create_rack(&readme_rack()).await;
    // The original README looks up "Wiwynn" and finds the tray stored as "WiWynn".
    let r = app.get("/v1/components/by-serial?manufacturer=Wiwynn&serial_number=B8111801000851500108Y0SA&with_rack=true").await;
    assert_eq!(r.status, 200, "{}", r.text);
    let c = &r.body["component"];
    assert_eq!(c["type"], "compute");
    assert_eq!(c["name"], "gpu17-nvl5-gp2-cin1-jhb01");
    assert_eq!(c["manufacturer"], "WiWynn");
    assert_eq!(c["model"], "GB200 Compute Tray");
    assert_eq!(c["serial_number"], "B8111801000851500108Y0SA");
    assert_eq!(c["firmware_version"], "FW 1.2.00GA");
    assert_eq!(
        c["position"],
        json!({"slot_id": 36, "tray_idx": 16, "host_id": 0})
    );
    assert_eq!(c["rack_id"], rack["id"]);
    assert_eq!(
        c["bmcs"],
        json!([
            {"type": "host", "mac_address": "d8:19:09:00:04:af", "ip_address": null},
            {"type": "dpu", "mac_address": "e0:9d:73:80:c0:59", "ip_address": null},
            {"type": "dpu", "mac_address": "e0:9d:73:88:de:1b", "ip_address": null}
        ])
    );
    let rk = &r.body["rack"];
    assert_eq!(rk["id"], rack["id"]);
    assert_eq!(rk["name"], "g10");
    assert_eq!(rk["manufacturer"], "Wiwynn");
    assert_eq!(rk["serial_number"], "B8111801000951700005Y0SA");
    assert_eq!(
        rk["location"],
        json!({"region": "MY", "datacenter": "jhb01", "room": "EW-F00-DH-02", "position": "EW-F00-DH-02-G10"})
    );
    assert!(
        rk.get("components").is_none(),
        "the rack comes without its components"
    );
}

async fn creating_a_rack_answers_201_with_location_etag_and_components(app: TestApp) {
    let mut body = gb200_rack(1, 4);
    // Components without a position sort the same on both backends (unset tray index last).
    for name in ["cdu-b", "cdu-a"] {
        body["components"].as_array_mut().unwrap().push(json!({
            "type": "cdu", "name": name, "manufacturer": "Vertiv", "serial_number": format!("SN-{name}"),
            "bmcs": [{"type": "dpu", "mac_address": format!("02:ff:00:00:00:{}", if name == "cdu-a" { "0a" } else { "0b" })},
                     {"type": "host", "mac_address": format!("02:ff:00:00:01:{}", if name == "cdu-a" { "0a" } else { "0b" })}]
        }));
    }
    body["components"][0]["position"] = json!({"slot_id": 11});
    let r = app.post("/v1/expected-racks", &body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.body["id"].as_str().unwrap();
    assert_eq!(
        r.header("location"),
        Some(format!("/v1/racks/{id}").as_str())
    );
    assert_eq!(r.header("etag"), Some("\"1\""));
    let components = r.body["components"].as_array().unwrap();
    assert_eq!(components.len(), 11);
    assert!(components.iter().all(|c| c["rack_id"] == id));
    assert_eq!(components[0]["name"], "cdu-a");
    assert_eq!(components[0]["bmcs"][0]["type"], "host", "host BMCs first");
    assert_eq!(app.count_rows("components").await, 11);
    assert_eq!(app.count_rows("bmcs").await, 4 * 3 + 2 + 2 + 4);
    // The answer is what a read returns, down to the order of components and BMCs.
    let read = app
        .get(&format!("/v1/racks/{id}?include_components=true"))
        .await;
    assert_eq!(read.body, r.body);
}

async fn a_rack_is_read_by_id_and_by_serial_with_or_without_components(app: TestApp) {
    let rack = app.create_rack(&gb200_rack(7, 2)).await;
    let id = rack["id"].as_str().unwrap();
    let r = app.get(&format!("/v1/racks/{id}")).await;
    assert_eq!(r.status, 200);
    assert!(r.body.get("components").is_none());
    assert_eq!(r.header("etag"), Some("\"1\""));
    let r = app
        .get(&format!("/v1/racks/{id}?include_components=true"))
        .await;
    assert_eq!(r.body["components"].as_array().unwrap().len(), 7);
    let r = app.get("/v1/racks/by-serial?manufacturer=nvidia&serial_number=RACK-SN-0007&include_components=true").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["id"], id);
    assert_eq!(r.body["components"].as_array().unwrap().len(), 7);
    app.get(&format!("/v1/racks/{}", uuid::Uuid::new_v4()))
        .await
        .assert_problem(404, "not_found");
    let bad = app.get("/v1/racks/not-a-uuid").await;
    bad.assert_problem(400, "invalid_input");
    assert_eq!(bad.error_fields(), vec!["id"]);
    app.get("/v1/racks/by-serial?manufacturer=NVIDIA&serial_number=nope")
        .await
        .assert_problem(404, "not_found");
    let missing = app.get("/v1/racks/by-serial?manufacturer=NVIDIA").await;
    missing.assert_problem(400, "invalid_input");
    assert!(
        missing.body["detail"]
            .as_str()
            .unwrap()
            .contains("serial_number"),
        "{}",
        missing.text
    );
}

async fn model_and_plain_text_description_round_trip_unchanged(app: TestApp) {
    let mut body = gb200_rack(3, 1);
    body["model"] = json!("GB200 NVL72 Rev B");
    body["description"] = json!("  Row 3, {not json} \"quoted\"\nsecond line");
    let rack = app.create_rack(&body).await;
    let r = app
        .get(&format!("/v1/racks/{}", rack["id"].as_str().unwrap()))
        .await;
    assert_eq!(r.body["model"], "GB200 NVL72 Rev B");
    assert_eq!(
        r.body["description"],
        "  Row 3, {not json} \"quoted\"\nsecond line"
    );
}

fn names(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect()
}

async fn lists_count_their_matches_only_when_asked_exactly_or_by_estimate(app: TestApp) {
    for n in 1..=3 {
        app.create_rack(&gb200_rack(n, 1)).await;
    }
    // No count by default: the cursor says there is more.
    let plain = app.get("/v1/racks?limit=2").await;
    assert_eq!(plain.status, 200, "{}", plain.text);
    assert!(plain.body.get("total").is_none(), "{}", plain.text);
    assert!(
        plain.body.get("total_is_estimate").is_none(),
        "{}",
        plain.text
    );
    assert!(plain.body["next_cursor"].is_string(), "{}", plain.text);
    let exact = app.get("/v1/racks?limit=2&count=exact").await;
    assert_eq!(exact.body["total"], 3, "{}", exact.text);
    assert_eq!(exact.body["total_is_estimate"], false);
    // The same shape on every list.
    for path in [
        "/v1/components",
        "/v1/tasks",
        "/v1/rollouts",
        "/v1/drift",
        "/v1/nvl-domains",
        "/v1/task-schedules",
    ] {
        let r = app.get(&format!("{path}?count=exact")).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        assert!(r.body["total"].is_u64(), "{path}: {}", r.text);
        assert_eq!(r.body["total_is_estimate"], false, "{path}");
        let r = app.get(path).await;
        assert!(r.body.get("total").is_none(), "{path}: {}", r.text);
    }
    let estimate = app.get("/v1/components?type=compute&count=estimate").await;
    assert_eq!(estimate.status, 200, "{}", estimate.text);
    assert!(estimate.body["total"].is_u64(), "{}", estimate.text);
    if app.db.db.get_database_backend() == sea_orm::DbBackend::Postgres {
        // The planner's figure, whatever its statistics say now: flagged, not promised.
        assert_eq!(
            estimate.body["total_is_estimate"], true,
            "{}",
            estimate.text
        );
    } else {
        // SQLite keeps no statistics: it counts, and says the figure is exact.
        assert_eq!(estimate.body["total"], 3, "{}", estimate.text);
        assert_eq!(estimate.body["total_is_estimate"], false);
    }
    for path in ["/v1/racks?count=approximately", "/v1/tasks?count=1"] {
        let r = app.get(path).await;
        r.assert_problem(400, "invalid_input");
        assert_eq!(r.error_fields(), vec!["count"], "{path}: {}", r.text);
    }
}

async fn racks_are_listed_in_name_order_with_filters_and_stable_cursors(app: TestApp) {
    for n in [5, 3, 1, 4, 2] {
        app.create_rack(&gb200_rack(n, 1)).await;
    }
    let first = app.get("/v1/racks?limit=2&count=exact").await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(names(&first.body), vec!["rack-0001", "rack-0002"]);
    assert_eq!(first.body["total"], 5);
    let cursor = first.body["next_cursor"].as_str().unwrap();
    let second = app.get(&format!("/v1/racks?limit=2&cursor={cursor}")).await;
    assert_eq!(names(&second.body), vec!["rack-0003", "rack-0004"]);
    let cursor = second.body["next_cursor"].as_str().unwrap();
    // A rack created before the next page is read does not shift what the cursor points at.
    app.create_rack(&gb200_rack(0, 1)).await;
    let third = app.get(&format!("/v1/racks?limit=2&cursor={cursor}")).await;
    assert_eq!(names(&third.body), vec!["rack-0005"]);
    assert!(third.body["next_cursor"].is_null());

    assert_eq!(
        names(&app.get("/v1/racks?name=rack-0003").await.body),
        vec!["rack-0003"]
    );
    assert_eq!(
        names(&app.get("/v1/racks?name=RACK-000*&limit=3").await.body),
        vec!["rack-0000", "rack-0001", "rack-0002"]
    );
    assert_eq!(
        app.get("/v1/racks?manufacturer=nvidia&count=exact")
            .await
            .body["total"],
        6
    );
    assert_eq!(
        app.get("/v1/racks?model=GB200%20NVL72&count=exact")
            .await
            .body["total"],
        6
    );
    assert_eq!(
        names(&app.get("/v1/racks?room=room-1").await.body),
        vec!["rack-0001", "rack-0003", "rack-0005"]
    );
    assert_eq!(
        names(
            &app.get("/v1/racks?position=A04&datacenter=SJC01&region=us-west")
                .await
                .body
        ),
        vec!["rack-0004"]
    );
    assert_eq!(
        app.get("/v1/racks?nvl_domain=nope&count=exact").await.body["total"],
        0
    );
    let with = app
        .get("/v1/racks?name=rack-0002&include_components=true")
        .await;
    assert_eq!(
        with.body["items"][0]["components"]
            .as_array()
            .unwrap()
            .len(),
        6
    );

    let r = app.get("/v1/racks?limit=0").await;
    r.assert_problem(400, "invalid_input");
    assert_eq!(r.error_fields(), vec!["limit"]);
    assert_eq!(
        app.get("/v1/racks?limit=1001").await.error_fields(),
        vec!["limit"]
    );
    assert_eq!(
        app.get("/v1/racks?cursor=garbage").await.error_fields(),
        vec!["cursor"]
    );
    assert_eq!(
        app.get("/v1/racks?limit=ten").await.error_fields(),
        vec!["limit"]
    );
    assert_eq!(app.get("/v1/racks?colour=red").await.status, 400);
}

async fn a_patch_merges_fields_and_location_keys_and_reports_component_changes(app: TestApp) {
    let rack = app.create_rack(&gb200_rack(9, 1)).await;
    let id = rack["id"].as_str().unwrap();
    let patch = json!({
        "description": null,
        "location": {"room": "room-9", "position": null},
        "components": [
            {"type": "compute", "name": "r0009-gpu00", "manufacturer": "nvidia", "serial_number": "SN-0009-compute-00",
             "firmware_version": "2.0", "position": {"slot_id": 30},
             "bmcs": [{"type": "host", "mac_address": "02:00:09:00:01:00", "ip_address": "10.1.0.5"},
                      {"type": "dpu", "mac_address": "02:00:09:00:01:07"}]},
            {"type": "cdu", "name": "r0009-cdu", "manufacturer": "Vertiv", "serial_number": "CDU-9"}
        ]
    });
    let r = app
        .patch_if_match(&format!("/v1/racks/{id}"), &patch, "\"1\"")
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("etag"), Some("\"2\""));
    let after = &r.body["rack"];
    assert_eq!(after["model"], "GB200 NVL72", "absent fields are kept");
    assert!(after["description"].is_null(), "null clears");
    assert_eq!(
        after["location"],
        json!({"region": "us-west", "datacenter": "SJC01", "room": "room-9", "position": null})
    );
    let report = &r.body["report"];
    assert_eq!(report["rack"], "patched");
    assert_eq!(report["components"][0]["result"], "patched");
    assert_eq!(report["components"][1]["result"], "added");
    let tray = after["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["serial_number"] == "SN-0009-compute-00")
        .unwrap();
    assert_eq!(tray["firmware_version"], "2.0");
    assert_eq!(
        tray["position"],
        json!({"slot_id": 30, "tray_idx": 0, "host_id": 0})
    );
    let bmcs = tray["bmcs"].as_array().unwrap();
    assert_eq!(bmcs.len(), 4);
    assert!(
        bmcs.iter()
            .any(|b| b["mac_address"] == "02:00:09:00:01:00" && b["ip_address"] == "10.1.0.5")
    );
    assert_eq!(after["components"].as_array().unwrap().len(), 7);

    let again = app
        .patch(
            &format!("/v1/racks/{id}"),
            &json!({"location": {"room": "room-9"}}),
        )
        .await;
    assert_eq!(again.body["report"]["rack"], "no_change");
    assert_eq!(again.header("etag"), Some("\"2\""));
    app.patch(
        &format!("/v1/racks/{}", uuid::Uuid::new_v4()),
        &json!({"name": "x"}),
    )
    .await
    .assert_problem(404, "not_found");
}

async fn a_patch_honours_if_match_and_rejects_a_taken_name(app: TestApp) {
    let a = app.create_rack(&gb200_rack(1, 1)).await;
    app.create_rack(&gb200_rack(2, 1)).await;
    let path = format!("/v1/racks/{}", a["id"].as_str().unwrap());
    let stale = app
        .patch_if_match(&path, &json!({"model": "x"}), "\"7\"")
        .await;
    stale.assert_problem(412, "precondition_failed");
    let taken = app.patch(&path, &json!({"name": "rack-0002"})).await;
    taken.assert_problem(409, "duplicate");
    assert_eq!(taken.error_fields(), vec!["name"]);
    let other_rack = app.patch(&path, &json!({"components": [{"type": "compute", "name": "x", "manufacturer": "NVIDIA", "serial_number": "SN-0002-compute-00"}]})).await;
    other_rack.assert_problem(409, "component_elsewhere");
    assert_eq!(
        other_rack.error_fields(),
        vec!["components[0].serial_number"]
    );
    let renamed = app
        .patch_if_match(&path, &json!({"name": "rack-0100"}), "*")
        .await;
    assert_eq!(renamed.status, 200, "{}", renamed.text);
    assert_eq!(renamed.body["rack"]["name"], "rack-0100");
    assert_eq!(app.get(&path).await.body["revision"], 2);
}

async fn a_patch_merges_a_whole_component_list_all_or_nothing(app: TestApp) {
    let spec = gb200_rack(11, 2);
    let rack = app.create_rack(&spec).await;
    let path = format!("/v1/racks/{}", rack["id"].as_str().unwrap());
    let other = app.create_rack(&gb200_rack(12, 1)).await;
    let taken_mac = other["components"][0]["bmcs"][0]["mac_address"].clone();
    // Every component the rack has (one changed), then three new ones.
    let mut listed = spec["components"].as_array().unwrap().clone();
    let had = listed.len();
    listed[0]["firmware_version"] = json!("3.1");
    for i in 0..3 {
        listed.push(
            json!({"type": "cdu", "name": format!("r0011-cdu{i}"), "manufacturer": "Vertiv",
            "serial_number": format!("CDU-11-{i}"),
            "bmcs": [{"type": "host", "mac_address": format!("02:00:11:00:09:0{i}")}]}),
        );
    }
    let mut clashing = listed.clone();
    let last = clashing.len() - 1;
    clashing[last]["bmcs"][0]["mac_address"] = taken_mac;
    let refused = app.patch(&path, &json!({"components": clashing})).await;
    refused.assert_problem(409, "duplicate");
    assert_eq!(
        refused.error_fields(),
        vec![format!("components[{last}].bmcs[0].mac_address")]
    );
    assert_eq!(
        app.get(&path).await.body["revision"],
        1,
        "nothing was written"
    );

    let r = app.patch(&path, &json!({"components": listed})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let results: Vec<&str> = r.body["report"]["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["result"].as_str().unwrap())
        .collect();
    let mut expected = vec!["patched"];
    expected.extend(vec!["no_change"; had - 1]);
    expected.extend(["added"; 3]);
    assert_eq!(
        results, expected,
        "one result per listed component, in order"
    );
    let components = r.body["rack"]["components"].as_array().unwrap();
    assert_eq!(components.len(), had + 3);
    for c in components {
        let changed = c["serial_number"] == listed[0]["serial_number"];
        assert_eq!(c["revision"], if changed { 2 } else { 1 }, "{c}");
    }
    assert_eq!(r.header("etag"), Some("\"2\""));
}

async fn a_deleted_rack_disappears_and_frees_its_keys_until_purged(app: TestApp) {
    let rack = app.create_rack(&gb200_rack(4, 2)).await;
    let id = rack["id"].as_str().unwrap();
    let path = format!("/v1/racks/{id}");
    app.post_empty(&format!("{path}/purge"))
        .await
        .assert_problem(409, "not_deleted");
    app.call(
        axum::http::Method::DELETE,
        &path,
        None,
        &[("if-match", "\"5\"")],
    )
    .await
    .assert_problem(412, "precondition_failed");
    assert_eq!(app.delete(&path).await.status, 204);
    app.get(&path).await.assert_problem(404, "not_found");
    app.delete(&path).await.assert_problem(404, "not_found");
    assert_eq!(app.get("/v1/racks?count=exact").await.body["total"], 0);
    assert_eq!(app.get("/v1/components?count=exact").await.body["total"], 0);
    app.get("/v1/components/by-mac/02:00:04:00:01:00")
        .await
        .assert_problem(404, "not_found");

    // Name, serials and MACs are free again while the old rows wait for purge.
    let again = app.create_rack(&gb200_rack(4, 2)).await;
    assert_ne!(again["id"], rack["id"]);
    assert_eq!(app.count_rows("racks").await, 2);
    assert_eq!(app.post_empty(&format!("{path}/purge")).await.status, 204);
    assert_eq!(app.count_rows("racks").await, 1);
    assert_eq!(app.count_rows("components").await, 7);
    assert_eq!(app.count_rows("bmcs").await, 2 * 3 + 4);
    app.post_empty(&format!("{path}/purge"))
        .await
        .assert_problem(404, "not_found");
}

async fn concurrent_writers_all_succeed_and_a_contested_name_goes_to_exactly_one(app: TestApp) {
    // Readers and writers interleave: SQLite must queue writers, not fail them.
    let bodies: Vec<Value> = (1..=8).map(|n| gb200_rack(n, 2)).collect();
    let creates =
        futures::future::join_all(bodies.iter().map(|b| app.post("/v1/expected-racks", b)));
    let reads =
        futures::future::join_all((0..8).map(|_| app.get("/v1/racks?include_components=true")));
    let (created, read) = futures::future::join(creates, reads).await;
    assert!(
        created.iter().all(|r| r.status == 201),
        "{:?}",
        created.iter().map(|r| &r.text).collect::<Vec<_>>()
    );
    assert!(read.iter().all(|r| r.status == 200));
    // Four different racks that all want the same name: one wins, the others hear 409.
    let contenders: Vec<Value> = (100..104)
        .map(|n| {
            let mut body = gb200_rack(n, 1);
            body["name"] = json!("contested");
            body
        })
        .collect();
    let results = futures::future::join_all(
        contenders
            .iter()
            .map(|body| app.post("/v1/expected-racks", body)),
    )
    .await;
    let won = results.iter().filter(|r| r.status == 201).count();
    assert_eq!(
        won,
        1,
        "{:?}",
        results.iter().map(|r| &r.text).collect::<Vec<_>>()
    );
    assert!(
        results
            .iter()
            .filter(|r| r.status != 201)
            .all(|r| r.status == 409)
    );
    assert_eq!(app.get("/v1/racks?count=exact").await.body["total"], 9);
    assert_eq!(
        app.count_rows("components").await,
        8 * 7 + 6,
        "the losers left nothing behind"
    );
}

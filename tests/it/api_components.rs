//! `/v1/components`: add, look up by id, serial and BMC MAC, list, patch, delete, purge.

use axum::http::Method;
use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::TestApp;
use crate::support::fixtures::{gb200_rack, readme_rack};

on_both_backends!(
    a_component_is_added_on_its_own_or_into_a_rack,
    a_component_is_found_by_any_of_its_bmc_macs_in_any_notation,
    components_are_listed_with_filters_and_cursors,
    a_component_patch_merges_fields_moves_racks_and_upserts_bmcs,
    a_deleted_component_frees_its_serial_and_macs_until_purged,
    lookups_by_serial_at_once_each_get_their_own_component,
);

fn cdu(rack_id: Option<&str>) -> Value {
    json!({
        "rack_id": rack_id,
        "type": "CDU",
        "name": "cdu-1",
        "manufacturer": "Vertiv",
        "model": "XDU1350",
        "serial_number": "CDU-0001",
        "bmcs": [{"type": "BMC_TYPE_HOST", "mac_address": "AA-BB-CC-00-00-01", "ip_address": "10.0.0.9"}]
    })
}

async fn a_component_is_added_on_its_own_or_into_a_rack(app: TestApp) {
    let r = app.post("/v1/components", &cdu(None)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.body["id"].as_str().unwrap();
    assert_eq!(
        r.header("location"),
        Some(format!("/v1/components/{id}").as_str())
    );
    assert_eq!(r.body["type"], "cdu");
    assert!(r.body["rack_id"].is_null());
    assert_eq!(
        r.body["bmcs"],
        json!([{"type": "host", "mac_address": "aa:bb:cc:00:00:01", "ip_address": "10.0.0.9"}])
    );

    let rack = app.create_rack(&readme_rack()).await;
    let mut body = cdu(rack["id"].as_str());
    body["serial_number"] = json!("CDU-0002");
    body["bmcs"] = json!([]);
    let r = app.post("/v1/components", &body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = app
        .get(&format!(
            "/v1/components/{}?with_rack=true",
            r.body["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(r.body["rack"]["name"], "g10");
    assert_eq!(r.body["component"]["bmcs"], json!([]), "{}", r.text);

    body["serial_number"] = json!("CDU-0003");
    body["rack_id"] = json!(uuid::Uuid::new_v4());
    app.post("/v1/components", &body)
        .await
        .assert_problem(404, "not_found");
    let dup = app.post("/v1/components", &cdu(None)).await;
    dup.assert_problem(409, "duplicate");
    assert_eq!(
        dup.error_fields(),
        vec!["serial_number", "bmcs[0].mac_address"]
    );
}

async fn a_component_is_found_by_any_of_its_bmc_macs_in_any_notation(app: TestApp) {
    app.create_rack(&readme_rack()).await;
    for mac in [
        "d8:19:09:00:04:af",
        "E0-9D-73-80-C0-59",
        "e09d.7388.de1b",
        "E09D7388DE1B",
    ] {
        let r = app.get(&format!("/v1/components/by-mac/{mac}")).await;
        assert_eq!(r.status, 200, "{mac}: {}", r.text);
        assert_eq!(
            r.body["component"]["serial_number"],
            "B8111801000851500108Y0SA"
        );
        assert!(r.body.get("rack").is_none());
    }
    let r = app
        .get("/v1/components/by-mac/d8:19:09:00:04:af?with_rack=true")
        .await;
    assert_eq!(r.body["rack"]["name"], "g10");
    app.get("/v1/components/by-mac/d8:19:09:00:04:ff")
        .await
        .assert_problem(404, "not_found");
    let bad = app.get("/v1/components/by-mac/zz:19:09:00:04:ff").await;
    bad.assert_problem(400, "invalid_input");
    assert_eq!(bad.error_fields(), vec!["mac"]);
}

fn serials(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["serial_number"].as_str().unwrap().to_string())
        .collect()
}

async fn components_are_listed_with_filters_and_cursors(app: TestApp) {
    let a = app.create_rack(&gb200_rack(1, 3)).await;
    app.create_rack(&gb200_rack(2, 3)).await;
    let all = app.get("/v1/components?count=exact").await;
    assert_eq!(all.body["total"], 16);
    let a_id = a["id"].as_str().unwrap();
    assert_eq!(
        app.get(&format!("/v1/components?rack_id={a_id}&count=exact"))
            .await
            .body["total"],
        8
    );
    assert_eq!(
        app.get("/v1/components?rack_name=rack-0002&count=exact")
            .await
            .body["total"],
        8
    );
    assert_eq!(
        app.get("/v1/components?rack_name=nope&count=exact")
            .await
            .body["total"],
        0
    );
    assert_eq!(
        app.get("/v1/components?type=compute&count=exact")
            .await
            .body["total"],
        6
    );
    assert_eq!(
        app.get("/v1/components?type=COMPONENT_TYPE_NVSWITCH,powershelf&count=exact")
            .await
            .body["total"],
        8
    );
    assert_eq!(
        serials(
            &app.get("/v1/components?rack_name=rack-0001&type=torswitch")
                .await
                .body
        ),
        vec!["SN-0001-torswitch-00"]
    );
    assert_eq!(
        serials(
            &app.get("/v1/components?serial_number=SN-0002-compute-01")
                .await
                .body
        ),
        vec!["SN-0002-compute-01"]
    );
    assert_eq!(
        serials(
            &app.get("/v1/components?bmc_mac=02-00-02-00-02-01")
                .await
                .body
        ),
        vec!["SN-0002-compute-01"]
    );
    assert_eq!(
        app.get("/v1/components?name=r0001-gpu*&count=exact")
            .await
            .body["total"],
        3
    );
    assert_eq!(
        app.get("/v1/components?manufacturer=Nvidia&model=GB200%20Power%20Shelf&count=exact")
            .await
            .body["total"],
        4
    );
    assert_eq!(
        app.get("/v1/components?external_id=m-1&count=exact")
            .await
            .body["total"],
        0
    );

    let mut seen = Vec::new();
    let mut next = Some(String::new());
    while let Some(cursor) = next {
        let page = app
            .get(&format!(
                "/v1/components?limit=5&cursor={cursor}&count=exact"
            ))
            .await;
        assert_eq!(page.status, 200, "{}", page.text);
        assert_eq!(page.body["total"], 16);
        seen.extend(serials(&page.body));
        next = page.body["next_cursor"].as_str().map(String::from);
    }
    assert_eq!(seen.len(), 16);
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 16, "no component appears on two pages");

    let r = app.get("/v1/components?type=gpu").await;
    r.assert_problem(400, "invalid_input");
    assert_eq!(r.error_fields(), vec!["type"]);
    assert_eq!(
        app.get("/v1/components?bmc_mac=nope").await.error_fields(),
        vec!["bmc_mac"]
    );
    assert_eq!(
        app.get("/v1/components?rack_id=nope").await.error_fields(),
        vec!["rack_id"]
    );
}

async fn a_component_patch_merges_fields_moves_racks_and_upserts_bmcs(app: TestApp) {
    let a = app.create_rack(&gb200_rack(1, 1)).await;
    let b = app.create_rack(&gb200_rack(2, 1)).await;
    let tray = a["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "compute")
        .unwrap()
        .clone();
    let path = format!("/v1/components/{}", tray["id"].as_str().unwrap());

    let r = app
        .call(Method::PATCH, &path, Some(&json!({
            "firmware_version": "FW 2.0",
            "description": "replaced fan",
            "position": {"slot_id": 12, "host_id": null},
            "rack_id": b["id"],
            "bmcs": [{"type": "host", "mac_address": "02:00:01:00:01:00", "ip_address": "10.9.9.9"},
                     {"type": "dpu", "mac_address": "02:00:01:00:01:09"}]
        })), &[("if-match", "\"1\"")])
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("etag"), Some("\"2\""));
    assert_eq!(r.body["firmware_version"], "FW 2.0");
    assert_eq!(r.body["description"], "replaced fan");
    assert_eq!(r.body["name"], tray["name"], "absent fields are kept");
    assert_eq!(
        r.body["position"],
        json!({"slot_id": 12, "tray_idx": 0, "host_id": null})
    );
    assert_eq!(r.body["rack_id"], b["id"]);
    let bmcs = r.body["bmcs"].as_array().unwrap();
    assert_eq!(bmcs.len(), 4);
    assert!(
        bmcs.iter()
            .any(|m| m["mac_address"] == "02:00:01:00:01:00" && m["ip_address"] == "10.9.9.9")
    );

    app.patch_if_match(&path, &json!({"model": "x"}), "\"1\"")
        .await
        .assert_problem(412, "precondition_failed");
    let taken = app
        .patch(
            &path,
            &json!({"bmcs": [{"type": "host", "mac_address": "02:00:02:00:01:00"}]}),
        )
        .await;
    taken.assert_problem(409, "duplicate");
    assert_eq!(taken.error_fields(), vec!["bmcs[0].mac_address"]);
    let no_rack = app
        .patch(&path, &json!({"rack_id": uuid::Uuid::new_v4()}))
        .await;
    no_rack.assert_problem(400, "invalid_input");
    assert_eq!(no_rack.error_fields(), vec!["rack_id"]);
    let identity = app.patch(&path, &json!({"serial_number": "changed"})).await;
    identity.assert_problem(400, "invalid_input");
    assert_eq!(identity.error_fields(), vec!["serial_number"]);

    let detached = app.patch(&path, &json!({"rack_id": null})).await;
    assert_eq!(detached.status, 200, "{}", detached.text);
    assert!(detached.body["rack_id"].is_null());
    let unchanged = app
        .patch(&path, &json!({"firmware_version": "FW 2.0"}))
        .await;
    assert_eq!(
        unchanged.body["revision"], detached.body["revision"],
        "a no-op patch keeps the revision"
    );
    app.patch(
        &format!("/v1/components/{}", uuid::Uuid::new_v4()),
        &json!({}),
    )
    .await
    .assert_problem(404, "not_found");
}

async fn a_deleted_component_frees_its_serial_and_macs_until_purged(app: TestApp) {
    let r = app.post("/v1/components", &cdu(None)).await;
    let path = format!("/v1/components/{}", r.body["id"].as_str().unwrap());
    app.post_empty(&format!("{path}/purge"))
        .await
        .assert_problem(409, "not_deleted");
    assert_eq!(app.delete(&path).await.status, 204);
    app.get(&path).await.assert_problem(404, "not_found");
    app.get("/v1/components/by-mac/aa:bb:cc:00:00:01")
        .await
        .assert_problem(404, "not_found");
    app.get("/v1/components/by-serial?manufacturer=vertiv&serial_number=CDU-0001")
        .await
        .assert_problem(404, "not_found");
    assert_eq!(
        app.post("/v1/components", &cdu(None)).await.status,
        201,
        "serial and MAC are free again"
    );
    assert_eq!(app.post_empty(&format!("{path}/purge")).await.status, 204);
    assert_eq!(app.count_rows("components").await, 1);
    assert_eq!(app.count_rows("bmcs").await, 1);
    app.post_empty(&format!("{path}/purge"))
        .await
        .assert_problem(404, "not_found");
}

/// On PostgreSQL concurrent lookups by serial share statements: each must still get exactly
/// its own component (or its own 404), duplicates and misses included.
async fn lookups_by_serial_at_once_each_get_their_own_component(app: TestApp) {
    let mut expected = Vec::new();
    for n in 1..=3 {
        let rack = app.create_rack(&gb200_rack(n, 4)).await;
        for c in rack["components"].as_array().unwrap() {
            expected.push((
                c["serial_number"].as_str().unwrap().to_string(),
                c["id"].as_str().unwrap().to_string(),
            ));
        }
    }
    let gone = &expected[0];
    assert_eq!(
        app.delete(&format!("/v1/components/{}", gone.1))
            .await
            .status,
        204
    );
    let mut asks: Vec<(String, Option<String>)> = Vec::new();
    for (i, (serial, id)) in expected.iter().enumerate() {
        let id = (i != 0).then(|| id.clone());
        // Every serial three times, in different case for the manufacturer.
        asks.extend(std::iter::repeat_n((serial.clone(), id), 3));
        asks.push((format!("{serial}-unknown"), None));
    }
    let paths: Vec<String> = asks
        .iter()
        .enumerate()
        .map(|(i, (serial, _))| {
            let manufacturer = ["nvidia", "NVIDIA", "Nvidia"][i % 3];
            format!("/v1/components/by-serial?manufacturer={manufacturer}&serial_number={serial}")
        })
        .collect();
    let answers = futures::future::join_all(paths.iter().map(|p| app.get(p))).await;
    for ((serial, id), r) in asks.iter().zip(answers) {
        match id {
            Some(id) => {
                assert_eq!(r.status, 200, "{serial}: {}", r.text);
                assert_eq!(r.body["component"]["id"], id.as_str(), "{serial}");
                assert_eq!(r.body["component"]["serial_number"], serial.as_str());
                let by_id = app.get(&format!("/v1/components/{id}")).await;
                assert_eq!(r.body["component"], by_id.body["component"], "{serial}");
            }
            None => {
                r.assert_problem(404, "not_found");
            }
        }
    }
    // The lookups' own connection (kept while they keep coming) goes back to the pool.
    crate::support::pool_settles(&app.db.db).await;
}

//! `/v1/nvl-domains`: create, list, get, attach and detach racks.

use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::fixtures::gb200_rack;
use crate::support::{TestApp, TestResponse};

on_both_backends!(
    creating_a_domain_is_idempotent_by_name,
    racks_attach_by_id_or_name_and_never_to_two_domains,
    a_rack_detaches_only_from_its_own_domain,
);

/// `POST /v1/nvl-domains/{domain}/racks`: attaches `racks` (a list of references) to `domain`.
async fn attach(app: &TestApp, domain: &str, racks: Value) -> TestResponse {
    app.post(
        &format!("/v1/nvl-domains/{domain}/racks"),
        &json!({ "racks": racks }),
    )
    .await
}

async fn creating_a_domain_is_idempotent_by_name(app: TestApp) {
    let r = app.post("/v1/nvl-domains", &json!({"name": "nvl5"})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_string();
    assert_eq!(
        r.header("location"),
        Some(format!("/v1/nvl-domains/{id}").as_str())
    );
    let again = app.post("/v1/nvl-domains", &json!({"name": "nvl5"})).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body["id"], id.as_str());
    let clash = app
        .post(
            "/v1/nvl-domains",
            &json!({"name": "nvl5", "id": uuid::Uuid::new_v4()}),
        )
        .await;
    clash.assert_problem(409, "duplicate");
    assert_eq!(clash.error_fields(), vec!["name"]);
    let id_taken = app
        .post("/v1/nvl-domains", &json!({"name": "nvl6", "id": id}))
        .await;
    assert_eq!(id_taken.error_fields(), vec!["id"]);
    let chosen = uuid::Uuid::new_v4();
    let r = app
        .post("/v1/nvl-domains", &json!({"name": "nvl7", "id": chosen}))
        .await;
    assert_eq!(r.body["id"], chosen.to_string());
    assert_eq!(
        app.post("/v1/nvl-domains", &json!({"name": " "}))
            .await
            .error_fields(),
        vec!["name"]
    );

    assert_eq!(
        app.get(&format!("/v1/nvl-domains/{id}")).await.body["name"],
        "nvl5"
    );
    assert_eq!(
        app.get("/v1/nvl-domains/nvl7").await.body["id"],
        chosen.to_string()
    );
    app.get("/v1/nvl-domains/nvl9")
        .await
        .assert_problem(404, "not_found");
    let list = app.get("/v1/nvl-domains?limit=2&count=exact").await;
    assert_eq!(list.body["total"], 2);
    assert_eq!(list.body["items"][0]["name"], "nvl5");
    assert_eq!(
        app.get("/v1/nvl-domains?name=*7&count=exact").await.body["total"],
        1
    );
}

async fn racks_attach_by_id_or_name_and_never_to_two_domains(app: TestApp) {
    let r1 = app.create_rack(&gb200_rack(1, 1)).await;
    app.create_rack(&gb200_rack(2, 1)).await;
    app.create_rack(&gb200_rack(3, 1)).await;
    let d = app
        .post("/v1/nvl-domains", &json!({"name": "nvl-a"}))
        .await
        .body;
    app.post("/v1/nvl-domains", &json!({"name": "nvl-b"})).await;

    let r = attach(
        &app,
        "nvl-a",
        json!([{"id": r1["id"]}, {"name": "rack-0002"}]),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["items"].as_array().map(Vec::len), Some(2));
    assert!(r.body.get("total").is_none(), "counted only on request");
    // The resolved domain id is written, whether the domain was named by id or by name.
    let rack = app
        .get(&format!("/v1/racks/{}", r1["id"].as_str().unwrap()))
        .await;
    assert_eq!(rack.body["nvl_domain_id"], d["id"]);
    assert_eq!(rack.body["revision"], 2);
    let again = app
        .post(
            &format!("/v1/nvl-domains/{}/racks", d["id"].as_str().unwrap()),
            &json!({"racks": [{"name": "rack-0002"}]}),
        )
        .await;
    assert_eq!(again.status, 200, "attaching again is a no-op");

    // A rack in another domain, or no such rack: the whole request fails, nothing is attached.
    for (racks, status, code) in [
        (
            json!([{"name": "rack-0003"}, {"name": "rack-0001"}]),
            409,
            "attached_elsewhere",
        ),
        (
            json!([{"name": "rack-0003"}, {"name": "rack-9999"}]),
            400,
            "invalid_input",
        ),
    ] {
        let r = attach(&app, "nvl-b", racks).await;
        r.assert_problem(status, code);
        assert_eq!(r.error_fields(), vec!["racks[1]"]);
        assert_eq!(
            app.get("/v1/nvl-domains/nvl-b/racks?count=exact")
                .await
                .body["total"],
            0,
            "all or nothing"
        );
    }
    let both = attach(
        &app,
        "nvl-b",
        json!([{"name": "rack-0003", "id": r1["id"]}, {}]),
    )
    .await;
    assert_eq!(both.error_fields(), vec!["racks[0]", "racks[1]"]);
    attach(&app, "nvl-z", json!([{"name": "rack-0003"}]))
        .await
        .assert_problem(404, "not_found");

    let listed = app
        .get("/v1/nvl-domains/nvl-a/racks?include_components=true")
        .await;
    assert_eq!(
        listed.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect::<Vec<_>>(),
        vec!["rack-0001", "rack-0002"]
    );
    assert_eq!(
        listed.body["items"][0]["components"]
            .as_array()
            .unwrap()
            .len(),
        6
    );
    assert_eq!(
        app.get("/v1/racks?nvl_domain=nvl-a&count=exact").await.body["total"],
        2
    );
    assert_eq!(
        app.get(&format!(
            "/v1/racks?nvl_domain={}&count=exact",
            d["id"].as_str().unwrap()
        ))
        .await
        .body["total"],
        2
    );
}

async fn a_rack_detaches_only_from_its_own_domain(app: TestApp) {
    let r1 = app.create_rack(&gb200_rack(1, 1)).await;
    app.create_rack(&gb200_rack(2, 1)).await;
    app.post("/v1/nvl-domains", &json!({"name": "nvl-a"})).await;
    app.post("/v1/nvl-domains", &json!({"name": "nvl-b"})).await;
    attach(&app, "nvl-a", json!([{"name": "rack-0001"}])).await;
    attach(&app, "nvl-b", json!([{"name": "rack-0002"}])).await;

    app.delete("/v1/nvl-domains/nvl-a/racks/rack-0002")
        .await
        .assert_problem(409, "attached_elsewhere");
    assert_eq!(
        app.delete(&format!(
            "/v1/nvl-domains/nvl-a/racks/{}",
            r1["id"].as_str().unwrap()
        ))
        .await
        .status,
        204
    );
    assert_eq!(
        app.delete("/v1/nvl-domains/nvl-a/racks/rack-0001")
            .await
            .status,
        204,
        "detaching a free rack is a no-op"
    );
    assert!(
        app.get(&format!("/v1/racks/{}", r1["id"].as_str().unwrap()))
            .await
            .body["nvl_domain_id"]
            .is_null()
    );
    assert_eq!(
        app.get("/v1/nvl-domains/nvl-b/racks?count=exact")
            .await
            .body["total"],
        1
    );
    app.delete("/v1/nvl-domains/nvl-a/racks/rack-0404")
        .await
        .assert_problem(404, "not_found");
    app.delete("/v1/nvl-domains/nvl-x/racks/rack-0001")
        .await
        .assert_problem(404, "not_found");
}

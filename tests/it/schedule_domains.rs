//! Issue 26: NVLink domains as schedule targets. A schedule on `target_spec.nvl_domains` takes
//! every live rack of the domain, and its racks follow the domain: a rack attached after the
//! schedule was made is in the next fire, one detached is not (each change audited). Bad
//! domains are refused naming the field. A firmware schedule's per-rack submissions pass the
//! domain rule only when the schedule's racks cover the domain whole. The fires really run
//! (Temporal, simulated devices).

use serde_json::{Value, json};

use crate::ops_on_both_backends;
use crate::support::fixtures::gb200_rack;
use crate::support::ops::Ops;

ops_on_both_backends!(
    a_schedule_on_a_domain_fires_on_the_racks_the_domain_holds_at_each_fire,
    a_firmware_schedule_splits_a_domain_only_when_its_racks_cover_it_whole,
);

async fn attach(ops: &Ops, domain: &str, rack: &str) {
    let r = ops
        .app
        .post(
            &format!("/v1/nvl-domains/{domain}/racks"),
            &json!({"racks": [{"name": rack}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

fn schedule(name: &str, domain: &str) -> Value {
    json!({
        "name": name,
        "spec": {"type": "interval", "spec": "6h"},
        "operation": {"kind": "power_on"},
        "target_spec": {"nvl_domains": [{"name": domain}]},
    })
}

/// The racks a fire created tasks on, by name, after every task succeeded.
async fn fire(ops: &Ops, id: &str) -> Vec<String> {
    let run = ops
        .app
        .post_empty(&format!("/v1/task-schedules/{id}/trigger"))
        .await;
    assert_eq!(run.status, 202, "{}", run.text);
    let mut racks = Vec::new();
    for task in run.body["task_ids"].as_array().unwrap() {
        let task = ops.wait_end(task.as_str().unwrap()).await;
        assert_eq!(task["status"], "succeeded", "{task}");
        let rack = ops
            .app
            .get(&format!("/v1/racks/{}", task["rack_id"].as_str().unwrap()))
            .await;
        racks.push(rack.body["name"].as_str().unwrap().to_string());
    }
    racks.sort();
    racks
}

async fn a_schedule_on_a_domain_fires_on_the_racks_the_domain_holds_at_each_fire(ops: Ops) {
    for n in 1..=3 {
        ops.app.create_rack(&gb200_rack(n, 1)).await;
    }
    for domain in ["nvl-a", "nvl-empty"] {
        let r = ops
            .app
            .post("/v1/nvl-domains", &json!({"name": domain}))
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    attach(&ops, "nvl-a", "rack-0001").await;
    attach(&ops, "nvl-a", "rack-0002").await;
    let domain_id = ops.app.get("/v1/nvl-domains/nvl-a").await.body["id"].clone();

    for (bad, why) in [("nvl-zz", "not found"), ("nvl-empty", "no live racks")] {
        let r = ops
            .app
            .post("/v1/task-schedules", &schedule("bad", bad))
            .await;
        r.assert_invalid_field("target_spec.nvl_domains[0]", &schedule("bad", bad));
        assert!(r.text.contains(why), "{}", r.text);
    }

    let created = ops
        .app
        .post("/v1/task-schedules", &schedule("domain-a", "nvl-a"))
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let id = created.body["id"].as_str().unwrap().to_string();
    let scope = ops.app.get(&format!("/v1/task-schedules/{id}/scope")).await;
    let items = scope.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{}", scope.text);
    assert!(
        items.iter().all(|s| s["nvl_domain_id"] == domain_id),
        "{}",
        scope.text
    );
    assert_eq!(fire(&ops, &id).await, ["rack-0001", "rack-0002"]);

    // The domain changes: rack 3 joins, rack 1 leaves. The next fire follows it.
    attach(&ops, "nvl-a", "rack-0003").await;
    let r = ops
        .app
        .delete("/v1/nvl-domains/nvl-a/racks/rack-0001")
        .await;
    assert!(r.status.is_success(), "{}", r.text);
    assert_eq!(fire(&ops, &id).await, ["rack-0002", "rack-0003"]);
    let scope = ops.app.get(&format!("/v1/task-schedules/{id}/scope")).await;
    assert_eq!(
        scope.body["items"].as_array().unwrap().len(),
        2,
        "{}",
        scope.text
    );
    let log = ops
        .app
        .get(&format!("/v1/audit?resource=schedule:{id}"))
        .await;
    let followed = log.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| !e["after"]["scope_racks_joined"].is_null())
        .unwrap_or_else(|| panic!("no audited scope change: {}", log.text));
    assert_eq!(
        followed["after"]["scope_racks_joined"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        followed["after"]["scope_racks_left"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // A schedule that names rack 2 itself, then gets the domain added: rack 2 keeps its own
    // entry (no domain tag: it will not leave with the domain), widened to every type as any
    // addition widens a rack already in scope; rack 3 comes with the domain.
    let mut named = schedule("named", "nvl-a");
    named["target_spec"] =
        json!({"racks": [{"name": "rack-0002", "component_types": ["compute"]}]});
    let created = ops.app.post("/v1/task-schedules", &named).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let named_id = created.body["id"].as_str().unwrap().to_string();
    let path = format!("/v1/task-schedules/{named_id}/scope");
    let before = ops.app.get(&path).await.body["items"][0].clone();
    let added = ops
        .app
        .post(
            &path,
            &json!({"target_spec": {"nvl_domains": [{"name": "nvl-a"}]}}),
        )
        .await;
    assert_eq!(added.status, 200, "{}", added.text);
    let scope = ops.app.get(&path).await;
    let items = scope.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{}", scope.text);
    let own = items.iter().find(|s| s["id"] == before["id"]).unwrap();
    assert!(own["nvl_domain_id"].is_null(), "{}", scope.text);
    assert_eq!(own["component_types"], json!([]), "{}", scope.text);
    let tagged = items
        .iter()
        .filter(|s| !s["nvl_domain_id"].is_null())
        .count();
    assert_eq!(tagged, 1, "{}", scope.text);
}

async fn a_firmware_schedule_splits_a_domain_only_when_its_racks_cover_it_whole(ops: Ops) {
    for n in 1..=2 {
        ops.app.create_rack(&gb200_rack(n, 1)).await;
    }
    let r = ops
        .app
        .post("/v1/nvl-domains", &json!({"name": "nvl-a"}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    attach(&ops, "nvl-a", "rack-0001").await;
    attach(&ops, "nvl-a", "rack-0002").await;
    let upgrade = |name: &str, racks: &[&str]| {
        let racks: Vec<Value> = racks.iter().map(|r| json!({"name": r})).collect();
        let mut s = schedule(name, "nvl-a");
        s["operation"] = json!({"kind": "firmware_upgrade", "target_version": "2.0.0"});
        s["target_spec"] = json!({ "racks": racks });
        s
    };
    // Both racks by name: each goes alone, yet together they are the whole domain.
    let whole = ops
        .app
        .post(
            "/v1/task-schedules",
            &upgrade("whole", &["rack-0001", "rack-0002"]),
        )
        .await;
    assert_eq!(whole.status, 201, "{}", whole.text);
    let id = whole.body["id"].as_str().unwrap().to_string();
    assert_eq!(fire(&ops, &id).await, ["rack-0001", "rack-0002"]);

    // One of the two: its fire is refused on that rack, naming the rack left out.
    let part = ops
        .app
        .post("/v1/task-schedules", &upgrade("part", &["rack-0001"]))
        .await;
    assert_eq!(part.status, 201, "{}", part.text);
    let id = part.body["id"].as_str().unwrap();
    let run = ops
        .app
        .post_empty(&format!("/v1/task-schedules/{id}/trigger"))
        .await;
    assert_eq!(run.status, 202, "{}", run.text);
    assert_eq!(run.body["task_ids"], json!([]), "{}", run.text);
    let rack = &run.body["racks"][0];
    assert_eq!(rack["outcome"], "failed", "{}", run.text);
    let reason = rack["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("rack-0002"), "{}", run.text);
}

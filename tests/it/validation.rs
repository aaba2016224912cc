//! Expected vs actual: live validation, the drift sync and its records, against the fake PSM
//! (power shelves) and simulated devices (switches and compute trays), on both backends.

use std::sync::Arc;
use std::time::Duration;

use flow::app::App;
use flow::clock::SystemClock;
use flow::components::providers::{PsmManager, PsmSettings, SimConfig, SimDevices};
use flow::components::registry::{Registry, psm_set, sim_set};
use flow::config::Config;
use flow::domain::ComponentType;
use flow::drift::observe::Observer;
use flow::drift::sync::{DriftSync, SyncRun};
use serde_json::{Value, json};

use crate::ops_on_both_backends;
use crate::support::fixtures::{component_id, gb200_rack, mac};
use crate::support::ops::{Ops, OpsBuilder};
use crate::support::psm::PsmServer;
use crate::support::{Backend, TestApp, TestDb};

/// A shelf PSM has that no rack expects.
const STRAY: &str = "02:00:00:09:00:01";
/// Deadline of one manager's report in these tests: short, so a stalled PSM fails fast.
const OBSERVE_TIMEOUT: Duration = Duration::from_secs(2);

/// The API over a private database, with power shelves on the fake PSM and the other driven
/// types on the simulator.
struct Harness {
    app: TestApp,
    psm: PsmServer,
    /// The application behind `app`, as one Flow process assembles it.
    built: App,
}

impl Harness {
    async fn start(backend: Backend) -> Self {
        let db = TestDb::new(backend).await;
        let psm = PsmServer::start().await;
        let sim = Arc::new(SimDevices::new(SimConfig::default()));
        let settings = PsmSettings {
            url: psm.url.clone(),
            timeout: Duration::from_secs(5),
            pmc_credentials: None,
            allowed_networks: crate::support::bmc_networks(),
            ..Default::default()
        };
        let registry = Arc::new(
            Registry::new()
                .with(ComponentType::Compute, sim_set(sim.clone()))
                .with(ComponentType::NvSwitch, sim_set(sim))
                .with(
                    ComponentType::PowerShelf,
                    psm_set(PsmManager::new(&settings).unwrap()),
                ),
        );
        let mut config = Config::default();
        config.components.observe_timeout = OBSERVE_TIMEOUT;
        let built = App::builder(db.db.clone(), config)
            .registry(registry)
            .build();
        let app = TestApp {
            router: flow::service::router(built.state().clone()),
            db,
        };
        Self { app, psm, built }
    }

    /// A drift-sync runner, as one Flow process would have it.
    fn sync(&self) -> DriftSync {
        self.built.drift_sync(Duration::from_secs(120))
    }

    /// Rack 1 (2 compute trays, 2 switches, 2 shelves expecting PMC firmware 1.2.0). PSM has
    /// the first shelf on firmware 1.1.9, not the second, and a stray shelf. Returns the rack.
    async fn drifted_rack(&self) -> Value {
        let mut body = gb200_rack(1, 2);
        for shelf in [4, 5] {
            body["components"][shelf]["firmware_version"] = json!("1.2.0");
        }
        let rack = self.app.create_rack(&body).await;
        self.psm.add_shelf(&mac(1, 5, 0));
        self.psm.set_firmware(&mac(1, 5, 0), "1.1.9");
        self.psm.add_shelf(STRAY);
        rack
    }
}

macro_rules! on_both_backends_with_managers {
    ($($name:ident),* $(,)?) => {
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let h = super::Harness::start($crate::support::Backend::Postgres).await;
                    let cleanup = h.app.db.cleanup();
                    super::$name(h).await;
                    cleanup.run().await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Harness::start($crate::support::Backend::Sqlite).await).await
                }
            )*
        }
    };
}

mod managed {
    use super::*;
    on_both_backends_with_managers!(
        validation_reports_missing_unexpected_and_mismatched_firmware,
        a_manager_that_does_not_answer_is_unreachable_not_missing_and_its_drift_is_kept_stale,
        drift_sync_records_drift_and_observed_fields_without_touching_expected_data,
        an_external_id_another_component_holds_is_a_409_naming_both_and_the_rest_is_recorded,
        two_processes_syncing_at_once_write_once,
        a_sync_one_device_at_a_time_records_what_a_single_pass_does,
        bad_validation_input_is_refused_naming_the_field,
        flow_rack_validate_prints_the_differences_and_exits_1,
        a_domain_whose_racks_run_different_firmware_is_domain_mixed_in_validation_sync_and_domain,
    );
}

mod operated {
    use super::*;
    ops_on_both_backends!(
        a_sync_after_a_power_off_operation_observes_the_power_off: |b: OpsBuilder| b.with_psm(),
    );
}

fn diffs_of<'a>(body: &'a Value, kind: &str) -> Vec<&'a Value> {
    body["diffs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == kind)
        .collect()
}

async fn validation_reports_missing_unexpected_and_mismatched_firmware(h: Harness) {
    let rack = h.drifted_rack().await;
    let rack_id = rack["id"].as_str().unwrap();
    let (pwr0, pwr1) = (
        component_id(&rack, "r0001-pwr0"),
        component_id(&rack, "r0001-pwr1"),
    );

    // Everything: no body at all.
    let r = h.app.post_empty("/v1/validation").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body["summary"],
        json!({"match": 4, "missing": 1, "unexpected": 1, "mismatch": 1, "unreachable": 0, "rejected": 0, "domain_mixed": 0, "unchecked": 0}),
        "{}",
        r.text
    );
    let missing = diffs_of(&r.body, "missing");
    assert_eq!(missing[0]["component_id"], pwr1.as_str());
    assert_eq!(missing[0]["type"], "powershelf");
    assert_eq!(missing[0]["rack_id"], rack_id);
    let mismatch = diffs_of(&r.body, "mismatch");
    assert_eq!(mismatch[0]["component_id"], pwr0.as_str());
    assert_eq!(mismatch[0]["external_id"], mac(1, 5, 0));
    assert_eq!(
        mismatch[0]["fields"],
        json!([{"field": "firmware_version", "expected": "1.2.0", "actual": "1.1.9"}])
    );
    let unexpected = diffs_of(&r.body, "unexpected");
    assert_eq!(unexpected[0]["external_id"], STRAY);
    assert!(unexpected[0].get("component_id").is_none());
    // Batched, never one call per shelf: PSM lists every shelf it has once (what finds the
    // stray), then is asked for the expected shelves a page at a time (one page here).
    let asked: Vec<_> = h
        .psm
        .calls()
        .into_iter()
        .filter(|c| c.rpc == "GetPowershelves")
        .collect();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(
        asked[0].macs.is_empty(),
        "everything: PSM lists all shelves"
    );
    assert_eq!(
        asked[1].macs.len(),
        2,
        "the rack's two shelves in one batch"
    );
    assert!(!asked[1].macs.iter().any(|m| m == STRAY));

    // The rack alone: the same, except that a stray shelf belongs to no rack.
    let r = h.app.get(&format!("/v1/racks/{rack_id}/validation")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body["summary"],
        json!({"match": 4, "missing": 1, "unexpected": 0, "mismatch": 1, "unreachable": 0, "rejected": 0, "domain_mixed": 0, "unchecked": 0})
    );
    // A target spec narrows it to the power shelves.
    let r = h
        .app
        .post(
            "/v1/validation",
            &json!({"target_spec": {"racks": [{"name": "rack-0001", "component_types": ["powershelf"]}]}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["summary"]["match"], 0);
    assert_eq!(r.body["summary"]["missing"], 1);
    assert_eq!(r.body["summary"]["mismatch"], 1);
    // Validation reads only: nothing was recorded.
    assert_eq!(h.app.count_rows("component_drifts").await, 0);
}

async fn a_manager_that_does_not_answer_is_unreachable_not_missing_and_its_drift_is_kept_stale(
    h: Harness,
) {
    let rack = h.drifted_rack().await;
    let rack_id = rack["id"].as_str().unwrap();
    let sync = h.sync();
    assert!(matches!(
        sync.run_once("a").await.unwrap(),
        SyncRun::Ran { .. }
    ));
    let before = h.app.get("/v1/drift?type=powershelf&count=exact").await;
    assert_eq!(before.body["total"], 3, "{}", before.text);

    h.psm.stall();
    let r = h.app.post_empty("/v1/validation").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        r.body["summary"],
        json!({"match": 4, "missing": 0, "unexpected": 0, "mismatch": 0, "unreachable": 2, "rejected": 0, "domain_mixed": 0, "unchecked": 0}),
        "{}",
        r.text
    );
    for d in diffs_of(&r.body, "unreachable") {
        assert_eq!(d["type"], "powershelf");
        assert!(d["message"].as_str().unwrap().contains("no answer"), "{d}");
    }

    // The sync keeps what PSM said last time, marked stale, and says why.
    match sync.run_once("a").await.unwrap() {
        SyncRun::Ran {
            unreachable,
            answered,
            ..
        } => {
            assert_eq!(unreachable, ["powershelf/psm"]);
            assert_eq!(answered, ["compute/sim", "nvswitch/sim"]);
        }
        other => panic!("{other:?}"),
    }
    let after = h.app.get("/v1/drift?type=powershelf&count=exact").await;
    assert_eq!(after.body["total"], 4, "{}", after.text);
    let items = after.body["items"].as_array().unwrap();
    let kept: Vec<_> = items
        .iter()
        .filter(|d| d["kind"] != "unreachable")
        .collect();
    assert_eq!(kept.len(), 3);
    assert!(kept.iter().all(|d| d["stale"] == true), "{}", after.text);
    for old in before.body["items"].as_array().unwrap() {
        assert!(kept.iter().any(|d| d["id"] == old["id"]), "{old} kept");
    }
    let outage: Vec<_> = items
        .iter()
        .filter(|d| d["kind"] == "unreachable")
        .collect();
    assert_eq!(outage.len(), 1);
    assert!(outage[0]["message"].as_str().unwrap().contains("no answer"));
    let rack = h.app.get(&format!("/v1/racks/{rack_id}")).await;
    assert_eq!(
        rack.body["drift"],
        json!({"missing": 1, "unexpected": 0, "mismatch": 1, "unreachable": 0, "rejected": 0, "stale": 2})
    );

    // Back: the source's drift is replaced and fresh again.
    h.psm.resume();
    sync.run_once("a").await.unwrap();
    let healed = h.app.get("/v1/drift?type=powershelf&count=exact").await;
    assert_eq!(healed.body["total"], 3, "{}", healed.text);
    assert!(
        healed.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["stale"] == false && d["kind"] != "unreachable")
    );
}

async fn drift_sync_records_drift_and_observed_fields_without_touching_expected_data(h: Harness) {
    let rack = h.drifted_rack().await;
    let rack_id = rack["id"].as_str().unwrap();
    let pwr0 = component_id(&rack, "r0001-pwr0");
    assert_eq!(
        rack["drift"],
        json!({"missing": 0, "unexpected": 0, "mismatch": 0, "unreachable": 0, "rejected": 0, "stale": 0})
    );
    let sync = h.sync();
    match sync.run_once("a").await.unwrap() {
        SyncRun::Ran {
            drift, unreachable, ..
        } => {
            assert_eq!(drift, 3);
            assert!(unreachable.is_empty());
        }
        other => panic!("{other:?}"),
    }

    let all = h.app.get("/v1/drift?count=exact").await;
    assert_eq!(all.status, 200, "{}", all.text);
    assert_eq!(all.body["total"], 3);
    let by_rack = h.app.get("/v1/drift?rack=rack-0001&count=exact").await;
    assert_eq!(by_rack.body["total"], 2, "the stray shelf is in no rack");
    let by_id = h
        .app
        .get(&format!(
            "/v1/drift?rack={rack_id}&kind=mismatch&count=exact"
        ))
        .await;
    assert_eq!(by_id.body["total"], 1);
    let d = &by_id.body["items"][0];
    assert_eq!(d["source"], "powershelf/psm");
    assert_eq!(d["component_id"], pwr0.as_str());
    assert_eq!(d["fields"][0]["actual"], "1.1.9");
    assert_eq!(d["stale"], false);
    let unexpected = h.app.get("/v1/drift?kind=unexpected&type=powershelf").await;
    assert_eq!(unexpected.body["items"][0]["address"], STRAY);
    assert_eq!(
        h.app.get("/v1/drift?type=compute&count=exact").await.body["total"],
        0
    );
    let paged = h.app.get("/v1/drift?limit=2").await;
    assert_eq!(paged.body["items"].as_array().unwrap().len(), 2);
    let next = paged.body["next_cursor"].as_str().unwrap();
    let rest = h.app.get(&format!("/v1/drift?limit=2&cursor={next}")).await;
    assert_eq!(rest.body["items"].as_array().unwrap().len(), 1);

    // The rack shows its drift; lists do too.
    let r = h.app.get(&format!("/v1/racks/{rack_id}")).await;
    assert_eq!(
        r.body["drift"],
        json!({"missing": 1, "unexpected": 0, "mismatch": 1, "unreachable": 0, "rejected": 0, "stale": 0})
    );
    assert_eq!(
        r.header("etag"),
        Some("\"1\""),
        "observations do not bump the revision"
    );
    let listed = h.app.get("/v1/racks").await;
    assert_eq!(listed.body["items"][0]["drift"]["mismatch"], 1);

    // Observed values went to their own columns; what the operator wrote is untouched.
    let c = h.app.get(&format!("/v1/components/{pwr0}")).await;
    assert_eq!(c.status, 200, "{}", c.text);
    let c = &c.body["component"];
    assert_eq!(c["firmware_version"], "1.2.0");
    assert_eq!(c["observed_firmware_version"], "1.1.9");
    assert_eq!(c["external_id"], mac(1, 5, 0));
    assert_eq!(c["power_state"], "off");
    assert!(c["last_seen_at"].is_string(), "{c}");
    assert_eq!(c["revision"], 1);
    let missing = h
        .app
        .get(&format!(
            "/v1/components/{}",
            component_id(&rack, "r0001-pwr1")
        ))
        .await;
    assert!(missing.body["component"]["last_seen_at"].is_null());
    let tray = h
        .app
        .get(&format!(
            "/v1/components/{}",
            component_id(&rack, "r0001-gpu00")
        ))
        .await;
    assert_eq!(tray.body["component"]["power_state"], "off");

    // Fixed at the source: the next sync clears the mismatch but keeps the still-missing shelf.
    h.psm.set_firmware(&mac(1, 5, 0), "1.2.0");
    let first_missing = h.app.get("/v1/drift?kind=missing").await.body["items"][0].clone();
    sync.run_once("a").await.unwrap();
    let r = h.app.get(&format!("/v1/racks/{rack_id}")).await;
    assert_eq!(r.body["drift"]["mismatch"], 0);
    let still = h.app.get("/v1/drift?kind=missing").await.body["items"][0].clone();
    assert_eq!(
        still["since"], first_missing["since"],
        "a persisting drift keeps its since"
    );
}

/// Gives `component` the external id `id` in the database, as a stale registration would.
async fn hold_external_id(h: &Harness, component: &str, id: &str) {
    use flow::db::entities::components;
    use sea_orm::sea_query::Expr;
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
    components::Entity::update_many()
        .col_expr(components::Column::ExternalId, Expr::value(id))
        .filter(components::Column::Id.eq(component.parse::<uuid::Uuid>().unwrap()))
        .exec(&h.app.db.db)
        .await
        .unwrap();
}

async fn an_external_id_another_component_holds_is_a_409_naming_both_and_the_rest_is_recorded(
    h: Harness,
) {
    let rack = h.drifted_rack().await;
    let (pwr0, pwr1) = (
        component_id(&rack, "r0001-pwr0"),
        component_id(&rack, "r0001-pwr1"),
    );
    // PSM reports pwr0 by its MAC, which pwr1 (never seen) already holds.
    hold_external_id(&h, &pwr1, &mac(1, 5, 0)).await;
    match h.sync().run_once("a").await.unwrap() {
        SyncRun::Ran {
            drift, unreachable, ..
        } => {
            assert_eq!(drift, 4, "mismatch, missing, unexpected and the clash");
            assert!(unreachable.is_empty());
        }
        other => panic!("{other:?}"),
    }
    let r = h.app.get("/v1/drift?kind=rejected&count=exact").await;
    assert_eq!(r.body["total"], 1, "{}", r.text);
    let d = &r.body["items"][0];
    assert_eq!(d["component_id"], pwr0.as_str());
    assert_eq!(d["external_id"], mac(1, 5, 0));
    let message = d["message"].as_str().unwrap();
    for part in ["409 conflict", "r0001-pwr0", "r0001-pwr1", &pwr0, &pwr1] {
        assert!(message.contains(part), "{part} in {message}");
    }
    let lower = message.to_lowercase();
    assert!(
        !lower.contains("unique") && !lower.contains("duplicate key"),
        "{message}"
    );
    assert_eq!(h.app.get("/v1/drift?count=exact").await.body["total"], 4);

    // The holder keeps the id; the clashing shelf's other values, and every other row, are
    // recorded.
    let app = &h.app;
    let shelf = |id: String| async move {
        app.get(&format!("/v1/components/{id}")).await.body["component"].clone()
    };
    let (c0, c1) = (shelf(pwr0.clone()).await, shelf(pwr1.clone()).await);
    assert_eq!(c1["external_id"], mac(1, 5, 0));
    assert!(c0["external_id"].is_null(), "{c0}");
    assert_eq!(c0["observed_firmware_version"], "1.1.9");
    assert_eq!(c0["power_state"], "off");
    assert!(c0["last_seen_at"].is_string(), "{c0}");
    let tray = shelf(component_id(&rack, "r0001-gpu00")).await;
    assert_eq!(tray["power_state"], "off");
    assert!(tray["last_seen_at"].is_string(), "{tray}");

    // Two trays reporting one id in one write: the first gets it, the second names it.
    let (gpu0, gpu1) = (
        component_id(&rack, "r0001-gpu00"),
        component_id(&rack, "r0001-gpu01"),
    );
    let sighting = |id: &str| flow::drift::compare::Sighting {
        component_id: id.parse().unwrap(),
        external_id: Some("cloned-board".into()),
        firmware_version: None,
        power: None,
        tray: None,
    };
    let clashes = flow::drift::sightings::record_sightings(
        &h.app.db.db,
        &[sighting(&gpu0), sighting(&gpu1)],
        chrono::Utc::now(),
    )
    .await
    .unwrap();
    assert_eq!(clashes.len(), 1, "{clashes:?}");
    let error = clashes[0].error();
    let text = error.to_string();
    let problem = flow::api::problem::Problem::from(error);
    assert_eq!((problem.status, problem.code.as_str()), (409, "duplicate"));
    assert_eq!(problem.detail, text);
    assert!(
        text.contains("r0001-gpu01")
            && text.contains("r0001-gpu00")
            && text.contains("cloned-board"),
        "{text}"
    );
    assert_eq!(shelf(gpu0).await["external_id"], "cloned-board");
    assert!(shelf(gpu1).await["external_id"].is_null());
}

/// Drift rows as (source, kind, component, address), sorted: what two syncs must agree on.
async fn drift_rows(app: &TestApp) -> Vec<(String, String, String, String)> {
    let r = app.get("/v1/drift?limit=100").await;
    let mut rows: Vec<_> = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let s = |k: &str| d[k].as_str().unwrap_or_default().to_string();
            (s("source"), s("kind"), s("component_id"), s("address"))
        })
        .collect();
    rows.sort();
    rows
}

async fn a_sync_one_device_at_a_time_records_what_a_single_pass_does(h: Harness) {
    let rack = h.drifted_rack().await;
    // Pages of one: the stray is found by elimination across pages, and a shelf PSM has is
    // claimed by its own page, never reported as unexpected because another page lacked it.
    match h.sync().with_page(1).run_once("a").await.unwrap() {
        SyncRun::Ran {
            drift, unreachable, ..
        } => {
            assert_eq!(drift, 3);
            assert!(unreachable.is_empty());
        }
        other => panic!("{other:?}"),
    }
    let paged = drift_rows(&h.app).await;
    let kinds: Vec<&str> = paged.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(kinds, ["mismatch", "missing", "unexpected"], "{paged:?}");
    assert_eq!(paged[2].3, STRAY);
    let shelf_calls: Vec<_> = h
        .psm
        .calls()
        .into_iter()
        .filter(|c| c.rpc == "GetPowershelves")
        .collect();
    assert_eq!(
        shelf_calls.len(),
        3,
        "one listing, then one call per shelf page"
    );
    assert!(shelf_calls[1..].iter().all(|c| c.macs.len() == 1));
    let pwr0 = component_id(&rack, "r0001-pwr0");
    let c = h.app.get(&format!("/v1/components/{pwr0}")).await;
    assert_eq!(c.body["component"]["observed_firmware_version"], "1.1.9");

    h.sync().run_once("a").await.unwrap();
    assert_eq!(
        drift_rows(&h.app).await,
        paged,
        "one page finds the same drift"
    );
}

async fn two_processes_syncing_at_once_write_once(h: Harness) {
    h.drifted_rack().await;
    let (a, b) = (h.sync(), h.sync());
    let (ra, rb) = tokio::join!(a.run_once("process-a"), b.run_once("process-b"));
    let runs = [ra.unwrap(), rb.unwrap()];
    let ran = runs
        .iter()
        .filter(|r| matches!(r, SyncRun::Ran { .. }))
        .count();
    assert_eq!(ran, 1, "exactly one process syncs: {runs:?}");
    assert!(runs.contains(&SyncRun::Skipped));
    assert_eq!(h.app.count_rows("component_drifts").await, 3);
    let asked = h
        .psm
        .calls()
        .into_iter()
        .filter(|c| c.rpc == "GetPowershelves")
        .count();
    assert_eq!(
        asked, 2,
        "the winner listed PSM's shelves and asked for its page; the skipped process did not ask"
    );
    // The holder keeps the lease; the other keeps being skipped until it lapses or is given up.
    let winner = if matches!(runs[0], SyncRun::Ran { .. }) {
        "process-a"
    } else {
        "process-b"
    };
    let loser = if winner == "process-a" {
        "process-b"
    } else {
        "process-a"
    };
    assert_eq!(b.run_once(loser).await.unwrap(), SyncRun::Skipped);
    assert!(matches!(
        a.run_once(winner).await.unwrap(),
        SyncRun::Ran { .. }
    ));
    a.release(winner).await.unwrap();
    assert!(matches!(
        b.run_once(loser).await.unwrap(),
        SyncRun::Ran { .. }
    ));
    assert_eq!(h.app.count_rows("component_drifts").await, 3);
}

async fn bad_validation_input_is_refused_naming_the_field(h: Harness) {
    h.drifted_rack().await;
    let r = h
        .app
        .post(
            "/v1/validation",
            &json!({"target_spec": {"racks": [{"name": "nope"}]}}),
        )
        .await;
    r.assert_problem(400, "invalid_input");
    assert_eq!(r.error_fields(), ["target_spec.racks[0]"]);
    let r = h
        .app
        .post("/v1/validation", &json!({"target_spec": {"racks": []}}))
        .await;
    r.assert_problem(400, "invalid_input");
    assert_eq!(r.error_fields(), ["target_spec.racks"]);
    let r = h.app.post("/v1/validation", &json!({"targets": {}})).await;
    r.assert_problem(400, "invalid_input");
    let r = h
        .app
        .get("/v1/racks/0192f3a0-0000-7000-8000-000000000001/validation")
        .await;
    r.assert_problem(404, "not_found");
    let r = h.app.get("/v1/racks/nope/validation").await;
    r.assert_problem(400, "invalid_input");
    let r = h.app.get("/v1/drift?kind=gone").await;
    assert_eq!(r.status, 400, "{}", r.text);
    let r = h.app.get("/v1/drift?type=gpu").await;
    assert_eq!(r.status, 400, "{}", r.text);
    let r = h.app.get("/v1/drift?rack=nope").await;
    r.assert_problem(404, "not_found");
    let r = h.app.post("/v1/validation", &json!({})).await;
    assert_eq!(
        r.status, 200,
        "an empty object validates everything: {}",
        r.text
    );
    assert_eq!(h.app.count_rows("component_drifts").await, 0);
}

async fn flow_rack_validate_prints_the_differences_and_exits_1(h: Harness) {
    h.drifted_rack().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let router = h.app.router.clone();
    tokio::spawn(async move { axum::serve(listener, router).await });
    let run = |args: &'static [&'static str]| {
        let url = url.clone();
        async move {
            tokio::process::Command::new(env!("CARGO_BIN_EXE_flow"))
                .args(args)
                .env("FLOW_URL", url)
                .env_remove("FLOW_TOKEN")
                .output()
                .await
                .expect("run flow")
        }
    };
    let table = run(&["rack", "validate", "rack-0001"]).await;
    let stdout = String::from_utf8_lossy(&table.stdout);
    assert_eq!(table.status.code(), Some(1), "differences exit 1: {stdout}");
    assert!(stdout.contains("mismatch"), "{stdout}");
    assert!(
        stdout.contains("firmware_version: 1.2.0 != 1.1.9"),
        "{stdout}"
    );
    let json = run(&["-o", "json", "rack", "validate", "rack-0001"]).await;
    let body: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(body["summary"]["missing"], 1);
    h.psm.add_shelf(&mac(1, 6, 0));
    h.psm.set_firmware(&mac(1, 5, 0), "1.2.0");
    let clean = run(&["rack", "validate", "rack-0001"]).await;
    assert_eq!(
        clean.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&clean.stdout)
    );
    let unknown = run(&["rack", "validate", "rack-9999"]).await;
    assert_ne!(unknown.status.code(), Some(0));
}

async fn a_sync_after_a_power_off_operation_observes_the_power_off(ops: Ops) {
    let rack = ops.app.create_rack(&gb200_rack(1, 2)).await;
    let psm = ops.psm.as_ref().unwrap();
    for idx in [5, 6] {
        psm.add_shelf(&mac(1, idx, 0));
    }
    let sync = DriftSync::new(
        ops.app.db.db.clone(),
        Observer::new(ops.registry.clone(), OBSERVE_TIMEOUT),
        Arc::new(SystemClock),
        Duration::from_secs(120),
    );
    let power_of = |name: &'static str| {
        let id = component_id(&rack, name);
        let app = &ops.app;
        async move {
            app.get(&format!("/v1/components/{id}")).await.body["component"]["power_state"].clone()
        }
    };
    let target = json!({"target_spec": {"racks": [{"name": "rack-0001"}]}});
    for (operation, state) in [("power-on", "on"), ("power-off", "off")] {
        let r = ops.operate(operation, &target).await;
        assert_eq!(r.status, 202, "{}", r.text);
        let id = r.body["task_ids"][0].as_str().unwrap().to_string();
        let task = ops.wait_end(&id).await;
        assert_eq!(task["status"], "succeeded", "{task}");
        assert!(matches!(
            sync.run_once("test").await.unwrap(),
            SyncRun::Ran { .. }
        ));
        for name in ["r0001-pwr0", "r0001-pwr1", "r0001-nvsw0", "r0001-gpu01"] {
            assert_eq!(power_of(name).await, state, "{name} after {operation}");
        }
    }
    let r = ops
        .app
        .get(&format!("/v1/racks/{}", rack["id"].as_str().unwrap()))
        .await;
    assert_eq!(
        r.body["drift"],
        json!({"missing": 0, "unexpected": 0, "mismatch": 0, "unreachable": 0, "rejected": 0, "stale": 0})
    );
}

/// Two racks of one NVLink domain whose compute trays run 1.0.0 and 2.0.0 (the simulator runs
/// what the inventory expects): no device differs from its record, but the domain is mixed.
async fn a_domain_whose_racks_run_different_firmware_is_domain_mixed_in_validation_sync_and_domain(
    h: Harness,
) {
    for (i, version) in [(1, "1.0.0"), (2, "2.0.0")] {
        let mut body = gb200_rack(i, 1);
        for c in body["components"].as_array_mut().unwrap() {
            if c["type"] == "compute" {
                c["firmware_version"] = json!(version);
            }
        }
        h.app.create_rack(&body).await;
    }
    let r = h
        .app
        .post("/v1/nvl-domains", &json!({"name": "nvl-a"}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let r = h
        .app
        .post(
            "/v1/nvl-domains/nvl-a/racks",
            &json!({"racks": [{"name": "rack-0001"}, {"name": "rack-0002"}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    let r = h.app.post_empty("/v1/validation").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["summary"]["domain_mixed"], 1, "{}", r.text);
    let mixed = diffs_of(&r.body, "domain_mixed");
    assert_eq!(mixed.len(), 1);
    assert_eq!(mixed[0]["type"], "compute");
    let fields = mixed[0]["fields"].as_array().unwrap();
    assert_eq!(fields.len(), 2, "{}", mixed[0]);
    assert_eq!(fields[0]["field"], "rack:rack-0001");
    assert_eq!(fields[0]["actual"], "1.0.0");
    assert_eq!(fields[1]["field"], "rack:rack-0002");
    assert_eq!(fields[1]["actual"], "2.0.0");
    assert!(mixed[0]["message"].as_str().unwrap().contains("nvl-a"));
    // The sync records it, with the versions by rack.
    let sync = h.sync();
    assert!(matches!(
        sync.run_once("a").await.unwrap(),
        SyncRun::Ran { .. }
    ));
    // Validating one rack of the domain reports the domain too: the versions just seen on it
    // against those the sync recorded for the others.
    let r = h
        .app
        .post(
            "/v1/validation",
            &json!({"target_spec": {"racks": [{"name": "rack-0001"}]}}),
        )
        .await;
    assert_eq!(r.body["summary"]["domain_mixed"], 1, "{}", r.text);
    let recorded = h.app.get("/v1/drift?kind=domain_mixed&count=exact").await;
    assert_eq!(recorded.status, 200, "{}", recorded.text);
    assert_eq!(recorded.body["total"], 1, "{}", recorded.text);
    let record = &recorded.body["items"][0];
    assert_eq!(record["source"], "nvl-domains");
    assert_eq!(record["fields"].as_array().unwrap().len(), 2, "{record}");
    // The domain's answer shows it.
    let domain = h.app.get("/v1/nvl-domains/nvl-a").await;
    assert_eq!(
        domain.body["domain_mixed"],
        json!([{"type": "compute", "versions_by_rack": {"rack-0001": ["1.0.0"], "rack-0002": ["2.0.0"]}}]),
        "{}",
        domain.text
    );
    // So does the console: the drift page filtered to the kind, and the domain's page.
    let page = h.app.get("/ui/drift?kind=domain_mixed").await;
    assert_eq!(page.status, 200, "{}", page.text);
    for shown in ["domain_mixed", "rack-0001", "rack-0002", "1.0.0", "2.0.0"] {
        assert!(
            page.text.contains(shown),
            "drift page lacks {shown}: {}",
            page.text
        );
    }
    let page = h.app.get("/ui/nvl-domains/nvl-a").await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.text.contains("role=\"alert\""), "{}", page.text);
    assert!(
        page.text
            .contains("rack-0002: <span class=\"mono\">2.0.0</span>"),
        "{}",
        page.text
    );
    // Detaching the odd rack makes the domain consistent: the next sync drops the record.
    let r = h.app.delete("/v1/nvl-domains/nvl-a/racks/rack-0001").await;
    assert_eq!(r.status, 204, "{}", r.text);
    sync.run_once("a").await.unwrap();
    let after = h.app.get("/v1/drift?kind=domain_mixed&count=exact").await;
    assert_eq!(after.body["total"], 0, "{}", after.text);
    let domain = h.app.get("/v1/nvl-domains/nvl-a").await;
    assert_eq!(domain.body["domain_mixed"], json!([]));
}

//! A worker killed (SIGKILL) in the middle of a multi-rack operation: once another worker runs,
//! every rack's task succeeds. (`durability` follows one task's retried step in detail.)

use std::time::Duration;

use serde_json::json;

use super::support::{FlowProcess, Http, eventually, free_port};
use crate::support::fixtures::gb200_rack;
use crate::support::ops::temporal_address;
use crate::support::{Backend, TestDb};

const RACKS: u32 = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_task_succeeds_after_the_worker_is_killed_mid_operation() {
    tokio::time::timeout(Duration::from_secs(240), async {
        let db = TestDb::new(Backend::Sqlite).await;
        let port = free_port();
        let slow: Vec<String> = (1..=RACKS)
            .map(|n| format!("SN-{n:04}-compute-00"))
            .collect();
        let vars = vec![
            ("FLOW_DATABASE_URL", db.url.clone()),
            ("FLOW_TEMPORAL_ADDRESS", temporal_address()),
            (
                "FLOW_TEMPORAL_TASK_QUEUE",
                format!("fault-{}", uuid::Uuid::new_v4().simple()),
            ),
            ("FLOW_LISTEN", format!("127.0.0.1:{port}")),
            // The compute trays answer slowly, so the kill lands while their steps run.
            ("FLOW_SIM_SLOW_SERIALS", slow.join(",")),
            ("FLOW_SIM_SLOW_MS", "5000".to_string()),
        ];
        let api = FlowProcess::spawn(&["serve", "--no-worker"], &vars);
        let mut first = FlowProcess::spawn(&["worker"], &vars);
        let http = Http::new(port);
        http.wait_up(&api).await;
        let mut racks = Vec::new();
        for n in 1..=RACKS {
            let created = http
                .call("POST", "/v1/expected-racks", Some(&gb200_rack(n, 1)))
                .await;
            assert_eq!(created.status, 201, "{created:?}");
            racks.push(json!({"name": format!("rack-{n:04}")}));
        }
        let body = json!({"target_spec": {"racks": racks}});
        let accepted = eventually(Duration::from_secs(30), "the operation is accepted", || {
            let body = body.clone();
            let http = http.clone();
            async move {
                let a = http
                    .call("POST", "/v1/operations/power-on", Some(&body))
                    .await;
                (a.status == 202).then_some(a)
            }
        })
        .await;
        let ids: Vec<String> = accepted.body["task_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| id.as_str().unwrap().to_string())
            .collect();
        assert_eq!(ids.len(), RACKS as usize, "{:?}", accepted.body);

        // Kill while every task runs and a (slow) compute step is under way.
        eventually(
            Duration::from_secs(60),
            "the operation is under way",
            || {
                let http = http.clone();
                let ids = ids.clone();
                async move {
                    let mut computing = false;
                    for id in &ids {
                        let task = http
                            .call("GET", &format!("/v1/tasks/{id}"), None)
                            .await
                            .body;
                        if task["status"] != "running" {
                            return None;
                        }
                        computing |= task["stages"].as_array().is_some_and(|stages| {
                            stages.iter().any(|s| {
                                s["component_types"][0] == "compute"
                                    && s["components"][0]["status"] == "running"
                            })
                        });
                    }
                    computing.then_some(())
                }
            },
        )
        .await;
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &first.pid().to_string()])
            .status();
        first.wait(Duration::from_secs(10)).await.expect("killed");

        let _second = FlowProcess::spawn(&["worker"], &vars);
        for id in &ids {
            let task = http.wait_task_end(id, Duration::from_secs(120)).await;
            assert_eq!(task["status"], "succeeded", "{task}");
        }
    })
    .await
    .expect("bounded in time");
}

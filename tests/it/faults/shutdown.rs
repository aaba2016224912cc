//! SIGTERM while a task's or a rollout's event stream is open: the stream ends with a `shutdown` event and the
//! process exits within its grace period, not when the task ends.

use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;

use super::support::{FlowProcess, Http, free_port};
use crate::support::fixtures::gb200_rack;
use crate::support::ops::temporal_address;
use crate::support::{Backend, TestDb};

const GRACE_SECS: u64 = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_an_open_event_stream_exits_within_the_grace_period() {
    tokio::time::timeout(Duration::from_secs(180), async {
        let db = TestDb::new(Backend::Sqlite).await;
        let port = free_port();
        let queue = format!("fault-{}", uuid::Uuid::new_v4().simple());
        let vars = vec![
            ("FLOW_DATABASE_URL", db.url.clone()),
            // The shared server is only used, never stopped.
            ("FLOW_TEMPORAL_ADDRESS", temporal_address()),
            ("FLOW_TEMPORAL_TASK_QUEUE", queue),
            ("FLOW_LISTEN", format!("127.0.0.1:{port}")),
            ("FLOW_SHUTDOWN_GRACE_SECS", GRACE_SECS.to_string()),
            // The compute tray takes a minute: the task outlives the grace period by far.
            ("FLOW_SIM_SLOW_SERIALS", "SN-0001-compute-00".to_string()),
            ("FLOW_SIM_SLOW_MS", "60000".to_string()),
        ];
        let mut api = FlowProcess::spawn(&["serve", "--no-worker"], &vars);
        let _worker = FlowProcess::spawn(&["worker"], &vars);
        let http = Http::new(port);
        http.wait_up(&api).await;
        let created = http
            .call("POST", "/v1/expected-racks", Some(&gb200_rack(1, 1)))
            .await;
        assert_eq!(created.status, 201, "{created:?}");
        let accepted = super::support::eventually(
            Duration::from_secs(30),
            "the operation is accepted",
            || async {
                let a = http
                    .call(
                        "POST",
                        "/v1/operations/power-on",
                        Some(&json!({"target_spec": {"racks": [{"name": "rack-0001"}]}})),
                    )
                    .await;
                (a.status == 202).then_some(a)
            },
        )
        .await;
        let id = accepted.body["task_ids"][0].as_str().unwrap().to_string();

        let mut stream = http
            .client()
            .get(http.url(&format!("/v1/tasks/{id}/events")))
            .timeout(Duration::from_secs(120))
            .send()
            .await
            .expect("open the event stream");
        assert_eq!(stream.status(), 200);
        let first = stream.chunk().await.unwrap().unwrap_or_default();
        assert!(
            String::from_utf8_lossy(&first).contains("event: task"),
            "{first:?}"
        );

        let signalled = Instant::now();
        api.terminate();
        let mut rest = String::new();
        while let Ok(Some(chunk)) = stream.chunk().await {
            rest.push_str(&String::from_utf8_lossy(&chunk));
        }
        assert!(
            rest.contains("event: shutdown"),
            "the stream's last event: {rest}"
        );
        let status = api
            .wait(Duration::from_secs(GRACE_SECS + 5))
            .await
            .unwrap_or_else(|| panic!("flow still runs after the grace period:\n{}", api.output()));
        assert!(
            signalled.elapsed() < Duration::from_secs(GRACE_SECS + 5),
            "exit took {:?}",
            signalled.elapsed()
        );
        assert!(status.success(), "{status}:\n{}", api.output());
        let task = http.try_call("GET", &format!("/v1/tasks/{id}"), None).await;
        assert!(task.is_none(), "the API no longer answers");
    })
    .await
    .expect("bounded in time");
}

/// A rollout's event stream ends on SIGTERM the way a task's does: a `shutdown` event, and the
/// process exits within its grace period while the rollout still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_an_open_rollout_stream_exits_within_the_grace_period() {
    tokio::time::timeout(Duration::from_secs(180), async {
        let db = TestDb::new(Backend::Sqlite).await;
        let port = free_port();
        let queue = format!("fault-{}", uuid::Uuid::new_v4().simple());
        let vars = vec![
            ("FLOW_DATABASE_URL", db.url.clone()),
            ("FLOW_TEMPORAL_ADDRESS", temporal_address()),
            ("FLOW_TEMPORAL_TASK_QUEUE", queue),
            ("FLOW_LISTEN", format!("127.0.0.1:{port}")),
            ("FLOW_SHUTDOWN_GRACE_SECS", GRACE_SECS.to_string()),
            ("FLOW_SIM_SLOW_SERIALS", "SN-0001-compute-00".to_string()),
            ("FLOW_SIM_SLOW_MS", "60000".to_string()),
        ];
        let mut api = FlowProcess::spawn(&["serve", "--no-worker"], &vars);
        let _worker = FlowProcess::spawn(&["worker"], &vars);
        let http = Http::new(port);
        http.wait_up(&api).await;
        let created = http
            .call("POST", "/v1/expected-racks", Some(&gb200_rack(1, 1)))
            .await;
        assert_eq!(created.status, 201, "{created:?}");
        let rollout = json!({
            "name": "held",
            "operation": {"kind": "power_on"},
            "target_spec": {"racks": [{"name": "rack-0001"}], "component_types": ["compute"]},
            "strategy": {"batch_size": 1},
        });
        let started = super::support::eventually(
            Duration::from_secs(30),
            "the rollout is created",
            || async {
                let a = http.call("POST", "/v1/rollouts", Some(&rollout)).await;
                (a.status == 201).then_some(a)
            },
        )
        .await;
        let id = started.body["id"].as_str().unwrap().to_string();
        let mut stream = http
            .client()
            .get(http.url(&format!("/v1/rollouts/{id}/events")))
            .timeout(Duration::from_secs(120))
            .send()
            .await
            .expect("open the event stream");
        assert_eq!(stream.status(), 200);
        let first = stream.chunk().await.unwrap().unwrap_or_default();
        assert!(
            String::from_utf8_lossy(&first).contains("event: rollout"),
            "{first:?}"
        );

        let signalled = Instant::now();
        api.terminate();
        let mut rest = String::new();
        while let Ok(Some(chunk)) = stream.chunk().await {
            rest.push_str(&String::from_utf8_lossy(&chunk));
        }
        assert!(rest.contains("event: shutdown"), "the stream's end: {rest}");
        let status = api
            .wait(Duration::from_secs(GRACE_SECS + 5))
            .await
            .unwrap_or_else(|| panic!("flow still runs after the grace period:\n{}", api.output()));
        assert!(
            signalled.elapsed() < Duration::from_secs(GRACE_SECS),
            "the stream held the shutdown: {:?}",
            signalled.elapsed()
        );
        assert!(status.success(), "{status}:\n{}", api.output());
    })
    .await
    .expect("bounded in time");
}

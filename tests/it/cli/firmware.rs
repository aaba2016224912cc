//! `flow firmware upgrade` touches only what it was told: `--version-for TYPE=VERSION` plans and
//! upgrades those types only; without `--yes` it prints the plan and starts nothing unless
//! confirmed. Exit codes for auth failures and a malformed `--url`.

use std::io::Write;
use std::time::Duration;

use serde_json::Value;

use super::{example_rack, flow, serve, serve_router};
use crate::ops_on_both_backends;
use crate::support::ops::{Ops, OpsBuilder};

ops_on_both_backends!(
    version_for_upgrades_only_the_types_named_and_asks_first_unless_yes: |b: OpsBuilder| b.sim(|s| {
        s.latency = Duration::from_millis(5);
    }),
);

/// `flow ARGS` with `answer` typed on stdin.
fn flow_answering(url: &str, args: &[&str], answer: &str) -> super::Run {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_flow"))
        .args(args)
        .env("FLOW_URL", url)
        .env_remove("FLOW_TOKEN")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answer.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    super::Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn task_types(task: &Value) -> Vec<String> {
    let mut types: Vec<String> = task["stages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["components"].as_array().unwrap())
        .map(|c| c["type"].as_str().unwrap_or_default().to_string())
        .collect();
    types.sort();
    types.dedup();
    types
}

async fn version_for_upgrades_only_the_types_named_and_asks_first_unless_yes(ops: Ops) {
    let url = serve(&ops).await;
    ops.app.create_rack(&example_rack()).await;
    let upgrade = [
        "firmware",
        "upgrade",
        "--rack",
        "g10",
        "--version-for",
        "compute=1.4.2",
    ];

    // Not confirmed (no terminal, end of input): the plan is shown, nothing starts.
    let declined = flow(&url, &upgrade).await;
    assert_eq!(declined.code, 2, "{declined:#?}");
    assert!(declined.stderr.contains("not confirmed"), "{declined:#?}");
    assert!(
        declined.stdout.contains("compute"),
        "the plan: {declined:#?}"
    );
    assert!(!declined.stdout.contains("nvswitch"), "{declined:#?}");
    let no = flow_answering(&url, &upgrade, "n\n");
    assert_eq!(no.code, 2, "{no:#?}");
    let listed = ops.app.get("/v1/tasks?count=exact").await;
    assert_eq!(listed.body["total"], 0, "{}", listed.text);

    // Confirmed: one task, and it holds only compute trays.
    let yes = flow_answering(&url, &upgrade, "y\n");
    assert_eq!(yes.code, 0, "{yes:#?}");
    let listed = ops.app.get("/v1/tasks?count=exact").await;
    assert_eq!(listed.body["total"], 1, "{}", listed.text);
    let task = listed.body["items"][0]["id"].as_str().unwrap().to_string();
    let end = ops.wait_end(&task).await;
    assert_eq!(end["status"], "succeeded", "{end:#}");
    assert_eq!(task_types(&end), ["compute"], "{end:#}");

    // The API alike: a per-type object plans only its types.
    let body = serde_json::json!({"target_spec": {"racks": [{"name": "g10"}]},
        "target_version": {"nvswitch": "1.4.2"}});
    let r = ops
        .app
        .post("/v1/operations/firmware-upgrade?dry_run=true", &body)
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(task_types(&r.body["racks"][0]), ["nvswitch"], "{}", r.text);
}

#[tokio::test]
async fn auth_failures_exit_7_and_a_url_without_a_scheme_is_a_usage_error() {
    let refuse = |status: u16| {
        axum::Router::new().fallback(move || async move {
            (
                axum::http::StatusCode::from_u16(status).unwrap(),
                [("content-type", "application/problem+json")],
                format!(r#"{{"title":"refused","status":{status}}}"#),
            )
        })
    };
    for status in [401, 403] {
        let url = serve_router(refuse(status)).await;
        let run = flow(&url, &["rack", "list"]).await;
        assert_eq!(run.code, 7, "{status}: {run:#?}");
    }
    for bad in [
        "localhost:8080",
        "127.0.0.1:8080",
        "http://",
        "ftp://127.0.0.1",
    ] {
        let run = flow(bad, &["rack", "list"]).await;
        assert_eq!(run.code, 2, "{bad}: {run:#?}");
        assert!(run.stderr.contains("FLOW_URL"), "{bad}: {run:#?}");
        assert!(!run.stderr.contains("unreachable"), "{bad}: {run:#?}");
    }
}

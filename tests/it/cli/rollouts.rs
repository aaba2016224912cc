//! `flow rollout …` as the real binary: plan, create, approve, watch (exit code from the
//! outcome), get, list, and bad input mapped to its exit code.

use std::time::Duration;

use super::{flow, serve};
use crate::ops_on_both_backends;
use crate::rollouts::{make_racks, wait_rollout, wait_status};
use crate::support::ops::{Ops, OpsBuilder};

ops_on_both_backends!(
    the_rollout_cli_plans_creates_approves_and_watches_a_rollout_to_its_exit_code: |b: OpsBuilder| b.sim(|s| {
        s.fail_serials.insert("SN-0004-compute-00".into());
        s.latency = Duration::from_millis(20);
    }),
);

async fn the_rollout_cli_plans_creates_approves_and_watches_a_rollout_to_its_exit_code(ops: Ops) {
    make_racks(&ops.app, 4).await;
    let url = serve(&ops).await;
    let base = [
        "rollout",
        "create",
        "--name",
        "cli-rollout",
        "--operation",
        "power_on",
        "--rack",
        "rack-0001",
        "--rack",
        "rack-0002",
        "--rack",
        "rack-0003",
        "--types",
        "compute",
        "--canary",
        "1",
        "--batch-size",
        "2",
    ];
    let with = |extra: &[&'static str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        args
    };

    let plan = flow(&url, &with(&["--dry-run", "-o", "json"])).await;
    assert_eq!(plan.code, 0, "{plan:#?}");
    assert_eq!(plan.json()["total_racks"], 3);
    assert_eq!(
        plan.json()["waves"][1]["racks"].as_array().unwrap().len(),
        2
    );
    let table = flow(&url, &with(&["--dry-run"])).await;
    assert!(table.stdout.contains("1 canary"), "{table:#?}");

    let bad = flow(&url, &with(&["--max-failed-racks=-1"])).await;
    assert_eq!(bad.code, 5, "invalid input: {bad:#?}");
    assert!(
        bad.stderr
            .contains("strategy.failure_budget.max_failed_racks"),
        "{bad:#?}"
    );

    let created = flow(&url, &with(&["--approval", "-o", "json"])).await;
    assert_eq!(created.code, 0, "{created:#?}");
    let id = created.json()["id"].as_str().unwrap().to_string();
    wait_status(&ops.app, &id, "awaiting_approval").await;
    let listed = flow(&url, &["rollout", "list", "--status", "awaiting_approval"]).await;
    assert!(listed.stdout.contains("cli-rollout"), "{listed:#?}");
    pause_and_resume_at_the_approval_gate(&ops, &url, &id).await;
    let watched = flow(&url, &["rollout", "watch", &id]).await;
    assert_eq!(watched.code, 0, "{watched:#?}");
    assert!(
        watched.stderr.contains("wave 2"),
        "progress per wave: {watched:#?}"
    );
    let shown = flow(&url, &["rollout", "get", &id]).await;
    assert!(shown.stdout.contains("succeeded"), "{shown:#?}");
    assert!(shown.stdout.contains("rack-0003"), "{shown:#?}");

    // A halted rollout makes `--watch` exit 1.
    let halted = flow(
        &url,
        &[
            "rollout",
            "create",
            "--name",
            "cli-halt",
            "--operation",
            "power_on",
            "--rack",
            "rack-0004",
            "--types",
            "compute",
            "--max-failed-racks",
            "0",
            "--watch",
        ],
    )
    .await;
    assert_eq!(halted.code, 1, "{halted:#?}");
    let missing = flow(&url, &["rollout", "get", &uuid::Uuid::new_v4().to_string()]).await;
    assert_eq!(missing.code, 3, "{missing:#?}");
}

/// The `status` line of `flow rollout …`'s text output.
fn status_of(out: &str) -> &str {
    out.lines()
        .find_map(|l| l.strip_prefix("status"))
        .map_or("", str::trim)
}

/// Pause and resume print the state the command led to: at the approval gate a pause shows
/// `paused` and its resume returns to `awaiting_approval`; an approval while paused keeps the
/// rollout paused until resumed, then it runs on. Each command is audited with that status.
async fn pause_and_resume_at_the_approval_gate(ops: &Ops, url: &str, id: &str) {
    let steer = |command: &'static str| {
        let id = id.to_string();
        async move {
            let out = flow(url, &["rollout", command, &id]).await;
            assert_eq!(out.code, 0, "{command}: {out:#?}");
            assert!(out.stderr.is_empty(), "settled: {out:#?}");
            out.stdout
        }
    };
    let paused = steer("pause").await;
    assert_eq!(status_of(&paused), "paused", "{paused}");
    assert!(paused.contains("approval gate"), "{paused}");
    let resumed = steer("resume").await;
    assert_eq!(status_of(&resumed), "awaiting_approval", "{resumed}");
    assert_eq!(status_of(&steer("pause").await), "paused");
    let approved = steer("approve").await;
    assert_eq!(status_of(&approved), "paused", "{approved}");
    // The run took the approval and holds before wave 2, still paused.
    wait_rollout(&ops.app, id, 60, |r| {
        r["status"] == "paused"
            && r["message"]
                .as_str()
                .unwrap_or("")
                .contains("before wave 2")
    })
    .await;
    let resumed = steer("resume").await;
    assert_ne!(status_of(&resumed), "paused", "{resumed}");
    assert_ne!(status_of(&resumed), "awaiting_approval", "{resumed}");

    let log = ops
        .app
        .get(&format!("/v1/audit?resource=rollout:{id}&limit=100"))
        .await;
    assert_eq!(log.status, 200, "{}", log.text);
    let mut steering: Vec<(String, String, String)> = log.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["after"]["command"].is_string())
        .map(|row| {
            let s = |v: &serde_json::Value| v.as_str().unwrap().to_string();
            (
                row["id"].as_str().unwrap_or_default().to_string(),
                format!(
                    "{} {}",
                    s(&row["after"]["command"]),
                    s(&row["before"]["status"])
                ),
                s(&row["after"]["status"]),
            )
        })
        .collect();
    steering.sort();
    let steps: Vec<(&str, &str)> = steering
        .iter()
        .map(|(_, a, b)| (a.as_str(), b.as_str()))
        .collect();
    assert_eq!(
        steps,
        [
            ("pause awaiting_approval", "paused"),
            ("resume paused", "awaiting_approval"),
            ("pause awaiting_approval", "paused"),
            ("approve paused", "paused"),
            ("resume paused", "running"),
        ],
        "{}",
        log.body
    );
}

//! The README runs as written: its blocks marked `sh run` are executed in order, as one bash
//! script (`set -euo pipefail`, variables carried from block to block), from the repository root
//! against a fresh `flow dev` child, so an example that drifts from the service fails here.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::dev::{FlowDev, free_port, http};
use crate::support::ops::temporal_address;

const README: &str = include_str!("../../README.md");
/// Problem codes the walk-through shows on purpose (a power-on refused while the rack is busy).
const SHOWN_PROBLEMS: &[&str] = &["rack_busy"];

/// Every fenced block: (its info string, its body).
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_string(), String::new())),
            (Some(_), Some("")) => out.extend(open.take()),
            (Some((_, body)), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

#[test]
fn the_readme_has_no_empty_code_block() {
    for (info, body) in blocks(README) {
        assert!(!body.trim().is_empty(), "an empty ```{info} block");
    }
}

/// The problem codes a transcript shows (`"code":"…"` in any JSON spacing).
fn problem_codes(transcript: &str) -> Vec<String> {
    let mut codes = Vec::new();
    let mut rest = transcript;
    while let Some(at) = rest.find("\"code\"") {
        rest = &rest[at + 6..];
        let value = rest.trim_start().trim_start_matches(':').trim_start();
        if let Some(v) = value.strip_prefix('"') {
            codes.push(v.split('"').next().unwrap_or_default().to_string());
        }
    }
    codes
}

#[test]
fn the_readme_walk_through_runs_as_written() {
    let script: Vec<String> = blocks(README)
        .into_iter()
        .filter(|(info, _)| info == "sh run")
        .map(|(_, body)| body)
        .collect();
    assert!(
        script.len() >= 7,
        "the README's `sh run` blocks: {}",
        script.len()
    );

    let port = free_port();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dev = FlowDev::start(
        &path,
        &[
            ("FLOW_LISTEN", format!("127.0.0.1:{port}")),
            ("FLOW_TEMPORAL_ADDRESS", temporal_address()),
            // Our own task queue: other Flow workers on the shared server use other databases.
            (
                "FLOW_TEMPORAL_TASK_QUEUE",
                format!("flow-readme-{}", uuid::Uuid::new_v4()),
            ),
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(90);
    while !matches!(http(port, "GET", "/readyz", ""), Ok((200, _))) {
        assert!(
            Instant::now() < deadline,
            "flow dev not ready:\n{}",
            dev.output()
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // The README speaks of the default address; the child listens on a free loopback port.
    let body = script
        .join("\n")
        .replace("localhost:8080", &format!("127.0.0.1:{port}"));
    let bash = Command::new("timeout")
        .args(["300", "bash", "-euo", "pipefail", "-c", &body])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_clear()
        .env("PATH", &path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = bash.wait_with_output().unwrap();
    let transcript = String::from_utf8_lossy(&out.stdout);
    let errors = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the walk-through stopped ({}):\n{transcript}\n{errors}\n{}",
        out.status,
        dev.output()
    );
    let unexpected: Vec<String> = problem_codes(&transcript)
        .into_iter()
        .filter(|c| !SHOWN_PROBLEMS.contains(&c.as_str()))
        .collect();
    assert!(
        unexpected.is_empty(),
        "problems the README does not show: {unexpected:?}\n{transcript}"
    );

    // Where the walk-through left things: its tasks ended as the text says.
    let (_, tasks) = http(port, "GET", "/v1/tasks?limit=50", "").unwrap();
    let ended: Vec<(String, String)> = tasks["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["operation"].as_str().unwrap_or_default().to_string(),
                t["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    for wanted in [("upgrade", "cancelled"), ("power_off", "succeeded")] {
        let wanted = (wanted.0.to_string(), wanted.1.to_string());
        assert!(ended.contains(&wanted), "{wanted:?} not in {ended:?}");
    }
    assert!(
        ended.iter().any(|(op, _)| op == "ingest"),
        "no ingest in {ended:?}"
    );
}

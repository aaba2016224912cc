//! A fresh `flow dev` process, scraped once it is ready: every metric family exists with its
//! known series at zero (so `increase()` and the alerts work before anything happened), the
//! README's metric table lists exactly the families registered, and every metric the dashboard
//! and the alerts query has series (but the on-demand families, e.g. components in
//! maintenance, which have none until something is so). The alerts' `promtool test rules` cases run when promtool
//! is installed (scripts/test installs it).

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

use super::deploy::metric_names;
use crate::dev::{FlowDev, free_port, http};
use crate::support::ops::temporal_address;

fn root() -> &'static str {
    env!("CARGO_MANIFEST_DIR")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", root())).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn scrape(port: u16) -> String {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.split_once("\r\n\r\n").unwrap().1.to_string()
}

/// The metric names of the README's table (its rows start with a `flow_` name).
fn readme_table() -> BTreeSet<String> {
    let readme = read("README.md");
    let section = readme
        .split("**Metrics.**")
        .nth(1)
        .expect("the README's metrics section");
    section
        .lines()
        .skip_while(|l| !l.starts_with("| metric |"))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.strip_prefix("| `flow_"))
        .map(|l| format!("flow_{}", l.split('`').next().unwrap()))
        .collect()
}

#[test]
fn a_fresh_process_serves_every_family_and_series_the_readme_dashboard_and_alerts_name() {
    let port = free_port();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dev = FlowDev::start(
        &path,
        &[
            ("FLOW_LISTEN", format!("127.0.0.1:{port}")),
            ("FLOW_TEMPORAL_ADDRESS", temporal_address()),
            (
                "FLOW_TEMPORAL_TASK_QUEUE",
                format!("flow-fresh-{}", uuid::Uuid::new_v4()),
            ),
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(90);
    while !matches!(http(port, "GET", "/readyz", ""), Ok((200, _))) {
        let exited = dev.child.try_wait().unwrap();
        assert!(
            exited.is_none() && Instant::now() < deadline,
            "flow dev not ready ({exited:?}):\n{}",
            dev.output()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let served = scrape(port);
    let families: BTreeSet<String> = served
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    let on_demand = flow::telemetry::metrics::ON_DEMAND;
    let registered: BTreeSet<String> = flow::telemetry::metrics::NAMES
        .iter()
        .map(|n| n.to_string())
        .collect();
    // A family whose series exist only while what it counts is so (nothing is in maintenance
    // in a fresh process) is listed once it has a series.
    let expected: BTreeSet<String> = registered
        .iter()
        .filter(|n| !on_demand.contains(&n.as_str()))
        .cloned()
        .collect();
    assert_eq!(families, expected, "{served}");
    assert_eq!(
        readme_table(),
        registered,
        "the README's table and the families"
    );

    // The series alerts take increase() of exist before anything happened, at zero.
    for series in [
        "flow_tasks_total{operation=\"power_on\",status=\"succeeded\"} 0",
        "flow_tasks_total{operation=\"upgrade\",status=\"failed\"} 0",
        "flow_task_duration_seconds_count{operation=\"bring_up\"} 0",
        "flow_schedule_fires_total{outcome=\"created\"} 0",
        "flow_temporal_client_errors_total{call=\"start\"} 0",
        "flow_device_calls_total{action=\"set_power\",manager=\"sim\",outcome=\"unreachable\"} 0",
        "flow_device_call_duration_seconds_count{action=\"set_power\",manager=\"sim\"} 0",
        "flow_lookup_batch_size_count 0",
        "flow_step_report_batch_size_count 0",
    ] {
        assert!(served.lines().any(|l| l == series), "{series} in {served}");
    }

    // Every metric the dashboard and alerts query has series in this fresh process.
    let dashboard: serde_json::Value =
        serde_json::from_str(&read("deploy/grafana/dashboards/flow.json")).unwrap();
    let mut queried = BTreeSet::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            queried.extend(metric_names(target["expr"].as_str().unwrap()));
        }
    }
    let alerts: serde_yaml::Value =
        serde_yaml::from_str(&read("deploy/prometheus/alerts.yml")).unwrap();
    for rule in alerts["groups"][0]["rules"].as_sequence().unwrap() {
        queried.extend(metric_names(rule["expr"].as_str().unwrap()));
    }
    for name in queried.iter().filter(|n| !on_demand.contains(&n.as_str())) {
        assert!(
            served
                .lines()
                .any(|l| !l.starts_with('#') && l.starts_with(name.as_str())),
            "{name} is queried but has no series in a fresh process:\n{served}"
        );
    }
}

#[test]
fn every_alert_has_promtool_cases_and_they_pass_when_promtool_is_installed() {
    let alerts: serde_yaml::Value =
        serde_yaml::from_str(&read("deploy/prometheus/alerts.yml")).unwrap();
    let cases = read("deploy/prometheus/alerts.test.yml");
    for rule in alerts["groups"][0]["rules"].as_sequence().unwrap() {
        let name = rule["alert"].as_str().unwrap();
        assert!(
            cases.contains(&format!("alertname: {name}\n")),
            "no promtool case for {name}"
        );
    }
    let Ok(out) = std::process::Command::new("promtool")
        .args(["test", "rules", "deploy/prometheus/alerts.test.yml"])
        .current_dir(root())
        .output()
    else {
        eprintln!("promtool is not installed: the alert cases were not run");
        return;
    };
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

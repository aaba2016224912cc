//! BMC logins: per BMC MAC, per manufacturer, then a default — the most specific wins. The file
//! is re-read when it changes (checked on each look-up) and on demand (SIGHUP), so rotating a
//! password needs no restart.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::SystemTime;

use serde::Deserialize;

use crate::domain::ManagementNetworks;

/// A username and password; the password never leaves through `Debug` or `Display`.
#[derive(Clone, PartialEq, Eq, Deserialize)]
pub struct Login {
    pub username: String,
    pub password: String,
}

impl fmt::Debug for Login {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Login")
            .field("username", &self.username)
            .field("password", &"***")
            .finish()
    }
}

/// What one BMC's entry may say beyond its login: the system to drive when discovery cannot
/// tell (`system = "System_0"`), and how its certificate is checked when the site's CA cannot
/// vouch for its address (`pin_sha256`, `server_name`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BmcOptions {
    /// The `Id` (or `@odata.id`) of the host system among the BMC's `Systems`.
    pub system: Option<String>,
    /// SHA-256 of the leaf certificate's DER, lower-case hex: that certificate and no other.
    pub pin_sha256: Option<String>,
    /// The name the certificate is verified for (with `FLOW_REDFISH_CA_FILE`) instead of the IP.
    pub server_name: Option<String>,
}

/// A `[default]` or `[manufacturer."…"]` entry: a login, and the networks it may be sent to.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginEntry {
    username: String,
    password: String,
    networks: Option<Vec<String>>,
}

/// A `[bmc."…"]` entry: a login and that BMC's options (its `Debug` is the login's, masked).
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct BmcEntry {
    username: String,
    password: String,
    networks: Option<Vec<String>>,
    system: Option<String>,
    pin_sha256: Option<String>,
    server_name: Option<String>,
}

impl fmt::Debug for BmcEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BmcEntry")
            .field("login", &self.login().0)
            .field("system", &self.system)
            .finish()
    }
}

impl fmt::Debug for LoginEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("LoginEntry").field(&self.login().0).finish()
    }
}

/// A login and the networks its entry confines it to (`None`: the management network's).
type Scoped = (Login, Option<Vec<String>>);

impl LoginEntry {
    fn login(&self) -> Scoped {
        let login = Login {
            username: self.username.clone(),
            password: self.password.clone(),
        };
        (login, self.networks.clone())
    }
}

impl BmcEntry {
    fn login(&self) -> Scoped {
        let login = Login {
            username: self.username.clone(),
            password: self.password.clone(),
        };
        (login, self.networks.clone())
    }
}

/// `AB:CD:…`, `abcd…` or `ab cd …` → 64 lower-case hex digits, or `None`.
pub fn normal_pin(pin: &str) -> Option<String> {
    let hex: String = pin
        .chars()
        .filter(|c| !matches!(c, ':' | ' '))
        .collect::<String>()
        .to_ascii_lowercase();
    (hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit())).then_some(hex)
}

/// The file's shape: `[default]`, `[manufacturer."NVIDIA"]`, `[bmc."aa:bb:cc:dd:ee:ff"]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLogins {
    default: Option<LoginEntry>,
    #[serde(default)]
    manufacturer: HashMap<String, LoginEntry>,
    #[serde(default)]
    bmc: HashMap<String, BmcEntry>,
}

impl FileLogins {
    /// Keys are compared in one spelling: lower case, MACs with colons.
    fn normalised(mut self) -> Self {
        self.manufacturer = self
            .manufacturer
            .into_iter()
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v))
            .collect();
        self.bmc = self
            .bmc
            .into_iter()
            .map(|(k, v)| (normal_mac(&k), v))
            .collect();
        self
    }

    /// Every `networks` list parses and every pin is a SHA-256; an error names the entry only.
    fn check(&self) -> Result<(), String> {
        let scoped = self
            .default
            .iter()
            .map(|e| ("[default]".to_string(), &e.networks))
            .chain(
                self.manufacturer
                    .iter()
                    .map(|(k, e)| (format!("[manufacturer.{k:?}]"), &e.networks)),
            )
            .chain(
                self.bmc
                    .iter()
                    .map(|(k, e)| (format!("[bmc.{k:?}]"), &e.networks)),
            );
        for (entry, networks) in scoped {
            if let Some(networks) = networks {
                ManagementNetworks::parse(networks)
                    .map_err(|e| format!("{entry} networks: {e}"))?;
            }
        }
        for (key, entry) in &self.bmc {
            if entry
                .pin_sha256
                .as_deref()
                .is_some_and(|p| normal_pin(p).is_none())
            {
                return Err(format!(
                    "[bmc.{key:?}] pin_sha256: not a SHA-256 fingerprint (64 hex digits)"
                ));
            }
        }
        Ok(())
    }
}

/// `AA-BB-CC-DD-EE-FF`, `aabb.ccdd.eeff` and `aa:bb:…` all become `aa:bb:cc:dd:ee:ff`.
pub fn normal_mac(mac: &str) -> String {
    let hex: String = mac
        .chars()
        .filter(char::is_ascii_hexdigit)
        .collect::<String>()
        .to_ascii_lowercase();
    if hex.len() != 12 {
        return mac.trim().to_ascii_lowercase();
    }
    hex.as_bytes()
        .chunks(2)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect::<Vec<_>>()
        .join(":")
}

struct Loaded {
    modified: Option<SystemTime>,
    logins: FileLogins,
}

/// Where logins come from: the default pair and the optional file.
pub struct Credentials {
    default: Option<Login>,
    file: Option<PathBuf>,
    loaded: Mutex<Loaded>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("default", &self.default)
            .field("file", &self.file)
            .finish()
    }
}

fn read(path: &PathBuf) -> Result<Loaded, String> {
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("FLOW_REDFISH_CREDENTIALS_FILE {}: {e}", path.display()))?;
    // The TOML error quotes the offending line, which may hold a password: keep only its place.
    let logins: FileLogins = toml::from_str(&text).map_err(|e| {
        let at = e
            .span()
            .map(|s| format!(" at byte {}", s.start))
            .unwrap_or_default();
        format!(
            "FLOW_REDFISH_CREDENTIALS_FILE {}: not a valid credentials file{at}",
            path.display()
        )
    })?;
    let logins = logins.normalised();
    logins
        .check()
        .map_err(|e| format!("FLOW_REDFISH_CREDENTIALS_FILE {}: {e}", path.display()))?;
    Ok(Loaded { modified, logins })
}

impl Credentials {
    /// Reads the file once now: an unreadable or malformed file stops start-up.
    pub fn new(default: Option<Login>, file: Option<PathBuf>) -> Result<Self, String> {
        let loaded = match &file {
            Some(path) => read(path)?,
            None => Loaded {
                modified: None,
                logins: FileLogins::default(),
            },
        };
        Ok(Self {
            default,
            file,
            loaded: Mutex::new(loaded),
        })
    }

    /// Re-reads the file (SIGHUP); a broken file keeps the previous logins and says why.
    pub fn reload(&self) -> Result<(), String> {
        let Some(path) = &self.file else {
            return Ok(());
        };
        let fresh = read(path)?;
        if let Ok(mut loaded) = self.loaded.lock() {
            *loaded = fresh;
        }
        Ok(())
    }

    fn reload_if_changed(&self) {
        let Some(path) = &self.file else { return };
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        let stale = self
            .loaded
            .lock()
            .map(|l| l.modified != modified)
            .unwrap_or(false);
        if stale && let Err(e) = self.reload() {
            tracing::warn!("keeping the previous BMC credentials: {e}");
        }
    }

    /// The most specific entry's login and networks: by the BMC's MAC, else its
    /// manufacturer, else the file's default; then the configured default (no networks).
    fn scoped(&self, bmc_mac: Option<&str>, manufacturer: &str) -> Option<Scoped> {
        self.reload_if_changed();
        let loaded = self.loaded.lock().ok()?;
        let logins = &loaded.logins;
        bmc_mac
            .and_then(|m| logins.bmc.get(&normal_mac(m)))
            .map(BmcEntry::login)
            .or_else(|| {
                logins
                    .manufacturer
                    .get(&manufacturer.trim().to_ascii_lowercase())
                    .map(LoginEntry::login)
            })
            .or_else(|| logins.default.as_ref().map(LoginEntry::login))
            .or_else(|| self.default.clone().map(|l| (l, None)))
    }

    /// The login for a BMC: by its MAC, else its manufacturer, else the file's default, else
    /// the configured default.
    pub fn lookup(&self, bmc_mac: Option<&str>, manufacturer: &str) -> Option<Login> {
        self.scoped(bmc_mac, manufacturer).map(|(login, _)| login)
    }

    /// The login for the BMC (or PMC) at `ip`, only when its entry's `networks` (if it lists
    /// any) contain `ip`: `Ok(None)` when none is configured, `Err` saying why it is withheld.
    pub fn login_for(
        &self,
        bmc_mac: Option<&str>,
        manufacturer: &str,
        ip: &str,
    ) -> Result<Option<Login>, String> {
        let Some((login, networks)) = self.scoped(bmc_mac, manufacturer) else {
            return Ok(None);
        };
        if let Some(networks) = networks {
            let networks = ManagementNetworks::parse(&networks).unwrap_or_default();
            if networks.allows(ip).is_err() {
                return Err(format!(
                    "the login for {ip} is not sent there: its credentials-file entry lists \
                     other networks"
                ));
            }
        }
        Ok(Some(login))
    }

    /// The options of the BMC with this MAC (none configured: all defaults).
    pub fn options(&self, bmc_mac: Option<&str>) -> BmcOptions {
        self.reload_if_changed();
        let Ok(loaded) = self.loaded.lock() else {
            return BmcOptions::default();
        };
        bmc_mac
            .and_then(|m| loaded.logins.bmc.get(&normal_mac(m)))
            .map(|e| BmcOptions {
                system: e.system.clone(),
                pin_sha256: e.pin_sha256.as_deref().and_then(normal_pin),
                server_name: e.server_name.clone(),
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn login(u: &str) -> Login {
        Login {
            username: u.into(),
            password: format!("{u}-secret"),
        }
    }

    #[test]
    fn the_most_specific_login_wins_and_changes_are_picked_up() {
        let path = std::env::temp_dir().join(format!("flow-creds-{}.toml", uuid::Uuid::new_v4()));
        std::fs::write(
            &path,
            "[default]\nusername = \"file\"\npassword = \"f\"\n\
             [manufacturer.NVIDIA]\nusername = \"nv\"\npassword = \"n\"\n\
             [bmc.\"AA-BB-CC-00-00-01\"]\nusername = \"one\"\npassword = \"o\"\nsystem = \"System_0\"\n",
        )
        .unwrap();
        let c = Credentials::new(Some(login("env")), Some(path.clone())).unwrap();
        let user = |mac: Option<&str>, m: &str| c.lookup(mac, m).map(|l| l.username);
        assert_eq!(
            user(Some("aa:bb:cc:00:00:01"), "nvidia").as_deref(),
            Some("one")
        );
        assert_eq!(
            user(Some("aa:bb:cc:00:00:02"), "nvidia").as_deref(),
            Some("nv")
        );
        assert_eq!(user(None, "Wiwynn").as_deref(), Some("file"));
        assert_eq!(
            c.options(Some("aa:bb:cc:00:00:01")).system.as_deref(),
            Some("System_0")
        );
        assert_eq!(c.options(Some("aa:bb:cc:00:00:02")), BmcOptions::default());
        std::fs::write(
            &path,
            "[manufacturer.wiwynn]\nusername = \"ww\"\npassword = \"w\"\n",
        )
        .unwrap();
        c.reload().unwrap();
        assert_eq!(user(None, "Wiwynn").as_deref(), Some("ww"));
        assert_eq!(user(None, "Other").as_deref(), Some("env"));
        std::fs::write(&path, "password = \"hunter2\" oops").unwrap();
        let err = c.reload().unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
        assert!(format!("{c:?}").contains("***") && !format!("{c:?}").contains("env-secret"));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_login_goes_only_to_its_entrys_networks_and_pins_are_checked() {
        let path = std::env::temp_dir().join(format!("flow-creds-{}.toml", uuid::Uuid::new_v4()));
        std::fs::write(
            &path,
            "[manufacturer.NVIDIA]\nusername = \"nv\"\npassword = \"n\"\nnetworks = [\"10.20.0.0/16\"]\n\
             [bmc.\"aa:bb:cc:00:00:01\"]\nusername = \"one\"\npassword = \"o\"\n\
             pin_sha256 = \"AB:CD:ef:01:23:45:67:89:AB:CD:ef:01:23:45:67:89:AB:CD:ef:01:23:45:67:89:AB:CD:ef:01:23:45:67:89\"\n\
             server_name = \"bmc1.example\"\n",
        )
        .unwrap();
        let c = Credentials::new(Some(login("env")), Some(path.clone())).unwrap();
        let user = |ip: &str| {
            c.login_for(None, "NVIDIA", ip)
                .map(|l| l.map(|l| l.username))
        };
        assert_eq!(user("10.20.1.1"), Ok(Some("nv".into())));
        let err = user("10.99.1.1").unwrap_err();
        assert!(err.contains("10.99.1.1"), "{err}");
        assert_eq!(
            c.login_for(None, "Other", "10.99.1.1")
                .unwrap()
                .unwrap()
                .username,
            "env"
        );
        let options = c.options(Some("aa:bb:cc:00:00:01"));
        assert_eq!(options.pin_sha256.as_deref().map(str::len), Some(64));
        assert_eq!(options.server_name.as_deref(), Some("bmc1.example"));
        std::fs::write(
            &path,
            "[bmc.\"aa:bb:cc:00:00:01\"]\nusername = \"one\"\npassword = \"o\"\npin_sha256 = \"abc\"\n",
        )
        .unwrap();
        assert!(c.reload().unwrap_err().contains("pin_sha256"));
        std::fs::write(
            &path,
            "[default]\nusername = \"d\"\npassword = \"d\"\nnetworks = [\"nope\"]\n",
        )
        .unwrap();
        assert!(c.reload().unwrap_err().contains("[default] networks"));
        std::fs::remove_file(&path).unwrap();
    }
}

//! BMC logins: per BMC MAC, per manufacturer, then a default — the most specific wins. The file
//! is re-read when it changes (checked on each look-up) and on demand (SIGHUP), so rotating a
//! password needs no restart.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::SystemTime;

use serde::Deserialize;

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
/// tell (`system = "System_0"`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BmcOptions {
    /// The `Id` (or `@odata.id`) of the host system among the BMC's `Systems`.
    pub system: Option<String>,
}

/// A `[bmc."…"]` entry: a login and that BMC's options (its `Debug` is the login's, masked).
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct BmcEntry {
    username: String,
    password: String,
    system: Option<String>,
}

impl fmt::Debug for BmcEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BmcEntry")
            .field("login", &self.login())
            .field("system", &self.system)
            .finish()
    }
}

impl BmcEntry {
    fn login(&self) -> Login {
        Login {
            username: self.username.clone(),
            password: self.password.clone(),
        }
    }
}

/// The file's shape: `[default]`, `[manufacturer."NVIDIA"]`, `[bmc."aa:bb:cc:dd:ee:ff"]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLogins {
    default: Option<Login>,
    #[serde(default)]
    manufacturer: HashMap<String, Login>,
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
    Ok(Loaded {
        modified,
        logins: logins.normalised(),
    })
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

    /// The login for a BMC: by its MAC, else its manufacturer, else the file's default, else
    /// the configured default.
    pub fn lookup(&self, bmc_mac: Option<&str>, manufacturer: &str) -> Option<Login> {
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
                    .cloned()
            })
            .or_else(|| logins.default.clone())
            .or_else(|| self.default.clone())
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
}

//! HTTPS client for BMCs speaking Redfish: TLS, logins (basic auth or a Redfish session),
//! a bound on calls in flight per BMC, a deadline on every call, bounded answers, and errors
//! classified transient or permanent. Every request goes out through `RedfishClient::send`,
//! which contacts only addresses inside the management network (`FLOW_BMC_ALLOWED_NETWORKS`)
//! and only the BMC's own `scheme://address:port`: a URL in an answer (`@odata.id`,
//! `Location`, a task monitor, `Links.Sessions`) naming anything else is refused, never
//! followed, and redirects are never followed at all.

pub mod credentials;
mod error;
mod push;
mod tls;

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use tokio::sync::Semaphore;

use crate::domain::ManagementNetworks;

pub use credentials::{BmcOptions, Credentials, Login, normal_mac};
pub use error::{RedfishError, bmc_message};
use error::{chain, retry_after};
pub use push::{Upload, sha256_file, sha256_file_now};
pub use tls::{CertCheck, fingerprint};

/// The most a BMC answer may weigh; anything larger is refused rather than buffered.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Calls in flight to all BMCs together, so a site-wide sweep cannot exhaust sockets.
const MAX_INFLIGHT_TOTAL: usize = 256;
/// How often a 503 is waited out (its `Retry-After`) before the call counts as failed.
const MAX_BUSY_RETRIES: u32 = 2;
/// The longest `Retry-After` honoured inside one call.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// How BMCs are reached.
#[derive(Debug, Clone)]
pub struct RedfishSettings {
    pub scheme: String,
    pub port: u16,
    pub timeout: Duration,
    pub max_inflight_per_bmc: usize,
    pub ca_file: Option<PathBuf>,
    pub insecure: bool,
    /// The management network: no other address is ever contacted.
    pub allowed_networks: ManagementNetworks,
}

/// One BMC as a call addresses it: where it is, and what picks its login.
#[derive(Debug, Clone, Copy)]
pub struct Bmc<'a> {
    pub ip: &'a str,
    pub mac: Option<&'a str>,
    pub manufacturer: &'a str,
}

/// A BMC's answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    /// `Location` (task monitors, new sessions).
    pub location: Option<String>,
    pub body: Value,
}

/// What a request carries: JSON, or an image streamed from disk (rebuilt for each attempt).
#[derive(Clone, Copy)]
enum Payload<'a> {
    Json(&'a Value),
    Upload(&'a Upload),
}

#[derive(Clone)]
enum Auth {
    Unknown,
    Basic,
    Session(String),
}

struct BmcState {
    permits: Semaphore,
    auth: tokio::sync::Mutex<Auth>,
}

/// The shared client: one connection pool for every BMC.
pub struct RedfishClient {
    http: reqwest::Client,
    /// Clients for BMCs whose credentials-file entry pins a certificate or names a server.
    checked: Mutex<HashMap<CertCheck, reqwest::Client>>,
    ca_pem: Option<Vec<u8>>,
    settings: RedfishSettings,
    credentials: Arc<Credentials>,
    total: Semaphore,
    bmcs: Mutex<HashMap<String, Arc<BmcState>>>,
}

impl fmt::Debug for RedfishClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedfishClient")
            .field("settings", &self.settings)
            .field("credentials", &self.credentials)
            .finish()
    }
}

impl RedfishClient {
    /// Builds the client; an unreadable CA file is an error naming `FLOW_REDFISH_CA_FILE`.
    pub fn new(settings: RedfishSettings, credentials: Arc<Credentials>) -> Result<Self, String> {
        // rustls is built with ring only; reqwest needs it installed as the process default.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = base_builder(&settings);
        let mut ca_pem = None;
        if let Some(path) = &settings.ca_file {
            let pem = std::fs::read(path)
                .map_err(|e| format!("FLOW_REDFISH_CA_FILE {}: {e}", path.display()))?;
            ca_pem = Some(pem.clone());
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| format!("FLOW_REDFISH_CA_FILE {}: {e}", path.display()))?;
            if certs.is_empty() {
                return Err(format!(
                    "FLOW_REDFISH_CA_FILE {}: no PEM certificate in it",
                    path.display()
                ));
            }
            builder = builder.tls_certs_only(certs);
        }
        if settings.insecure {
            tracing::warn!(
                "FLOW_REDFISH_INSECURE=true: BMC certificates are NOT verified; anyone on the \
                 path can impersonate a BMC and read its login"
            );
            builder = builder.tls_danger_accept_invalid_certs(true);
        }
        let http = builder
            .build()
            .map_err(|e| format!("Redfish HTTP client: {}", chain(&e)))?;
        Ok(Self {
            http,
            checked: Mutex::new(HashMap::new()),
            ca_pem,
            total: Semaphore::new(MAX_INFLIGHT_TOTAL),
            bmcs: Mutex::new(HashMap::new()),
            settings,
            credentials,
        })
    }

    /// What the credentials file says about this BMC beyond its login.
    pub fn options(&self, bmc: Bmc<'_>) -> BmcOptions {
        self.credentials.options(bmc.mac)
    }

    /// The credentials source, for reloading on SIGHUP.
    pub fn credentials(&self) -> &Arc<Credentials> {
        &self.credentials
    }

    fn state(&self, ip: &str) -> Arc<BmcState> {
        let mut bmcs = self.bmcs.lock().unwrap_or_else(|p| p.into_inner());
        bmcs.entry(ip.to_string())
            .or_insert_with(|| {
                Arc::new(BmcState {
                    permits: Semaphore::new(self.settings.max_inflight_per_bmc),
                    auth: tokio::sync::Mutex::new(Auth::Unknown),
                })
            })
            .clone()
    }

    /// The BMC's own origin, `scheme://ip:port`.
    fn origin(&self, ip: &str) -> String {
        let host = if ip.contains(':') && !ip.starts_with('[') {
            format!("[{ip}]")
        } else {
            ip.to_string()
        };
        format!("{}://{host}:{}", self.settings.scheme, self.settings.port)
    }

    /// The BMC's origin + path. A path that is already a URL (a task monitor, a `Location`)
    /// is kept only when it names that same origin: anything else is refused, naming only the
    /// foreign host, so no request (and no login) ever goes there.
    fn url(&self, ip: &str, path: &str) -> Result<reqwest::Url, RedfishError> {
        let origin = self.origin(ip);
        let refused = |why: String| RedfishError::Credentials {
            status: None,
            message: format!("BMC {ip}: {why}"),
        };
        let own = reqwest::Url::parse(&origin)
            .map_err(|_| refused(format!("{ip:?} is not an address")))?;
        let url = match reqwest::Url::parse(path) {
            Ok(absolute) => absolute,
            Err(_) => {
                let slash = if path.starts_with('/') { "" } else { "/" };
                reqwest::Url::parse(&format!("{origin}{slash}{path}"))
                    .map_err(|_| refused("the answer names an unusable path".into()))?
            }
        };
        let same = url.scheme() == own.scheme()
            && url.host() == own.host()
            && url.port_or_known_default() == own.port_or_known_default()
            && url.username().is_empty()
            && url.password().is_none();
        if !same {
            let host = url.host_str().unwrap_or("no host");
            return Err(refused(format!(
                "its answer points at another origin (host {host}); not followed, and no \
                 login is sent there"
            )));
        }
        Ok(url)
    }

    /// Refuses an address outside the management network before anything is sent.
    fn confined(&self, bmc: Bmc<'_>) -> Result<(), RedfishError> {
        self.settings
            .allowed_networks
            .allows(bmc.ip)
            .map_err(|why| RedfishError::Credentials {
                status: None,
                message: format!("BMC {} not contacted: {why}", bmc.ip),
            })
    }

    /// The HTTP client for this BMC: the shared one, or one that checks the certificate as
    /// the BMC's credentials-file entry says (`pin_sha256` wins over `server_name`).
    fn http_for(&self, bmc: Bmc<'_>) -> Result<reqwest::Client, RedfishError> {
        let options = self.credentials.options(bmc.mac);
        let check = match (options.pin_sha256, options.server_name) {
            (Some(pin), _) => CertCheck::Pin(pin),
            (None, Some(name)) => CertCheck::Name(name),
            (None, None) => return Ok(self.http.clone()),
        };
        let mut checked = self.checked.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(client) = checked.get(&check) {
            return Ok(client.clone());
        }
        let refused = |why: String| RedfishError::Credentials {
            status: None,
            message: format!("BMC {}: {why}", bmc.ip),
        };
        let config = tls::client_config(&check, self.ca_pem.as_deref()).map_err(refused)?;
        let client = base_builder(&self.settings)
            .tls_backend_preconfigured(config)
            .build()
            .map_err(|e| refused(chain(&e)))?;
        checked.insert(check, client.clone());
        Ok(client)
    }

    /// The one place a request leaves Flow for a BMC: URL, login, deadline and a bounded body.
    async fn send(
        &self,
        bmc: Bmc<'_>,
        method: Method,
        path: &str,
        body: Option<Payload<'_>>,
        auth: (&Auth, &Login),
    ) -> Result<(StatusCode, reqwest::header::HeaderMap, Value), RedfishError> {
        self.confined(bmc)?;
        let url = self.url(bmc.ip, path)?;
        let mut request = self
            .http_for(bmc)?
            .request(method.clone(), url)
            .header(reqwest::header::ACCEPT, "application/json");
        request = match auth {
            (Auth::Session(token), _) => request.header("X-Auth-Token", token.as_str()),
            (Auth::Basic, login) => request.basic_auth(&login.username, Some(&login.password)),
            (Auth::Unknown, _) => request,
        };
        let mut deadline = self.settings.timeout;
        match body {
            Some(Payload::Json(body)) => request = request.json(body),
            Some(Payload::Upload(upload)) => {
                // An image upload takes as long as the link needs, within its own bound.
                deadline = push::UPLOAD_TIMEOUT.max(deadline);
                let (content_type, body) = upload.body();
                request = request
                    .timeout(deadline)
                    .header(reqwest::header::CONTENT_TYPE, content_type)
                    .body(body);
            }
            None => {}
        }
        let unreachable = |why: String| RedfishError::Unreachable {
            status: None,
            message: format!("BMC {} {method} {path}: {why}", bmc.ip),
        };
        let call = async {
            // Errors without their URL: the text reaches viewers (drift, validation, steps).
            let mut response = request
                .send()
                .await
                .map_err(|e| unreachable(chain(&e.without_url())))?;
            let status = response.status();
            let headers = response.headers().clone();
            let mut bytes = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| unreachable(chain(&e.without_url())))?
            {
                if bytes.len() + chunk.len() > MAX_BODY_BYTES {
                    return Err(unreachable(format!(
                        "answer larger than {MAX_BODY_BYTES} bytes"
                    )));
                }
                bytes.extend_from_slice(&chunk);
            }
            // A body that is not JSON (an HTML error page, say) is kept as text for messages.
            let value = if bytes.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&bytes).unwrap_or_else(|_| {
                    Value::String(String::from_utf8_lossy(&bytes).chars().take(300).collect())
                })
            };
            Ok((status, headers, value))
        };
        match tokio::time::timeout(deadline, call).await {
            Ok(result) => result,
            Err(_) => Err(unreachable(format!("no answer within {deadline:?}"))),
        }
    }

    fn rejected(&self, bmc: Bmc<'_>, status: u16) -> RedfishError {
        RedfishError::Credentials {
            status: Some(status),
            message: format!("credentials rejected by BMC {}", bmc.ip),
        }
    }

    /// Learns how to log in: a Redfish session when the service root offers one, else basic
    /// auth. Called with the BMC's auth lock held, so one login happens at a time.
    async fn login(&self, bmc: Bmc<'_>, login: &Login) -> Result<Auth, RedfishError> {
        let basic = Auth::Basic;
        let (status, _, root) = self
            .send(bmc, Method::GET, "/redfish/v1/", None, (&basic, login))
            .await?;
        if matches!(status.as_u16(), 401 | 403) {
            return Err(self.rejected(bmc, status.as_u16()));
        }
        let sessions = root
            .pointer("/Links/Sessions/@odata.id")
            .and_then(Value::as_str)
            .map(String::from);
        let Some(sessions) = sessions else {
            return Ok(basic);
        };
        let credentials =
            serde_json::json!({"UserName": login.username, "Password": login.password});
        let (status, headers, _) = self
            .send(
                bmc,
                Method::POST,
                &sessions,
                Some(Payload::Json(&credentials)),
                (&Auth::Unknown, login),
            )
            .await?;
        match status.as_u16() {
            code @ (401 | 403) => Err(self.rejected(bmc, code)),
            200..=299 => Ok(headers
                .get("X-Auth-Token")
                .and_then(|v| v.to_str().ok())
                .map(|t| Auth::Session(t.to_string()))
                .unwrap_or(basic)),
            // A session service that will not open sessions still leaves basic auth.
            _ => Ok(basic),
        }
    }

    /// A Redfish call with the BMC's login; 401 on a session logs in again once; 503 is waited
    /// out per `Retry-After`; errors come back classified.
    pub async fn request(
        &self,
        bmc: Bmc<'_>,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Reply, RedfishError> {
        self.call(bmc, method, path, body.map(Payload::Json)).await
    }

    /// Pushes a firmware image (`HttpPushUri` or `MultipartHttpPushUri`), streamed from its file.
    pub async fn push(
        &self,
        bmc: Bmc<'_>,
        uri: &str,
        upload: &Upload,
    ) -> Result<Reply, RedfishError> {
        self.call(bmc, Method::POST, uri, Some(Payload::Upload(upload)))
            .await
    }

    async fn call(
        &self,
        bmc: Bmc<'_>,
        method: Method,
        path: &str,
        body: Option<Payload<'_>>,
    ) -> Result<Reply, RedfishError> {
        self.confined(bmc)?;
        let _all = self.total.acquire().await;
        let state = self.state(bmc.ip);
        let _one = state.permits.acquire().await;
        let withheld = |message: String| RedfishError::Credentials {
            status: None,
            message,
        };
        let login = self
            .credentials
            .login_for(bmc.mac, bmc.manufacturer, bmc.ip)
            .map_err(|why| withheld(format!("BMC {} not contacted: {why}", bmc.ip)))?
            .ok_or_else(|| withheld(format!("no credentials configured for BMC {}", bmc.ip)))?;
        let mut relogged = false;
        let mut busy = 0;
        loop {
            let auth = {
                let mut guard = state.auth.lock().await;
                if matches!(*guard, Auth::Unknown) {
                    *guard = self.login(bmc, &login).await?;
                }
                guard.clone()
            };
            let (status, headers, value) = self
                .send(bmc, method.clone(), path, body, (&auth, &login))
                .await?;
            let code = status.as_u16();
            let what = |why: String| format!("BMC {} {method} {path}: HTTP {code}: {why}", bmc.ip);
            match code {
                401 if matches!(auth, Auth::Session(_)) && !relogged => {
                    // The session expired or was dropped by the BMC: one fresh login.
                    relogged = true;
                    *state.auth.lock().await = Auth::Unknown;
                }
                401 | 403 => return Err(self.rejected(bmc, code)),
                503 if busy < MAX_BUSY_RETRIES => {
                    busy += 1;
                    tokio::time::sleep(retry_after(&headers)).await;
                }
                500..=599 => {
                    let why = bmc_message(&value).unwrap_or_else(|| "service unavailable".into());
                    return Err(RedfishError::Unreachable {
                        status: Some(code),
                        message: what(why),
                    });
                }
                400..=499 => {
                    let why = bmc_message(&value)
                        .or_else(|| value.as_str().map(String::from))
                        .unwrap_or_else(|| "refused".into());
                    return Err(RedfishError::Refused {
                        status: code,
                        message: what(why),
                    });
                }
                _ => {
                    let location = headers
                        .get(reqwest::header::LOCATION)
                        .and_then(|v| v.to_str().ok())
                        .map(String::from);
                    return Ok(Reply {
                        status: code,
                        location,
                        body: value,
                    });
                }
            }
        }
    }

    /// `GET path`, its JSON body.
    pub async fn get(&self, bmc: Bmc<'_>, path: &str) -> Result<Value, RedfishError> {
        Ok(self.request(bmc, Method::GET, path, None).await?.body)
    }

    /// `POST path` with a JSON body.
    pub async fn post(
        &self,
        bmc: Bmc<'_>,
        path: &str,
        body: &Value,
    ) -> Result<Reply, RedfishError> {
        self.request(bmc, Method::POST, path, Some(body)).await
    }
}

/// What every BMC client shares: deadlines, a small idle pool, and no redirects (a redirect
/// would carry the login to wherever the BMC points).
fn base_builder(settings: &RedfishSettings) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .timeout(settings.timeout)
        .connect_timeout(settings.timeout)
        .pool_max_idle_per_host(settings.max_inflight_per_bmc)
        .pool_idle_timeout(Duration::from_secs(60))
        .redirect(reqwest::redirect::Policy::none())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> RedfishClient {
        let settings = RedfishSettings {
            scheme: "https".into(),
            port: 443,
            timeout: Duration::from_secs(1),
            max_inflight_per_bmc: 1,
            ca_file: None,
            insecure: false,
            allowed_networks: ManagementNetworks::parse(&["10.0.0.0/8"]).unwrap(),
        };
        RedfishClient::new(settings, Arc::new(Credentials::new(None, None).unwrap())).unwrap()
    }

    #[test]
    fn only_the_bmcs_own_origin_is_ever_addressed() {
        let c = client();
        let url = |path: &str| c.url("10.0.0.1", path).map(|u| u.to_string());
        assert_eq!(
            url("/redfish/v1/Systems").unwrap(),
            "https://10.0.0.1/redfish/v1/Systems"
        );
        // A task monitor or `Location` on the BMC itself is kept as it is.
        assert_eq!(
            url("https://10.0.0.1:443/redfish/v1/TaskService/TaskMonitors/1").unwrap(),
            "https://10.0.0.1/redfish/v1/TaskService/TaskMonitors/1"
        );
        for foreign in [
            "https://10.0.0.2/redfish/v1/TaskService/TaskMonitors/1",
            "https://10.0.0.1:8443/redfish/v1/Systems",
            "http://10.0.0.1/redfish/v1/Systems",
            "https://admin:pw@10.0.0.1/redfish/v1/Systems",
            "https://temporal.internal:7233/x",
        ] {
            let err = url(foreign).unwrap_err();
            assert!(matches!(err, RedfishError::Credentials { .. }), "{foreign}");
            let text = err.to_string();
            assert!(
                text.contains("another origin")
                    && !text.contains("/redfish")
                    && !text.contains("://"),
                "{foreign}: {text}"
            );
        }
        // A path cannot change the authority it is joined to.
        assert!(
            url("//10.0.0.2/x")
                .unwrap()
                .starts_with("https://10.0.0.1/")
        );
        assert!(url("@10.0.0.2/x").unwrap().starts_with("https://10.0.0.1/"));
    }
}

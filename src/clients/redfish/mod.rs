//! HTTPS client for BMCs speaking Redfish: TLS, logins (basic auth or a Redfish session),
//! a bound on calls in flight per BMC, a deadline on every call, bounded answers, and errors
//! classified transient or permanent. Every request goes out through `RedfishClient::send`,
//! which contacts only addresses inside the management network (`FLOW_BMC_ALLOWED_NETWORKS`)
//! and only the BMC's own `scheme://address:port`: a URL in an answer (`@odata.id`,
//! `Location`, a task monitor, `Links.Sessions`) naming anything else is refused, never
//! followed, and redirects are never followed at all.

pub mod credentials;
mod error;
mod http;
mod origin;
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

//! The HTTP client of the CLI: one reqwest client, bearer auth, and problem+json errors mapped to exit codes.

use std::fmt;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;

/// Exit codes, distinct per class of failure so scripts can branch on them (2 is clap's own).
pub mod exit {
    pub const OK: u8 = 0;
    pub const TASK_FAILED: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const NOT_FOUND: u8 = 3;
    pub const CONFLICT: u8 = 4;
    pub const INVALID: u8 = 5;
    pub const SERVER: u8 = 6;
    pub const AUTH: u8 = 7;
}

/// Why a client command failed.
#[derive(Debug)]
pub enum CliError {
    /// The API answered with an error status (a problem document when it sent one).
    Api {
        status: u16,
        title: String,
        detail: String,
        code: Option<String>,
        errors: Vec<(String, String)>,
    },
    /// No answer: connection refused, timeout, a broken stream.
    Transport(String),
    /// Something named on the command line does not exist (found out by the client itself).
    NotFound(String),
    /// A file or value given on the command line is not usable.
    Input(String),
    /// The command line makes no sense (beyond what clap checks).
    Usage(String),
}

impl CliError {
    /// The process exit code for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Api { status, .. } => match *status {
                401 | 403 => exit::AUTH,
                404 => exit::NOT_FOUND,
                409 | 412 => exit::CONFLICT,
                500.. => exit::SERVER,
                // 400, 422 and the other client errors (413, 415): the request must change.
                _ => exit::INVALID,
            },
            CliError::Transport(_) => exit::SERVER,
            CliError::NotFound(_) => exit::NOT_FOUND,
            CliError::Input(_) => exit::INVALID,
            CliError::Usage(_) => exit::USAGE,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Api {
                status,
                title,
                detail,
                code,
                errors,
            } => {
                write!(f, "{title} ({status}")?;
                if let Some(code) = code {
                    write!(f, ", {code}")?;
                }
                write!(f, ")")?;
                if !detail.is_empty() {
                    write!(f, ": {detail}")?;
                }
                for (field, message) in errors {
                    write!(f, "\n  {field}: {message}")?;
                }
                Ok(())
            }
            CliError::Transport(m) => write!(f, "server unreachable: {m}"),
            CliError::NotFound(m) | CliError::Input(m) | CliError::Usage(m) => f.write_str(m),
        }
    }
}

impl From<reqwest::Error> for CliError {
    fn from(e: reqwest::Error) -> Self {
        // The whole source chain: reqwest's top-level message alone hides "connection refused".
        let mut message = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        CliError::Transport(message)
    }
}

/// A base URL the client can use: `http://` or `https://` and a host (`localhost:8080` parses
/// as a URL of scheme `localhost`, so it is caught here as a usage error, not sent).
fn check_base(base: &str) -> Result<(), CliError> {
    let usage = |why: String| {
        CliError::Usage(format!(
            "--url / FLOW_URL {base:?}: {why}; give it as http://HOST:PORT or https://HOST:PORT"
        ))
    };
    let url = reqwest::Url::parse(base).map_err(|e| usage(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(usage(format!(
            "the scheme must be http or https, not {:?}",
            url.scheme()
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(usage("no host".into()));
    }
    Ok(())
}

/// A successful answer: the body as received (for `-o json`) and parsed (for tables).
#[derive(Debug)]
pub struct Reply {
    pub text: String,
    pub body: Value,
}

/// The API at one base URL. No `Debug`: it holds the token.
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

/// Plain requests end well within this; the event stream sets its own, longer limit.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const READ_TIMEOUT: Duration = Duration::from_secs(45);
/// One event-stream connection lives at most this long, then the watcher reconnects.
pub const STREAM_TIMEOUT: Duration = Duration::from_secs(3600);

impl Client {
    /// A client for the API at `base`, sending `token` (when not empty) as a bearer token.
    pub fn new(base: &str, token: Option<String>) -> Result<Self, CliError> {
        check_base(base)?;
        // reqwest is built on rustls with ring only, which needs a process-wide provider; an Err
        // means one is already installed, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            // Event streams send a keep-alive every 15 s: a longer silence means a dead server.
            .read_timeout(READ_TIMEOUT)
            .user_agent(concat!("flow-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(CliError::from)?;
        Ok(Self {
            http,
            base: base.trim_end_matches('/').to_string(),
            token: token.filter(|t| !t.is_empty()),
        })
    }

    /// A request to `path` (below the base URL) with auth set.
    pub fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let builder = self.http.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(token) => builder.bearer_auth(token),
            None => builder,
        }
    }

    /// Sends a request and turns an error status into a [`CliError::Api`].
    pub async fn send(&self, builder: reqwest::RequestBuilder) -> Result<Reply, CliError> {
        let response = builder.send().await?;
        let status = response.status();
        let text = response.text().await?;
        if !status.is_success() {
            return Err(problem(status, &text));
        }
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(Reply { text, body })
    }

    /// `GET path?query`.
    pub async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Reply, CliError> {
        self.send(self.request(Method::GET, path).query(query))
            .await
    }

    /// `POST path` with a JSON body.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Reply, CliError> {
        self.send(self.request(Method::POST, path).json(body)).await
    }

    /// `POST path` without a body.
    pub async fn post_empty(&self, path: &str) -> Result<Reply, CliError> {
        self.send(self.request(Method::POST, path)).await
    }

    /// The response of a streaming request, once its status says it succeeded.
    pub async fn open_stream(
        &self,
        builder: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, CliError> {
        let response = builder.timeout(STREAM_TIMEOUT).send().await?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let text = response.text().await.unwrap_or_default();
        Err(problem(status, &text))
    }
}

/// An error answer as a [`CliError`]: the problem document's fields, or the bare status.
fn problem(status: StatusCode, text: &str) -> CliError {
    let body: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let field = |name: &str| body[name].as_str().map(String::from);
    let errors = body["errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .map(|e| {
                    let text = |k: &str| e[k].as_str().unwrap_or_default().to_string();
                    (text("field"), text("message"))
                })
                .collect()
        })
        .unwrap_or_default();
    CliError::Api {
        status: status.as_u16(),
        title: field("title")
            .unwrap_or_else(|| status.canonical_reason().unwrap_or("Error").to_string()),
        detail: field("detail").unwrap_or_else(|| text.trim().chars().take(500).collect()),
        code: field("code"),
        errors,
    }
}

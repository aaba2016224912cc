//! The stand-in's HTTP side: one handler for every path of the tree, bmcweb's logins (Basic
//! auth and sessions, the service root open to all), actions checked against the tree, power
//! that moves through `PoweringOn`/`PoweringOff`, a reboot after `Manager.Reset` during
//! which the BMC accepts no connection, and the loss of AC power (the rack's shelves off): the
//! BMC is gone until power is back and its reboot window has passed, the host is off after it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::tree::{Tree, error, key};
use super::update::{self, Activation};
use crate::support::redfish::{PASSWORD, USER};

/// Reads of a system during which a power change is still under way.
const SETTLING_READS: u32 = 2;

/// The BMC's state, shared with the test.
pub struct Bmc {
    pub tree: Tree,
    pub tokens: HashSet<String>,
    pub logins: u32,
    /// Every request, as `METHOD path`.
    pub requests: Vec<String>,
    /// Action POSTs the BMC ran, as `Action.Name:ResetType`.
    pub actions: Vec<String>,
    /// Reads left until a system's `PowerState` settles, and where it settles.
    pub settling: Option<(String, u32, &'static str)>,
    pub tasks: update::Tasks,
    /// How long the BMC stays away after `Manager.Reset`.
    pub reboot_window: Duration,
    pub reboots: u32,
    /// Times the BMC came back from a reboot.
    pub back: u32,
    /// The tray has no AC power (see [`Handle::lose_ac`]).
    pub ac_off: bool,
    reboot: Arc<Notify>,
}

pub type Shared = Arc<Mutex<Bmc>>;

/// A running stand-in on its own loopback address.
pub struct Handle {
    pub ip: String,
    pub bmc: Shared,
}

impl Handle {
    /// The rack's power shelves went off: the host is off, every staged image becomes live
    /// (an AC cycle resets every part), and the BMC stops answering until [`Self::restore_ac`].
    pub fn lose_ac(&self) {
        let mut b = self.bmc.lock().unwrap();
        if b.ac_off {
            return;
        }
        b.ac_off = true;
        b.settling = None;
        b.tree.set(SYSTEM, "/PowerState", json!("Off"));
        update::activate(&mut b, None, "AC loss");
        b.reboot.notify_one();
    }

    /// Power is back: the BMC boots (its reboot window) and answers again.
    pub fn restore_ac(&self) {
        self.bmc.lock().unwrap().ac_off = false;
    }
}

const SYSTEM: &str = "/redfish/v1/Systems/System_0";

fn logged_in(b: &Bmc, headers: &HeaderMap) -> bool {
    if let Some(token) = headers.get("x-auth-token").and_then(|v| v.to_str().ok()) {
        return b.tokens.contains(token);
    }
    let want = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Basic {want}"))
}

pub fn json_reply(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

fn login(b: &mut Bmc, body: &[u8]) -> Response {
    let body: Value = serde_json::from_slice(body).unwrap_or_default();
    if body["UserName"] != USER || body["Password"] != PASSWORD {
        return json_reply(
            StatusCode::UNAUTHORIZED,
            error("ResourceAtUriUnauthorized", "Invalid username or password"),
        );
    }
    b.logins += 1;
    let token = format!("bmcweb-token-{}", b.logins);
    b.tokens.insert(token.clone());
    let location = format!("/redfish/v1/SessionService/Sessions/{}", b.logins);
    let mut r = json_reply(
        StatusCode::CREATED,
        json!({"@odata.id": location, "Id": b.logins.to_string()}),
    );
    r.headers_mut()
        .insert("x-auth-token", HeaderValue::from_str(&token).unwrap());
    r.headers_mut()
        .insert("location", HeaderValue::from_str(&location).unwrap());
    r
}

fn read(b: &mut Bmc, path: &str) -> Response {
    if let Some((system, left, settles)) = b.settling.clone()
        && key(path) == system
    {
        if left == 0 {
            b.tree.set(&system, "/PowerState", json!(settles));
            b.settling = None;
        } else {
            b.settling = Some((system, left - 1, settles));
        }
    }
    if let Some(answer) = update::read(b, path) {
        return answer;
    }
    match b.tree.get(path) {
        Some(body) => json_reply(StatusCode::OK, body.clone()),
        None => json_reply(
            StatusCode::NOT_FOUND,
            error(
                "ResourceNotFound",
                &format!("The resource at {path} was not found."),
            ),
        ),
    }
}

/// Runs a checked reset: power moves, or the BMC reboots.
fn reset(b: &mut Bmc, resource: &str, name: &str, kind: &str) {
    b.actions.push(format!("{name}:{kind}"));
    let system = match name {
        "ComputerSystem.Reset" => resource.to_string(),
        "Chassis.Reset" => SYSTEM.to_string(),
        "Manager.Reset" => {
            update::activate(b, Some(Activation::BmcReset), "Manager.Reset");
            b.reboots += 1;
            b.reboot.notify_one();
            return;
        }
        _ => return,
    };
    let was_off = b
        .tree
        .get(&system)
        .and_then(|s| s.get("PowerState").cloned())
        == Some(json!("Off"));
    // The host's power really goes away: staged power-cycle images go live. A warm restart
    // (GracefulRestart, ForceRestart) keeps power, so it does not activate them.
    if kind == "PowerCycle" || (was_off && matches!(kind, "On" | "ForceOn")) {
        let why = if kind == "PowerCycle" {
            "PowerCycle"
        } else {
            "On after Off"
        };
        update::activate(b, Some(Activation::PowerCycle), why);
    }
    let (during, settles) = match kind {
        "ForceOff" | "GracefulShutdown" => ("PoweringOff", "Off"),
        "Nmi" => return,
        _ => ("PoweringOn", "On"),
    };
    b.tree.set(&system, "/PowerState", json!(during));
    b.settling = Some((system, SETTLING_READS, settles));
}

fn post(b: &mut Bmc, path: &str, headers: &HeaderMap, body: &Bytes) -> Response {
    if let Some(answer) = update::push(b, path, headers, body) {
        return answer;
    }
    let Some(offered) = b.tree.offered(path) else {
        return json_reply(
            StatusCode::METHOD_NOT_ALLOWED,
            error("OperationNotAllowed", "The HTTP method is not allowed."),
        );
    };
    let body: Value = serde_json::from_slice(body).unwrap_or_default();
    match offered.check(&body) {
        Ok(kind) => {
            reset(b, &offered.resource, &offered.name, &kind);
            StatusCode::NO_CONTENT.into_response()
        }
        Err(refusal) => json_reply(StatusCode::BAD_REQUEST, refusal),
    }
}

async fn handle(
    State(bmc): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let mut b = bmc.lock().unwrap();
    b.requests.push(format!("{method} {}", key(&path)));
    let open = method == Method::GET && matches!(key(&path).as_str(), "/redfish" | "/redfish/v1");
    if method == Method::POST && key(&path) == "/redfish/v1/SessionService/Sessions" {
        return login(&mut b, &body);
    }
    if !open && !logged_in(&b, &headers) {
        return json_reply(
            StatusCode::UNAUTHORIZED,
            error("ResourceAtUriUnauthorized", "Unauthorized"),
        );
    }
    match method {
        Method::GET => read(&mut b, &path),
        Method::POST => post(&mut b, &path, &headers, &body),
        _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
    }
}

/// Serves `tree` on a fresh loopback address until the test ends; after each `Manager.Reset`
/// the listener closes (connections refused) for the reboot window, and sessions are lost.
pub async fn start(tree: &str, ip: String, port: u16, configure: impl FnOnce(&mut Bmc)) -> Handle {
    let reboot = Arc::new(Notify::new());
    let mut bmc = Bmc {
        tree: Tree::load(tree),
        tokens: HashSet::new(),
        logins: 0,
        requests: Vec::new(),
        actions: Vec::new(),
        settling: None,
        tasks: update::Tasks::default(),
        reboot_window: Duration::from_secs(3),
        reboots: 0,
        back: 0,
        ac_off: false,
        reboot: reboot.clone(),
    };
    configure(&mut bmc);
    let shared = Arc::new(Mutex::new(bmc));
    let listener = tokio::net::TcpListener::bind((ip.as_str(), port))
        .await
        .unwrap();
    let state = shared.clone();
    let address = ip.clone();
    tokio::spawn(async move {
        let mut listener = Some(listener);
        loop {
            let l = match listener.take() {
                Some(l) => l,
                None => {
                    let l = tokio::net::TcpListener::bind((address.as_str(), port))
                        .await
                        .unwrap();
                    state.lock().unwrap().back += 1;
                    l
                }
            };
            let app = Router::new().fallback(handle).with_state(state.clone());
            let down = reboot.clone();
            let _ = axum::serve(l, app)
                .with_graceful_shutdown(async move { down.notified().await })
                .await;
            let window = {
                let mut b = state.lock().unwrap();
                b.tokens.clear();
                b.reboot_window
            };
            // Without AC power the BMC stays down; it boots once power is back.
            while state.lock().unwrap().ac_off {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            tokio::time::sleep(window).await;
        }
    });
    Handle { ip, bmc: shared }
}

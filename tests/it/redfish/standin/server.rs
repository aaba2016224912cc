//! The stand-in BMC: an axum server speaking just enough Redfish (two systems, a manager, an
//! update service with a task monitor, sessions) with switches for the faults tests need.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use serde_json::{Value, json};

use crate::support::redfish::{PASSWORD, USER};

#[derive(Default)]
pub struct Bmc {
    pub sessions: bool,
    pub tokens: HashSet<String>,
    pub logins: u32,
    pub basic_calls: u32,
    pub busy: u32,
    pub delay_ms: u64,
    pub inflight: u32,
    pub max_inflight: u32,
    pub power: String,
    pub bios: String,
    pub polls: u32,
    pub failing_image: bool,
    pub target: Option<String>,
    pub huge: bool,
    pub resets: Vec<String>,
}

pub type Shared = Arc<Mutex<Bmc>>;

fn basic_ok(headers: &HeaderMap) -> bool {
    let want = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Basic {want}"))
}

/// 401 unless the request carries a live session token or the right basic login.
fn check(bmc: &Shared, headers: &HeaderMap) -> Result<(), Response> {
    let mut b = bmc.lock().unwrap();
    if let Some(token) = headers.get("x-auth-token").and_then(|v| v.to_str().ok()) {
        if b.tokens.contains(token) {
            return Ok(());
        }
        return Err(StatusCode::UNAUTHORIZED.into_response());
    }
    if basic_ok(headers) {
        b.basic_calls += 1;
        return Ok(());
    }
    Err(StatusCode::UNAUTHORIZED.into_response())
}

async fn root(State(bmc): State<Shared>) -> Response {
    let sessions = bmc.lock().unwrap().sessions;
    let mut body = json!({"@odata.id": "/redfish/v1/",
        "Systems": {"@odata.id": "/redfish/v1/Systems"},
        "UpdateService": {"@odata.id": "/redfish/v1/UpdateService"}});
    if sessions {
        body["Links"] = json!({"Sessions": {"@odata.id": "/redfish/v1/SessionService/Sessions"}});
    }
    axum::Json(body).into_response()
}

async fn login(State(bmc): State<Shared>, axum::Json(body): axum::Json<Value>) -> Response {
    if body["UserName"] != USER || body["Password"] != PASSWORD {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let mut b = bmc.lock().unwrap();
    b.logins += 1;
    let token = format!("token-{}", b.logins);
    b.tokens.insert(token.clone());
    let mut r = (StatusCode::CREATED, axum::Json(json!({"Id": "1"}))).into_response();
    r.headers_mut()
        .insert("x-auth-token", HeaderValue::from_str(&token).unwrap());
    r
}

async fn systems(State(bmc): State<Shared>, headers: HeaderMap) -> Response {
    if let Err(r) = check(&bmc, &headers) {
        return r;
    }
    axum::Json(json!({"Members": [{"@odata.id": "/redfish/v1/Systems/A"},
                                  {"@odata.id": "/redfish/v1/Systems/B"}]}))
    .into_response()
}

async fn system(State(bmc): State<Shared>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if let Err(r) = check(&bmc, &headers) {
        return r;
    }
    let delay = {
        let mut b = bmc.lock().unwrap();
        if b.busy > 0 {
            b.busy -= 1;
            let mut r = StatusCode::SERVICE_UNAVAILABLE.into_response();
            r.headers_mut()
                .insert("retry-after", HeaderValue::from_static("1"));
            return r;
        }
        if b.huge {
            return "x".repeat(5 * 1024 * 1024).into_response();
        }
        b.inflight += 1;
        b.max_inflight = b.max_inflight.max(b.inflight);
        b.delay_ms
    };
    tokio::time::sleep(Duration::from_millis(delay)).await;
    let mut b = bmc.lock().unwrap();
    b.inflight -= 1;
    axum::Json(json!({
        "@odata.id": format!("/redfish/v1/Systems/{id}"), "Id": id,
        "UUID": format!("uuid-{id}"), "SerialNumber": format!("SN-{id}"),
        "PowerState": b.power, "BiosVersion": b.bios,
        "Links": {"ManagedBy": [{"@odata.id": "/redfish/v1/Managers/bmc"}]},
        "Actions": {"#ComputerSystem.Reset": {
            "target": format!("/redfish/v1/Systems/{id}/Actions/ComputerSystem.Reset"),
            "ResetType@Redfish.AllowableValues": ["On", "ForceOff", "ForceRestart"]}}
    }))
    .into_response()
}

async fn reset(
    State(bmc): State<Shared>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    if let Err(r) = check(&bmc, &headers) {
        return r;
    }
    let kind = body["ResetType"].as_str().unwrap_or_default().to_string();
    let mut b = bmc.lock().unwrap();
    b.resets.push(kind.clone());
    match kind.as_str() {
        "On" => b.power = "On".into(),
        "ForceOff" => b.power = "Off".into(),
        _ => {
            let error = json!({"error": {"code": "Base.1.8.GeneralError", "message": "general",
                "@Message.ExtendedInfo": [{"MessageId": "Base.1.8.ActionNotSupported",
                    "Message": "The host is in a state that does not allow a ForceRestart."}]}});
            return (StatusCode::BAD_REQUEST, axum::Json(error)).into_response();
        }
    }
    StatusCode::NO_CONTENT.into_response()
}

async fn manager(State(bmc): State<Shared>, headers: HeaderMap) -> Response {
    if let Err(r) = check(&bmc, &headers) {
        return r;
    }
    axum::Json(
        json!({"@odata.id": "/redfish/v1/Managers/bmc", "Actions": {"#Manager.Reset": {
        "target": "/redfish/v1/Managers/bmc/Actions/Manager.Reset",
        "ResetType@Redfish.AllowableValues": ["GracefulRestart"]}}}),
    )
    .into_response()
}

async fn manager_reset(
    State(bmc): State<Shared>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    if let Err(r) = check(&bmc, &headers) {
        return r;
    }
    let kind = body["ResetType"].as_str().unwrap_or_default();
    bmc.lock().unwrap().resets.push(format!("manager:{kind}"));
    StatusCode::NO_CONTENT.into_response()
}

async fn update_service(State(bmc): State<Shared>, headers: HeaderMap) -> Response {
    if let Err(r) = check(&bmc, &headers) {
        return r;
    }
    axum::Json(json!({"Actions": {"#UpdateService.SimpleUpdate": {
        "target": "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"}}}))
    .into_response()
}

async fn simple_update(
    State(bmc): State<Shared>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    if let Err(r) = check(&bmc, &headers) {
        return r;
    }
    let mut b = bmc.lock().unwrap();
    b.polls = 0;
    b.failing_image = body["ImageURI"]
        .as_str()
        .unwrap_or_default()
        .contains("bad");
    b.target = body["Targets"][0].as_str().map(String::from);
    let mut r = StatusCode::ACCEPTED.into_response();
    r.headers_mut().insert(
        "location",
        HeaderValue::from_static("/redfish/v1/TaskService/TaskMonitors/7"),
    );
    r
}

async fn monitor(State(bmc): State<Shared>, headers: HeaderMap) -> Response {
    if let Err(r) = check(&bmc, &headers) {
        return r;
    }
    let mut b = bmc.lock().unwrap();
    b.polls += 1;
    if b.polls < 3 {
        return (StatusCode::ACCEPTED, axum::Json(json!({}))).into_response();
    }
    if b.failing_image {
        return axum::Json(json!({"TaskState": "Exception", "TaskStatus": "Critical",
            "Messages": [{"Message": "Image signature verification failed."}]}))
        .into_response();
    }
    b.bios = "2.0.0".into();
    axum::Json(json!({"TaskState": "Completed", "TaskStatus": "OK"})).into_response()
}

/// A stand-in BMC on 127.0.0.1 and the state its handlers share.
pub async fn start(configure: impl FnOnce(&mut Bmc)) -> (u16, Shared) {
    let mut bmc = Bmc {
        power: "Off".into(),
        bios: "1.0.0".into(),
        ..Bmc::default()
    };
    configure(&mut bmc);
    let shared = Arc::new(Mutex::new(bmc));
    let app = Router::new()
        .route("/redfish/v1/", get(root))
        .route("/redfish/v1/SessionService/Sessions", post(login))
        .route("/redfish/v1/Systems", get(systems))
        .route("/redfish/v1/Systems/{id}", get(system))
        .route(
            "/redfish/v1/Systems/{id}/Actions/ComputerSystem.Reset",
            post(reset),
        )
        .route("/redfish/v1/Managers/bmc", get(manager))
        .route(
            "/redfish/v1/Managers/bmc/Actions/Manager.Reset",
            post(manager_reset),
        )
        .route("/redfish/v1/UpdateService", get(update_service))
        .route(
            "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate",
            post(simple_update),
        )
        .route("/redfish/v1/TaskService/TaskMonitors/7", get(monitor))
        .with_state(shared.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, shared)
}

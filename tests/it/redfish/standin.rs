//! What `sushy-emulator` cannot show, against an in-test Redfish BMC (axum): sessions and
//! re-login, 503 + Retry-After, `@Message.ExtendedInfo`, task monitors, discovery among several
//! systems, the per-BMC bound on calls in flight, oversized answers, and secrets kept out of
//! errors and `Debug`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use flow::components::{DeviceError, DevicePower, FirmwareRequest, FirmwareState, PowerOp};
use flow::inventory::model::ComponentType;
use serde_json::{Value, json};

use super::{Setup, tray};
use crate::support::redfish::{PASSWORD, TempDir, USER};

#[derive(Default)]
struct Bmc {
    sessions: bool,
    tokens: HashSet<String>,
    logins: u32,
    basic_calls: u32,
    busy: u32,
    delay_ms: u64,
    inflight: u32,
    max_inflight: u32,
    power: String,
    bios: String,
    polls: u32,
    failing_image: bool,
    target: Option<String>,
    huge: bool,
    resets: Vec<String>,
}

type Shared = Arc<Mutex<Bmc>>;

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
async fn start(configure: impl FnOnce(&mut Bmc)) -> (u16, Shared) {
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

fn device(serial: &str) -> flow::components::Device {
    tray(ComponentType::Compute, Some("127.0.0.1"), serial)
}

#[tokio::test]
async fn a_session_is_opened_once_and_renewed_after_a_401() {
    let (port, bmc) = start(|b| b.sessions = true).await;
    let m = Setup::http(port).managers();
    let status = m.status.unwrap();
    assert_eq!(
        status.power_status(&device("SN-A")).await,
        Ok(DevicePower::Off)
    );
    assert_eq!(
        status.power_status(&device("SN-A")).await,
        Ok(DevicePower::Off)
    );
    assert_eq!(bmc.lock().unwrap().logins, 1);
    bmc.lock().unwrap().tokens.clear();
    assert_eq!(
        status.power_status(&device("SN-A")).await,
        Ok(DevicePower::Off)
    );
    let b = bmc.lock().unwrap();
    assert_eq!(b.logins, 2, "logged in again after the 401");
    assert_eq!(
        b.basic_calls, 0,
        "every call after login used the session token"
    );
}

#[tokio::test]
async fn a_503_is_waited_out_per_retry_after_and_a_lasting_one_is_transient() {
    let (port, bmc) = start(|b| b.busy = 1).await;
    let status = Setup::http(port).managers().status.unwrap();
    let started = Instant::now();
    assert_eq!(
        status.power_status(&device("SN-A")).await,
        Ok(DevicePower::Off)
    );
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    bmc.lock().unwrap().busy = 100;
    let err = status.power_status(&device("SN-A")).await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert!(err.to_string().contains("HTTP 503"), "{err}");
}

#[tokio::test]
async fn refusals_carry_the_bmc_message_and_unlisted_reset_types_are_unsupported() {
    let (port, bmc) = start(|_| {}).await;
    let power = Setup::http(port).managers().power.unwrap();
    let err = power
        .set_power(&device("SN-A"), PowerOp::ForceRestart)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, DeviceError::Rejected(m)
            if m.contains("does not allow a ForceRestart") && m.contains("HTTP 400")),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    // GracefulShutdown is not in ResetType@Redfish.AllowableValues: nothing is sent.
    let err = power
        .set_power(&device("SN-A"), PowerOp::Off)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, DeviceError::Unsupported(m) if m.contains("GracefulShutdown")),
        "{err:?}"
    );
    power.set_power(&device("SN-A"), PowerOp::On).await.unwrap();
    power
        .set_power(&device("SN-A"), PowerOp::WarmReset)
        .await
        .unwrap();
    assert_eq!(
        bmc.lock().unwrap().resets,
        ["ForceRestart", "On", "manager:GracefulRestart"]
    );
}

#[tokio::test]
async fn firmware_follows_the_task_monitor_then_reads_the_version_back() {
    let (port, bmc) = start(|_| {}).await;
    let dir = TempDir::new();
    let catalog = dir.write(
        "catalog.toml",
        "[[firmware]]\ntype = \"compute\"\nversion = \"2.0.0\"\nimage_uri = \"https://fw.example/good.bin\"\n\
         [[firmware]]\ntype = \"compute\"\nversion = \"2.0.1\"\nimage_uri = \"https://fw.example/bad.bin\"\n",
    );
    let mut setup = Setup::http(port);
    setup.catalog_file = Some(catalog);
    let firmware = setup.managers().firmware.unwrap();
    let request = |v: &str| FirmwareRequest {
        target_version: Some(v.into()),
        sub_targets: vec![],
    };
    let tray = device("SN-A");
    firmware
        .start_update(&tray, &request("2.0.0"))
        .await
        .unwrap();
    assert_eq!(
        bmc.lock().unwrap().target.as_deref(),
        Some("/redfish/v1/Systems/A"),
        "Targets come from discovery"
    );
    let mut states = Vec::new();
    loop {
        let s = firmware.update_status(&tray).await.unwrap();
        states.push(s.state);
        if s.state == FirmwareState::Completed {
            assert_eq!(s.version.as_deref(), Some("2.0.0"));
            break;
        }
        assert!(states.len() < 10, "{states:?}");
    }
    assert_eq!(
        states,
        [
            FirmwareState::InProgress,
            FirmwareState::InProgress,
            FirmwareState::Completed
        ]
    );

    firmware
        .start_update(&tray, &request("2.0.1"))
        .await
        .unwrap();
    let mut last = firmware.update_status(&tray).await.unwrap();
    for _ in 0..5 {
        if last.state == FirmwareState::Failed {
            break;
        }
        last = firmware.update_status(&tray).await.unwrap();
    }
    assert_eq!(last.state, FirmwareState::Failed, "{last:?}");
    assert!(
        last.error
            .unwrap()
            .contains("Image signature verification failed")
    );

    let err = firmware
        .start_update(&tray, &request("3.0"))
        .await
        .unwrap_err();
    assert!(matches!(err, DeviceError::Unsupported(_)), "{err:?}");
}

#[tokio::test]
async fn of_several_systems_the_one_whose_serial_matches_is_driven() {
    let (port, _bmc) = start(|_| {}).await;
    let m = Setup::http(port).manager();
    use flow::components::Registration;
    assert_eq!(m.register(&device("SN-B")).await, Ok(Some("uuid-B".into())));
    let stranger = device("SN-C");
    let other = Setup::http(port).manager();
    let err = other.register(&stranger).await.unwrap_err();
    assert!(err.to_string().contains("serial number SN-C"), "{err}");
}

#[tokio::test]
async fn at_most_max_inflight_calls_reach_one_bmc_at_once() {
    let (port, bmc) = start(|b| b.delay_ms = 150).await;
    let status = Setup::http(port).managers().status.unwrap();
    let tray = device("SN-A");
    let calls = (0..8).map(|_| status.power_status(&tray));
    for r in futures::future::join_all(calls).await {
        assert_eq!(r, Ok(DevicePower::Off));
    }
    assert_eq!(bmc.lock().unwrap().max_inflight, 2);
}

#[tokio::test]
async fn an_oversized_answer_is_an_error_not_a_crash() {
    let (port, bmc) = start(|_| {}).await;
    let status = Setup::http(port).managers().status.unwrap();
    assert_eq!(
        status.power_status(&device("SN-A")).await,
        Ok(DevicePower::Off)
    );
    bmc.lock().unwrap().huge = true;
    let err = status.power_status(&device("SN-A")).await.unwrap_err();
    assert!(err.to_string().contains("larger than"), "{err}");
}

#[tokio::test]
async fn secrets_stay_out_of_errors_and_debug_output() {
    let (port, _bmc) = start(|b| b.sessions = true).await;
    let dir = TempDir::new();
    let wrong = "Wr0ng-but-still-secret";
    let creds = dir.write(
        "credentials.toml",
        &format!("[default]\nusername = \"{USER}\"\npassword = \"{wrong}\"\n"),
    );
    let mut setup = Setup::http(port);
    setup.credentials_file = Some(creds);
    let manager = setup.manager();
    let err = flow::components::PowerStatus::power_status(manager.as_ref(), &device("SN-A"))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("credentials rejected by BMC 127.0.0.1"),
        "{err}"
    );
    let config = flow::config::Config {
        redfish_password: Some(PASSWORD.into()),
        ..Default::default()
    };
    for text in [
        err.to_string(),
        format!("{err:?}"),
        format!("{manager:?}"),
        format!("{:?}", setup.redfish_setup()),
        format!("{config:?}"),
    ] {
        assert!(!text.contains(PASSWORD) && !text.contains(wrong), "{text}");
    }
}

/// A log sink for one test's `tracing` output.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn logs_warn_about_insecure_tls_and_never_carry_a_password() {
    let sink = Sink::default();
    let writer = sink.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let (port, _bmc) = start(|b| b.sessions = true).await;
    let dir = TempDir::new();
    let wrong = "An0ther-secret-pw";
    let creds = dir.write(
        "credentials.toml",
        &format!("[default]\nusername = \"{USER}\"\npassword = \"{wrong}\"\n"),
    );
    let mut setup = Setup::http(port);
    setup.insecure = true;
    setup.credentials_file = Some(creds.clone());
    let manager = setup.manager();
    let status = flow::components::registry::redfish_set(manager.clone())
        .status
        .unwrap();
    assert!(status.power_status(&device("SN-A")).await.is_err());
    // A broken file keeps the previous logins, and says so without quoting the file.
    std::fs::write(&creds, format!("password = \"{wrong}\" not toml")).unwrap();
    assert!(status.power_status(&device("SN-A")).await.is_err());

    let logs = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("FLOW_REDFISH_INSECURE=true"), "{logs}");
    assert!(
        logs.contains("keeping the previous BMC credentials"),
        "{logs}"
    );
    assert!(!logs.contains(wrong) && !logs.contains(PASSWORD), "{logs}");
}

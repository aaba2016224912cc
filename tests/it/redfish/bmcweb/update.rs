//! Firmware pushes as bmcweb takes them: `MultipartHttpPushUri` (multipart/form-data with an
//! `UpdateParameters` JSON part and an `UpdateFile` part) or `HttpPushUri` (the bare image); a
//! Task per push whose monitor answers 202 while it runs, 204 once, then 404, while the Task
//! resource stays. A test bundle is JSON: `{"install": {"<FirmwareInventory id>": "<version>"}}`
//! installs those versions, `{"fail": "<message>"}` ends the task in `Exception`.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::server::{Bmc, json_reply};
use super::tree::{error, key};

/// Polls (of the monitor or the Task) a task stays `Running`.
const RUNNING_POLLS: u32 = 2;
const TASKS: &str = "/redfish/v1/TaskService/Tasks";

/// One push as the BMC received it.
#[derive(Debug, Clone)]
pub struct Push {
    pub uri: String,
    pub parameters: Value,
    pub file: Vec<u8>,
}

struct Run {
    polls_left: u32,
    bundle: Value,
    monitor_done: bool,
}

/// What makes a staged image live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    BmcReset,
    PowerCycle,
    AcCycle,
}

impl Activation {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "bmc_reset" => Some(Self::BmcReset),
            "power_cycle" => Some(Self::PowerCycle),
            "ac_cycle" => Some(Self::AcCycle),
            _ => None,
        }
    }
}

/// An image staged by a finished task, waiting for its activation.
#[derive(Debug, Clone)]
pub struct Staged {
    pub member: String,
    pub version: Value,
    pub on: Activation,
}

#[derive(Default)]
pub struct Tasks {
    next: u32,
    runs: HashMap<u32, Run>,
    pub pushes: Vec<Push>,
    pub staged: Vec<Staged>,
    /// Each image made live after staging, as `(member, what made it live)`.
    pub activated: Vec<(String, &'static str)>,
    /// Polls a task stays `Running` (default [`RUNNING_POLLS`]).
    pub running_polls: Option<u32>,
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| i + from)
}

/// The parts of a multipart/form-data body, by their `name`.
fn parts(headers: &HeaderMap, body: &[u8]) -> Result<HashMap<String, Vec<u8>>, String> {
    let kind = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !kind.starts_with("multipart/form-data") {
        return Err(format!("Content-Type {kind:?} is not multipart/form-data"));
    }
    let boundary = kind
        .split("boundary=")
        .nth(1)
        .map(|b| b.trim_matches('"'))
        .ok_or("no boundary")?;
    let delimiter = format!("--{boundary}");
    let mut out = HashMap::new();
    let mut at = find(body, delimiter.as_bytes(), 0).ok_or("no first boundary")?;
    loop {
        at += delimiter.len();
        if body.get(at..at + 2) == Some(b"--") {
            return Ok(out);
        }
        let head_end = find(body, b"\r\n\r\n", at).ok_or("a part without headers")?;
        let head = String::from_utf8_lossy(&body[at..head_end]).to_string();
        let next = find(body, format!("\r\n{delimiter}").as_bytes(), head_end)
            .ok_or("a part without an end")?;
        let name = head
            .split("name=\"")
            .nth(1)
            .and_then(|n| n.split('"').next())
            .ok_or("a part without a name")?;
        out.insert(name.to_string(), body[head_end + 4..next].to_vec());
        at = next + 2;
    }
}

fn bad(message: &str) -> Response {
    json_reply(StatusCode::BAD_REQUEST, error("PropertyMissing", message))
}

/// A push to the tree's push URIs: a new task, answered 202 with its monitor.
pub fn push(b: &mut Bmc, path: &str, headers: &HeaderMap, body: &Bytes) -> Option<Response> {
    let service = b.tree.get("/redfish/v1/UpdateService")?.clone();
    let uri = |k: &str| service.get(k).and_then(Value::as_str).map(key);
    let (parameters, file) = if uri("MultipartHttpPushUri") == Some(key(path)) {
        let mut parts = match parts(headers, body) {
            Ok(p) => p,
            Err(why) => return Some(bad(&why)),
        };
        let Some(parameters) = parts.remove("UpdateParameters") else {
            return Some(bad("The property UpdateParameters is a required property."));
        };
        let Ok(parameters) = serde_json::from_slice::<Value>(&parameters) else {
            return Some(bad("UpdateParameters is not JSON."));
        };
        let Some(file) = parts.remove("UpdateFile") else {
            return Some(bad("The property UpdateFile is a required property."));
        };
        for target in parameters["Targets"].as_array().into_iter().flatten() {
            if target.as_str().and_then(|t| b.tree.get(t)).is_none() {
                return Some(bad(&format!(
                    "Target {target} is not a resource of this BMC."
                )));
            }
        }
        (parameters, file)
    } else if uri("HttpPushUri") == Some(key(path)) {
        (json!({}), body.to_vec())
    } else {
        return None;
    };
    b.tasks.next += 1;
    let id = b.tasks.next;
    b.tasks.pushes.push(Push {
        uri: key(path),
        parameters,
        file: file.clone(),
    });
    let task = format!("{TASKS}/{id}");
    let body = json!({"@odata.id": task, "Id": id.to_string(), "TaskState": "Running",
        "TaskStatus": "OK", "PercentComplete": 0, "Messages": [],
        "TaskMonitor": format!("{task}/Monitor")});
    b.tree.0.insert(task.clone(), body.clone());
    b.tasks.runs.insert(
        id,
        Run {
            polls_left: b.tasks.running_polls.unwrap_or(RUNNING_POLLS),
            bundle: serde_json::from_slice(&file).unwrap_or(Value::Null),
            monitor_done: false,
        },
    );
    let mut r = json_reply(StatusCode::ACCEPTED, body);
    r.headers_mut().insert(
        "location",
        HeaderValue::from_str(&format!("{task}/Monitor")).unwrap(),
    );
    Some(r)
}

/// Ends a task: the bundle's versions installed and `Completed`, or `Exception` with its message.
fn finish(b: &mut Bmc, id: u32) {
    let bundle = b.tasks.runs[&id].bundle.clone();
    let task = format!("{TASKS}/{id}");
    if let Some(installs) = bundle["install"].as_object() {
        let on = bundle["activate"].as_str().and_then(Activation::parse);
        for (member, version) in installs {
            match on {
                Some(on) => b.tasks.staged.push(Staged {
                    member: member.clone(),
                    version: version.clone(),
                    on,
                }),
                None => install(b, member, version.clone()),
            }
        }
        b.tree.set(&task, "/TaskState", json!("Completed"));
        b.tree.set(&task, "/PercentComplete", json!(100));
        b.tree.set(
            &task,
            "/Messages",
            json!([{"MessageId": "Update.1.0.UpdateSuccessful",
            "Message": "Device 'FW' successfully updated."}]),
        );
    } else {
        let why = bundle["fail"]
            .as_str()
            .unwrap_or("The image is not a valid update package.");
        b.tree.set(&task, "/TaskState", json!("Exception"));
        b.tree.set(&task, "/TaskStatus", json!("Critical"));
        b.tree.set(
            &task,
            "/Messages",
            json!([{"MessageId": "Update.1.0.ApplyFailed",
            "Message": why}]),
        );
    }
}

fn install(b: &mut Bmc, member: &str, version: Value) {
    let path = format!("/redfish/v1/UpdateService/FirmwareInventory/{member}");
    b.tree.set(&path, "/Version", version);
}

/// Makes live the images staged for `on`, or every staged image when `on` is `None` (the tray
/// lost its power); `why` is recorded with each.
pub fn activate(b: &mut Bmc, on: Option<Activation>, why: &'static str) {
    let (live, kept): (Vec<Staged>, Vec<Staged>) = std::mem::take(&mut b.tasks.staged)
        .into_iter()
        .partition(|s| on.is_none_or(|on| s.on == on));
    b.tasks.staged = kept;
    for s in live {
        b.tasks.activated.push((s.member.clone(), why));
        install(b, &s.member, s.version);
    }
}

/// Ends every running task now and spends its monitor's one 204, as when another client read it
/// first: the next monitor read is a 404 and only the Task tells how it ended.
pub fn end_unseen(b: &mut Bmc) {
    let running: Vec<u32> = b
        .tasks
        .runs
        .iter()
        .filter(|(_, r)| r.polls_left > 0)
        .map(|(id, _)| *id)
        .collect();
    for id in running {
        finish(b, id);
        let run = b.tasks.runs.get_mut(&id).unwrap();
        (run.polls_left, run.monitor_done) = (0, true);
    }
}

/// Reads of a task or its monitor; `None` for any other path.
pub fn read(b: &mut Bmc, path: &str) -> Option<Response> {
    let rest = key(path).strip_prefix(&format!("{TASKS}/"))?.to_string();
    let (id, monitor) = match rest.split_once('/') {
        Some((id, "Monitor")) => (id.parse::<u32>().ok()?, true),
        None => (rest.parse::<u32>().ok()?, false),
        _ => return None,
    };
    let run = b.tasks.runs.get_mut(&id)?;
    let running = run.polls_left > 0;
    if running {
        run.polls_left -= 1;
        if run.polls_left == 0 {
            finish(b, id);
        }
    }
    let task = b.tree.get(&format!("{TASKS}/{id}"))?.clone();
    if !monitor {
        return Some(json_reply(StatusCode::OK, task));
    }
    let run = b.tasks.runs.get_mut(&id)?;
    Some(if running && run.polls_left > 0 {
        json_reply(StatusCode::ACCEPTED, task)
    } else if !run.monitor_done {
        run.monitor_done = true;
        StatusCode::NO_CONTENT.into_response()
    } else {
        json_reply(
            StatusCode::NOT_FOUND,
            error("ResourceNotFound", "Monitor not found"),
        )
    })
}

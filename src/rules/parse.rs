//! Reads a rule from untyped JSON (a JSON or YAML body) and reports every problem at once, each
//! under the path of the field it concerns.

use std::time::Duration;

use serde_json::{Map, Value};

use super::duration;
use super::model::{
    Action, DEFINITION_VERSION, OPERATION_CODES, OnFailure, PowerCode, Retry, RuleDefinition,
    StageRule,
};
use crate::components::DevicePower;
use crate::error::{Result, Violations};
use crate::inventory::model::ComponentType;

/// A rule as submitted: what create and replace accept.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleInput {
    pub name: String,
    pub description: Option<String>,
    pub operation: String,
    pub is_default: bool,
    pub definition: RuleDefinition,
}

const MAX_PARALLEL: u64 = 1000;
const MAX_ATTEMPTS: u64 = 20;
const MAX_STAGES: usize = 64;

/// Field-by-field reader over one JSON object; records unknown keys and type errors.
struct Fields<'a> {
    path: String,
    map: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    fn new(value: &'a Value, path: &str, known: &[&str], v: &mut Violations) -> Option<Fields<'a>> {
        let Some(map) = value.as_object() else {
            v.push(path_or_body(path), "must be an object");
            return None;
        };
        for key in map.keys() {
            if !known.contains(&key.as_str()) {
                v.push(
                    join(path, key),
                    format!("unknown field (expected one of: {})", known.join(", ")),
                );
            }
        }
        Some(Fields {
            path: path.to_string(),
            map,
        })
    }

    fn at(&self, key: &str) -> String {
        join(&self.path, key)
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn string(&self, key: &str, required: bool, v: &mut Violations) -> Option<String> {
        match self.get(key) {
            None if required => {
                v.push(self.at(key), "is required");
                None
            }
            None => None,
            Some(Value::String(s)) if s.trim().is_empty() && required => {
                v.push(self.at(key), "must not be empty");
                None
            }
            Some(Value::String(s)) => Some(s.trim().to_string()),
            Some(_) => {
                v.push(self.at(key), "must be a string");
                None
            }
        }
    }

    fn duration(
        &self,
        key: &str,
        default: Option<Duration>,
        v: &mut Violations,
    ) -> Option<Duration> {
        match self.get(key) {
            None => {
                if default.is_none() {
                    v.push(self.at(key), "is required");
                }
                default
            }
            Some(Value::String(s)) => match duration::parse(s) {
                Ok(d) => Some(d),
                Err(e) => {
                    v.push(self.at(key), e);
                    None
                }
            },
            Some(_) => {
                v.push(
                    self.at(key),
                    "must be a duration string such as \"90s\" or \"5m\"",
                );
                None
            }
        }
    }

    fn positive_duration(
        &self,
        key: &str,
        default: Option<Duration>,
        v: &mut Violations,
    ) -> Option<Duration> {
        let d = self.duration(key, default, v)?;
        if d.is_zero() {
            v.push(self.at(key), "must be longer than zero");
            return None;
        }
        Some(d)
    }

    fn integer(
        &self,
        key: &str,
        default: u64,
        min: u64,
        max: u64,
        v: &mut Violations,
    ) -> Option<u64> {
        match self.get(key) {
            None => Some(default),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(i) if i >= min as i64 && i <= max as i64 => Some(i as u64),
                _ => {
                    v.push(
                        self.at(key),
                        format!("must be an integer from {min} to {max}"),
                    );
                    None
                }
            },
            Some(_) => {
                v.push(
                    self.at(key),
                    format!("must be an integer from {min} to {max}"),
                );
                None
            }
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn path_or_body(path: &str) -> String {
    if path.is_empty() {
        "body".into()
    } else {
        path.into()
    }
}

/// Reads a whole rule body: `name`, `description`, `operation`, `is_default`, `version`, `stages`.
pub fn rule(value: &Value) -> Result<RuleInput> {
    let mut v = Violations::default();
    let known = [
        "name",
        "description",
        "operation",
        "is_default",
        "version",
        "stages",
    ];
    let Some(f) = Fields::new(value, "", &known, &mut v) else {
        v.finish()?;
        unreachable!("an error was recorded");
    };
    let name = f.string("name", true, &mut v);
    if let Some(n) = &name
        && n.chars().count() > 128
    {
        v.push("name", "must be at most 128 characters");
    }
    let description = f
        .string("description", false, &mut v)
        .filter(|d| !d.is_empty());
    let operation = f.string("operation", true, &mut v);
    if let Some(op) = &operation
        && !OPERATION_CODES.contains(&op.as_str())
    {
        v.push(
            "operation",
            format!(
                "unknown operation '{op}' (expected one of: {})",
                OPERATION_CODES.join(", ")
            ),
        );
    }
    let is_default = match f.get("is_default") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            v.push("is_default", "must be true or false");
            false
        }
    };
    let definition = definition(value, operation.as_deref(), &mut v);
    v.finish()?;
    match (name, operation, definition) {
        (Some(name), Some(operation), Some(definition)) => Ok(RuleInput {
            name,
            description,
            operation,
            is_default,
            definition,
        }),
        _ => Err(crate::error::Error::invalid("body", "is not a valid rule")),
    }
}

/// Reads `version` and `stages` from a rule body. `operation` decides whether a `power_control`
/// action may leave out its operation.
pub fn definition(
    value: &Value,
    operation: Option<&str>,
    v: &mut Violations,
) -> Option<RuleDefinition> {
    let map = value.as_object()?;
    match map.get("version") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == DEFINITION_VERSION || s.is_empty() => {}
        Some(other) => v.push(
            "version",
            format!("unsupported definition version {other}; the current version is \"{DEFINITION_VERSION}\""),
        ),
    }
    let stages = match map.get("stages") {
        Some(Value::Array(stages)) if stages.is_empty() => {
            v.push("stages", "must list at least one stage");
            return None;
        }
        Some(Value::Array(stages)) if stages.len() > MAX_STAGES => {
            v.push("stages", format!("must list at most {MAX_STAGES} stages"));
            return None;
        }
        Some(Value::Array(stages)) => stages,
        None | Some(Value::Null) => {
            v.push("stages", "is required");
            return None;
        }
        Some(_) => {
            v.push("stages", "must be a list of stages");
            return None;
        }
    };
    let before = v.len();
    let parsed: Vec<Option<StageRule>> = stages
        .iter()
        .enumerate()
        .map(|(i, s)| stage(s, &format!("stages[{i}]"), operation, v))
        .collect();
    if v.len() != before {
        return None;
    }
    Some(RuleDefinition {
        version: DEFINITION_VERSION.to_string(),
        stages: parsed.into_iter().flatten().collect(),
    })
}

fn stage(
    value: &Value,
    path: &str,
    operation: Option<&str>,
    v: &mut Violations,
) -> Option<StageRule> {
    let known = [
        "name",
        "component_types",
        "actions",
        "max_parallel",
        "timeout",
        "retry",
        "on_failure",
        "delay_after",
    ];
    let f = Fields::new(value, path, &known, v)?;
    let mut ok = true;
    let types = component_types(f.get("component_types"), &f.at("component_types"), v);
    ok &= types.is_some();
    let actions = actions(f.get("actions"), &f.at("actions"), operation, v);
    ok &= actions.is_some();
    let max_parallel = f.integer("max_parallel", 1, 1, MAX_PARALLEL, v);
    let timeout = f.positive_duration("timeout", Some(Duration::from_secs(20 * 60)), v);
    let retry = match f.get("retry") {
        None => Some(Retry {
            max_attempts: 3,
            initial_interval: Duration::from_secs(1),
            backoff_coefficient: 2.0,
            max_interval: Duration::from_secs(60),
        }),
        Some(r) => retry(r, &f.at("retry"), v),
    };
    let on_failure = match f.get("on_failure").map(|x| x.as_str()) {
        None => Some(OnFailure::Stop),
        Some(Some("stop")) => Some(OnFailure::Stop),
        Some(Some("continue")) => Some(OnFailure::Continue),
        Some(_) => {
            v.push(f.at("on_failure"), "must be \"stop\" or \"continue\"");
            None
        }
    };
    let delay_after = f.duration("delay_after", Some(Duration::ZERO), v);
    if let (Some(actions), Some(timeout)) = (&actions, timeout) {
        let needed: Duration = actions.iter().map(Action::bound).sum();
        if timeout < needed {
            v.push(
                f.at("timeout"),
                format!(
                    "must be at least {}, the sum of its actions' timeouts and sleeps",
                    duration::format(needed)
                ),
            );
            ok = false;
        }
    }
    let (types, actions, max_parallel, timeout, retry, on_failure, delay_after) = (
        types?,
        actions?,
        max_parallel?,
        timeout?,
        retry?,
        on_failure?,
        delay_after?,
    );
    if !ok {
        return None;
    }
    let name = match f.string("name", false, v) {
        Some(n) if !n.is_empty() => n,
        _ => default_name(&types, &actions),
    };
    Some(StageRule {
        name,
        component_types: types,
        actions,
        max_parallel: max_parallel as u32,
        timeout,
        retry,
        on_failure,
        delay_after,
    })
}

fn default_name(types: &[ComponentType], actions: &[Action]) -> String {
    let main = actions
        .iter()
        .find(|a| a.acts())
        .or(actions.first())
        .map(Action::label)
        .unwrap_or_default();
    let types: Vec<&str> = types.iter().map(|t| t.as_str()).collect();
    format!("{main} {}", types.join("+"))
}

fn component_types(
    value: Option<&Value>,
    path: &str,
    v: &mut Violations,
) -> Option<Vec<ComponentType>> {
    let Some(Value::Array(items)) = value else {
        v.push(path, "is required: a non-empty list of component types");
        return None;
    };
    if items.is_empty() {
        v.push(path, "must name at least one component type");
        return None;
    }
    let mut types = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        match item.as_str().and_then(ComponentType::parse) {
            Some(t) if types.contains(&t) => {
                v.push(format!("{path}[{i}]"), format!("{t} is listed twice"));
                ok = false;
            }
            Some(t) => types.push(t),
            None => {
                v.push(
                    format!("{path}[{i}]"),
                    format!(
                        "unknown component type {item} (expected compute, nvswitch, powershelf, torswitch, ums or cdu)"
                    ),
                );
                ok = false;
            }
        }
    }
    ok.then_some(types)
}

fn retry(value: &Value, path: &str, v: &mut Violations) -> Option<Retry> {
    let known = [
        "max_attempts",
        "initial_interval",
        "backoff_coefficient",
        "max_interval",
    ];
    let f = Fields::new(value, path, &known, v)?;
    let attempts = f.integer("max_attempts", 3, 1, MAX_ATTEMPTS, v);
    let initial = f.positive_duration("initial_interval", Some(Duration::from_secs(1)), v);
    let coefficient = match f.get("backoff_coefficient") {
        None => Some(2.0),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(c) if (1.0..=10.0).contains(&c) => Some(c),
            _ => {
                v.push(f.at("backoff_coefficient"), "must be a number from 1 to 10");
                None
            }
        },
        Some(_) => {
            v.push(f.at("backoff_coefficient"), "must be a number from 1 to 10");
            None
        }
    };
    let max_interval = f.positive_duration("max_interval", Some(Duration::from_secs(60)), v);
    let (attempts, initial, coefficient, max_interval) =
        (attempts?, initial?, coefficient?, max_interval?);
    if max_interval < initial {
        v.push(
            f.at("max_interval"),
            "must not be shorter than initial_interval",
        );
        return None;
    }
    Some(Retry {
        max_attempts: attempts as u32,
        initial_interval: initial,
        backoff_coefficient: coefficient,
        max_interval,
    })
}

fn actions(
    value: Option<&Value>,
    path: &str,
    operation: Option<&str>,
    v: &mut Violations,
) -> Option<Vec<Action>> {
    let Some(Value::Array(items)) = value else {
        v.push(path, "is required: a non-empty list of actions");
        return None;
    };
    if items.is_empty() {
        v.push(path, "must list at least one action");
        return None;
    }
    let mut out = Vec::new();
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let at = format!("{path}[{i}]");
        match action(item, &at, operation, v) {
            Some(Action::FirmwareWait { .. })
                if !out.iter().any(|a| matches!(a, Action::FirmwareStart)) =>
            {
                v.push(
                    at,
                    "firmware_wait needs a firmware_start before it in the same stage",
                );
                ok = false;
            }
            Some(a) => out.push(a),
            None => ok = false,
        }
    }
    ok.then_some(out)
}

fn action(
    value: &Value,
    path: &str,
    operation: Option<&str>,
    v: &mut Violations,
) -> Option<Action> {
    let name = match value.get("action") {
        Some(Value::String(s)) => s.as_str(),
        _ => {
            v.push(
                join(path, "action"),
                format!("is required (one of: {})", Action::NAMES.join(", ")),
            );
            return None;
        }
    };
    let params: &[&str] = match name {
        "power_control" => &["action", "operation"],
        "verify_power" => &["action", "expect", "timeout", "poll_interval"],
        "verify_reachable" | "firmware_wait" => &["action", "timeout", "poll_interval"],
        "sleep" => &["action", "duration"],
        "firmware_start" | "register" => &["action"],
        other => {
            v.push(
                join(path, "action"),
                format!(
                    "unknown action '{other}' (expected one of: {})",
                    Action::NAMES.join(", ")
                ),
            );
            return None;
        }
    };
    let f = Fields::new(value, path, params, v)?;
    let polled = |v: &mut Violations| {
        let timeout = f.positive_duration("timeout", None, v);
        let poll = f.positive_duration("poll_interval", None, v);
        match (timeout, poll) {
            (Some(t), Some(p)) if p > t => {
                v.push(f.at("poll_interval"), "must not be longer than timeout");
                None
            }
            (Some(t), Some(p)) => Some((t, p)),
            _ => None,
        }
    };
    match name {
        "power_control" => match f.string("operation", false, v) {
            Some(code) => match PowerCode::parse(&code) {
                Some(code) => Some(Action::PowerControl {
                    operation: Some(code),
                }),
                None => {
                    v.push(
                        f.at("operation"),
                        format!(
                            "unknown power operation '{code}' (expected one of: {})",
                            PowerCode::ALL.join(", ")
                        ),
                    );
                    None
                }
            },
            None => match operation {
                Some(op) if PowerCode::inherited(op).is_none() => {
                    v.push(
                        f.at("operation"),
                        format!("is required in a {op} rule (only power_on, power_off and force_power_off rules pass their own)"),
                    );
                    None
                }
                _ => Some(Action::PowerControl { operation: None }),
            },
        },
        "verify_power" => {
            let expect = match f.get("expect").and_then(Value::as_str) {
                Some("on") => Some(DevicePower::On),
                Some("off") => Some(DevicePower::Off),
                _ => {
                    v.push(f.at("expect"), "must be \"on\" or \"off\"");
                    None
                }
            };
            let (timeout, poll_interval) = polled(v)?;
            Some(Action::VerifyPower {
                expect: expect?,
                timeout,
                poll_interval,
            })
        }
        "verify_reachable" => {
            let (timeout, poll_interval) = polled(v)?;
            Some(Action::VerifyReachable {
                timeout,
                poll_interval,
            })
        }
        "firmware_wait" => {
            let (timeout, poll_interval) = polled(v)?;
            Some(Action::FirmwareWait {
                timeout,
                poll_interval,
            })
        }
        "sleep" => Some(Action::Sleep {
            duration: f.positive_duration("duration", None, v)?,
        }),
        "firmware_start" => Some(Action::FirmwareStart),
        _ => Some(Action::Register),
    }
}

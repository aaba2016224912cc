//! Reads a rule from untyped JSON (a JSON or YAML body) and reports every problem at once, each
//! under the path of the field it concerns.

mod actions;
mod fields;

use std::time::Duration;

use serde_json::Value;

use self::actions::actions;
use self::fields::Fields;
use super::duration;
use super::model::{Action, DEFINITION_VERSION, OnFailure, Retry, RuleDefinition, StageRule};
use crate::domain::ComponentType;
use crate::domain::code::OperationCode;
use crate::error::{Result, Violations};

/// A rule as submitted: what create and replace accept.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleInput {
    pub name: String,
    pub description: Option<String>,
    pub operation: OperationCode,
    pub is_default: bool,
    pub definition: RuleDefinition,
}

const MAX_PARALLEL: u64 = 1000;
const MAX_ATTEMPTS: u64 = 20;
const MAX_STAGES: usize = 64;

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
    let operation =
        f.string("operation", true, &mut v)
            .and_then(|op| match op.parse::<OperationCode>() {
                Ok(code) => Some(code),
                Err(unknown) => {
                    v.push("operation", unknown.to_string());
                    None
                }
            });
    let is_default = match f.get("is_default") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            v.push("is_default", "must be true or false");
            false
        }
    };
    let definition = definition(value, operation, &mut v);
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
    operation: Option<OperationCode>,
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
    operation: Option<OperationCode>,
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
        "when",
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
    let when = match f.get("when").map(|x| x.as_str()) {
        None => Some(None),
        Some(Some("ac_cycle")) => Some(Some(crate::rules::model::StageWhen::AcCycle)),
        Some(_) => {
            v.push(
                f.at("when"),
                "must be \"ac_cycle\" (the stage runs only when a tray staged an image that needs the rack's AC cycle)",
            );
            None
        }
    };
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
    let when = when?;
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
        when,
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

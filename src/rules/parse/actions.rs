//! Reads a stage's actions, checking each action's own parameters.

use serde_json::Value;

use super::fields::{Fields, join};
use crate::domain::DevicePower;
use crate::domain::code::OperationCode;
use crate::error::Violations;
use crate::rules::model::{Action, PowerCode};

pub(super) fn actions(
    value: Option<&Value>,
    path: &str,
    operation: Option<OperationCode>,
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
                if !out
                    .iter()
                    .any(|a| matches!(a, Action::FirmwareStart { .. })) =>
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
    operation: Option<OperationCode>,
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
        "verify_reachable" | "firmware_wait" | "firmware_verify" | "firmware_recipe" => {
            &["action", "timeout", "poll_interval"]
        }
        "firmware_activate" => &["action", "bundle", "timeout", "poll_interval"],
        "sleep" => &["action", "duration"],
        "firmware_start" => &["action", "bundle"],
        "register" => &["action"],
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
                            PowerCode::ALL.map(PowerCode::as_str).join(", ")
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
        "firmware_start" => Some(Action::FirmwareStart {
            bundle: bundle(&f, v)?,
        }),
        "firmware_activate" => {
            let bundle = bundle(&f, v);
            let (timeout, poll_interval) = polled(v)?;
            Some(Action::FirmwareActivate {
                bundle: bundle?,
                timeout,
                poll_interval,
            })
        }
        "firmware_verify" => {
            let (timeout, poll_interval) = polled(v)?;
            Some(Action::FirmwareVerify {
                timeout,
                poll_interval,
            })
        }
        "firmware_recipe" => {
            let (timeout, poll_interval) = polled(v)?;
            Some(Action::FirmwareRecipe {
                timeout,
                poll_interval,
            })
        }
        _ => Some(Action::Register),
    }
}

/// An optional recipe bundle index (from 0); `Some(None)` when absent, `None` when invalid.
fn bundle(f: &Fields<'_>, v: &mut Violations) -> Option<Option<u32>> {
    match f.get("bundle") {
        None => Some(None),
        Some(value) => match value.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(n) => Some(Some(n)),
            None => {
                v.push(
                    f.at("bundle"),
                    "must be a bundle index of the recipe: a whole number from 0",
                );
                None
            }
        },
    }
}

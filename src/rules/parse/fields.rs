//! A field-by-field reader over untyped JSON objects that records every problem under its path.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::error::Violations;
use crate::rules::duration;

/// Field-by-field reader over one JSON object; records unknown keys and type errors.
pub(super) struct Fields<'a> {
    path: String,
    map: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    pub(super) fn new(
        value: &'a Value,
        path: &str,
        known: &[&str],
        v: &mut Violations,
    ) -> Option<Fields<'a>> {
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

    pub(super) fn at(&self, key: &str) -> String {
        join(&self.path, key)
    }

    pub(super) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    pub(super) fn string(&self, key: &str, required: bool, v: &mut Violations) -> Option<String> {
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

    pub(super) fn duration(
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

    pub(super) fn positive_duration(
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

    pub(super) fn integer(
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

pub(super) fn join(path: &str, key: &str) -> String {
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

//! The stable machine-readable codes a problem answer can carry, one closed set.
//!
//! Domain errors and HTTP problems name their kind by a [`Code`]; the wire form is its snake_case
//! string, and the API document lists [`Code::ALL`] as `Problem.code`'s enum.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Every code a problem (`application/problem+json`) can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Code {
    /// A component or BMC is attached to another rack or component.
    AttachedElsewhere,
    /// The request touches more racks than the caller's role may at once
    /// (`FLOW_LIMIT_RACKS_PER_REQUEST`); split it, or use a rollout whose waves fit.
    BlastRadius,
    /// The component belongs to another rack.
    ComponentElsewhere,
    /// Another request changed the record first; read it again and retry.
    ConcurrentUpdate,
    /// A console form came without a valid CSRF token.
    Csrf,
    /// The database is unreachable.
    DatabaseUnavailable,
    /// A default rule already exists for this operation.
    DefaultExists,
    /// A firmware operation would cover only part of an NVLink domain.
    DomainSplit,
    /// A unique key (serial, MAC, name, token) is already taken.
    Duplicate,
    /// The workflow engine (Temporal) is unreachable.
    EngineUnavailable,
    /// The caller's role may not do this.
    Forbidden,
    /// A target is held (`POST /v1/holds`); `errors` names every hold in the way.
    Held,
    /// An `Idempotency-Key` was reused with a different request.
    IdempotencyKeyReused,
    /// A bug or an impossible state; the details are in the server log.
    Internal,
    /// A console form or filter could not be read.
    Invalid,
    /// The body is not valid JSON or YAML.
    InvalidBody,
    /// One or more input fields are malformed; `errors` names each.
    InvalidInput,
    /// The last rack of a schedule cannot be removed.
    LastScope,
    /// The path exists but not with this method.
    MethodNotAllowed,
    /// The name is already taken.
    NameExists,
    /// The rollout has no approval gate waiting.
    NoApprovalGate,
    /// A firmware downgrade or rollback names a version the catalog has no recipe of for a
    /// targeted component (`errors` names each).
    NoCatalogEntry,
    /// No targeted rack has a component the operation can act on.
    NoComponents,
    /// A firmware rollback targets a component with no version recorded before its last
    /// upgrade, or components of one type that would go back to different versions.
    NoFirmwareHistory,
    /// The task has already ended.
    NotCancellable,
    /// Only a deleted record can be restored or purged.
    NotDeleted,
    /// No such resource or route.
    NotFound,
    /// A target is not ready (a `PreventOperations` alert, a BMC last seen unreachable, an
    /// NVLink domain's compute trays still on); `errors` names each.
    NotReady,
    /// A one-time schedule has already fired.
    OneTimeConsumed,
    /// The body is larger than the server accepts.
    PayloadTooLarge,
    /// `If-Match` does not match the current version.
    PreconditionFailed,
    /// Every targeted rack's queue is full.
    QueueFull,
    /// Every targeted rack is busy with a conflicting task.
    RackBusy,
    /// A request with the same `Idempotency-Key` is still being processed.
    RequestInProgress,
    /// The request took longer than the server allows.
    RequestTimeout,
    /// The rollout has ended.
    RolloutFinished,
    /// The requested rule does not exist.
    RuleNotFound,
    /// The schedule kept changing under concurrent updates.
    ScheduleBusy,
    /// The caller (or the whole server) holds as many event streams as it may.
    TooManyStreams,
    /// Missing or invalid credentials.
    Unauthorized,
    /// A dependency other than the database or Temporal is unreachable.
    Unavailable,
    /// No configured manager can run the operation.
    Unsupported,
    /// The body's `Content-Type` is not one the operation reads.
    UnsupportedMediaType,
}

impl Code {
    /// Every code, in wire-name order.
    pub const ALL: [Code; 43] = [
        Self::AttachedElsewhere,
        Self::BlastRadius,
        Self::ComponentElsewhere,
        Self::ConcurrentUpdate,
        Self::Csrf,
        Self::DatabaseUnavailable,
        Self::DefaultExists,
        Self::DomainSplit,
        Self::Duplicate,
        Self::EngineUnavailable,
        Self::Forbidden,
        Self::Held,
        Self::IdempotencyKeyReused,
        Self::Internal,
        Self::Invalid,
        Self::InvalidBody,
        Self::InvalidInput,
        Self::LastScope,
        Self::MethodNotAllowed,
        Self::NameExists,
        Self::NoApprovalGate,
        Self::NoCatalogEntry,
        Self::NoComponents,
        Self::NoFirmwareHistory,
        Self::NotCancellable,
        Self::NotDeleted,
        Self::NotFound,
        Self::NotReady,
        Self::OneTimeConsumed,
        Self::PayloadTooLarge,
        Self::PreconditionFailed,
        Self::QueueFull,
        Self::RackBusy,
        Self::RequestInProgress,
        Self::RequestTimeout,
        Self::RolloutFinished,
        Self::RuleNotFound,
        Self::ScheduleBusy,
        Self::TooManyStreams,
        Self::Unauthorized,
        Self::Unavailable,
        Self::Unsupported,
        Self::UnsupportedMediaType,
    ];

    /// The wire form (`rack_busy`), the same string serde writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AttachedElsewhere => "attached_elsewhere",
            Self::BlastRadius => "blast_radius",
            Self::ComponentElsewhere => "component_elsewhere",
            Self::ConcurrentUpdate => "concurrent_update",
            Self::Csrf => "csrf",
            Self::DatabaseUnavailable => "database_unavailable",
            Self::DefaultExists => "default_exists",
            Self::DomainSplit => "domain_split",
            Self::Duplicate => "duplicate",
            Self::EngineUnavailable => "engine_unavailable",
            Self::Forbidden => "forbidden",
            Self::Held => "held",
            Self::IdempotencyKeyReused => "idempotency_key_reused",
            Self::Internal => "internal",
            Self::Invalid => "invalid",
            Self::InvalidBody => "invalid_body",
            Self::InvalidInput => "invalid_input",
            Self::LastScope => "last_scope",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::NameExists => "name_exists",
            Self::NoApprovalGate => "no_approval_gate",
            Self::NoCatalogEntry => "no_catalog_entry",
            Self::NoComponents => "no_components",
            Self::NoFirmwareHistory => "no_firmware_history",
            Self::NotCancellable => "not_cancellable",
            Self::NotDeleted => "not_deleted",
            Self::NotFound => "not_found",
            Self::NotReady => "not_ready",
            Self::OneTimeConsumed => "one_time_consumed",
            Self::PayloadTooLarge => "payload_too_large",
            Self::PreconditionFailed => "precondition_failed",
            Self::QueueFull => "queue_full",
            Self::RackBusy => "rack_busy",
            Self::RequestInProgress => "request_in_progress",
            Self::RequestTimeout => "request_timeout",
            Self::RolloutFinished => "rollout_finished",
            Self::RuleNotFound => "rule_not_found",
            Self::ScheduleBusy => "schedule_busy",
            Self::TooManyStreams => "too_many_streams",
            Self::Unauthorized => "unauthorized",
            Self::Unavailable => "unavailable",
            Self::Unsupported => "unsupported",
            Self::UnsupportedMediaType => "unsupported_media_type",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Code {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| format!("unknown problem code {s:?}"))
    }
}

/// Asserts, for each of `codes`, that serde writes its `as_str` form and reads it back: the
/// check every closed set of wire names (problem, operation and refusal codes) makes.
#[cfg(test)]
pub(crate) fn assert_serde_writes_as_str<T>(
    codes: impl IntoIterator<Item = T>,
    as_str: fn(T) -> &'static str,
) where
    T: Serialize + serde::de::DeserializeOwned + PartialEq + fmt::Debug + Copy,
{
    for code in codes {
        let json = serde_json::to_value(code).unwrap();
        assert_eq!(json, serde_json::Value::String(as_str(code).to_string()));
        assert_eq!(serde_json::from_value::<T>(json).unwrap(), code);
    }
}

/// Asserts, for each of `codes`, that `FromStr` reads its `as_str` form back.
#[cfg(test)]
pub(crate) fn assert_from_str_reads_as_str<T>(
    codes: impl IntoIterator<Item = T>,
    as_str: fn(T) -> &'static str,
) where
    T: FromStr<Err: fmt::Debug> + PartialEq + fmt::Debug + Copy,
{
    for code in codes {
        assert_eq!(as_str(code).parse::<T>().unwrap(), code);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_through_serde_and_as_str() {
        assert_serde_writes_as_str(Code::ALL, Code::as_str);
        assert_from_str_reads_as_str(Code::ALL, Code::as_str);
    }

    #[test]
    fn all_lists_each_code_once() {
        let mut names: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Code::ALL.len());
    }
}

//! The one domain error type: each variant says what the caller can do about it.

use std::fmt;

mod code;

pub use code::Code;
#[cfg(test)]
pub(crate) use code::{assert_from_str_reads_as_str, assert_serde_writes_as_str};

/// A problem with one input field, named by its JSON path (`components[2].bmcs[0].mac_address`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// Everything that can go wrong in Flow's domain and storage layers.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input is malformed or breaks a rule; every offending field is listed.
    #[error("invalid input: {}", join(.0))]
    Invalid(Vec<FieldError>),
    /// The named thing does not exist (or is soft-deleted).
    #[error("{kind} {id} not found")]
    NotFound { kind: &'static str, id: String },
    /// The request clashes with stored state (duplicate key, attached elsewhere, not deleted yet).
    #[error("{message}")]
    Conflict {
        code: Code,
        message: String,
        errors: Vec<FieldError>,
    },
    /// The request is well-formed but cannot be carried out as asked.
    #[error("{message}")]
    Unprocessable {
        code: Code,
        message: String,
        errors: Vec<FieldError>,
    },
    /// The caller may not do this as asked: a request over its role's blast-radius cap
    /// (`blast_radius`, with the cap and the count).
    #[error("{message}")]
    Forbidden {
        code: Code,
        message: String,
        errors: Vec<FieldError>,
    },
    /// The caller's `If-Match` does not match the current version.
    #[error("{kind} {id} has changed: expected version {expected}, current is {current}")]
    PreconditionFailed {
        kind: &'static str,
        id: String,
        expected: String,
        current: String,
    },
    /// A dependency (database, Temporal, a device manager) is unreachable.
    #[error("{service} is unavailable: {message}")]
    Unavailable {
        service: &'static str,
        message: String,
    },
    /// Any other storage failure.
    #[error("database error: {0}")]
    Db(#[from] sea_orm::DbErr),
    /// A bug or an impossible state.
    #[error("internal error: {0}")]
    Internal(String),
}

fn join(errors: &[FieldError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Result alias used across the domain and storage layers.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// One invalid field.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid(vec![FieldError::new(field, message)])
    }

    pub fn not_found(kind: &'static str, id: impl fmt::Display) -> Self {
        Self::NotFound {
            kind,
            id: id.to_string(),
        }
    }

    pub fn conflict(code: Code, message: impl Into<String>) -> Self {
        Self::Conflict {
            code,
            message: message.into(),
            errors: Vec::new(),
        }
    }

    /// Whether retrying the same call later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable { .. } | Self::Db(_))
    }
}

/// Collects field errors while validating a whole input, so the caller sees all of them at once.
#[derive(Debug, Default)]
pub struct Violations(Vec<FieldError>);

impl Violations {
    pub fn push(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.push(FieldError::new(field, message));
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// `Ok(())` when nothing was collected, otherwise `Error::Invalid` with every violation.
    pub fn finish(self) -> Result<()> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(Error::Invalid(self.0))
        }
    }
}

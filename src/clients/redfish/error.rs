//! What a failed Redfish call means: transient, refused with the BMC's own words, or a login
//! problem; and the small readers of a BMC's error answers.

use std::time::Duration;

use serde_json::Value;

/// A failed Redfish call, by what the caller can do about it. The HTTP status the BMC answered
/// is a field, so callers decide on it (a 404 that means "rediscover") without reading text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedfishError {
    /// No answer, a timeout, a 5xx or a 503 that did not clear: may work later. `status` is
    /// `None` when no answer came at all.
    #[error("{message}")]
    Unreachable {
        status: Option<u16>,
        message: String,
    },
    /// The BMC refused the request (4xx), with its own message: retrying will not help.
    #[error("{message}")]
    Refused { status: u16, message: String },
    /// 401/403, or no login configured: never retried.
    #[error("{message}")]
    Credentials {
        status: Option<u16>,
        message: String,
    },
}

impl RedfishError {
    /// The HTTP status the BMC answered with, when it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Unreachable { status, .. } | Self::Credentials { status, .. } => *status,
            Self::Refused { status, .. } => Some(*status),
        }
    }

    /// The message, whatever the kind.
    pub fn message(&self) -> &str {
        match self {
            Self::Unreachable { message, .. }
            | Self::Refused { message, .. }
            | Self::Credentials { message, .. } => message,
        }
    }

    /// No answer came (refused connection, reset, timeout): what a rebooting BMC looks like.
    pub fn is_silence(&self) -> bool {
        matches!(self, Self::Unreachable { status: None, .. })
    }
}

/// An error and every cause under it: reqwest's own text says only "error sending request".
pub(super) fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

/// The BMC's own words for a refusal: `@Message.ExtendedInfo` messages, else `error.message`.
pub fn bmc_message(body: &Value) -> Option<String> {
    let error = body.get("error")?;
    let infos: Vec<&str> = error
        .get("@Message.ExtendedInfo")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|i| i.get("Message").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if infos.is_empty() {
        error
            .get("message")
            .and_then(Value::as_str)
            .map(String::from)
    } else {
        Some(infos.join("; "))
    }
}

pub(super) fn retry_after(headers: &reqwest::header::HeaderMap) -> Duration {
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(1))
        .min(super::MAX_RETRY_AFTER)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bmc_message_comes_from_extended_info_first() {
        let body = serde_json::json!({"error": {"code": "Base.1.0.GeneralError", "message": "general",
            "@Message.ExtendedInfo": [{"Message": "The value 'Bogus' is not allowed."},
                                      {"Message": "Try On."}]}});
        assert_eq!(
            bmc_message(&body).as_deref(),
            Some("The value 'Bogus' is not allowed.; Try On.")
        );
        let plain = serde_json::json!({"error": {"message": "Missing ImageURI"}});
        assert_eq!(bmc_message(&plain).as_deref(), Some("Missing ImageURI"));
        assert_eq!(bmc_message(&Value::Null), None);
    }
}

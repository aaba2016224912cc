//! Temporal's failures sorted by their gRPC status code, never by their text: a frontend that
//! cannot be reached or answer in time is "unavailable" (the API answers 503 and the caller may
//! retry), an existing run is "already started", and everything else is an error.

use temporalio_client::errors::{WorkflowInteractionError, WorkflowStartError};
use temporalio_client::tonic::{Code, Status};

use crate::tasks::EngineError;

/// Whether a status means "Temporal cannot serve this now" rather than "this request is wrong".
fn transient(code: Code) -> bool {
    matches!(
        code,
        // Not reachable (transport failures surface as Unavailable), too slow, rate limited or
        // the call was cut short: the same request may succeed later.
        Code::Unavailable | Code::DeadlineExceeded | Code::ResourceExhausted | Code::Cancelled
    )
}

/// Sorts one status from the Temporal frontend.
pub(super) fn from_status(status: &Status) -> EngineError {
    let message = format!("{:?}: {}", status.code(), status.message());
    match status.code() {
        Code::AlreadyExists => EngineError::AlreadyStarted,
        code if transient(code) => EngineError::Unavailable(message),
        _ => EngineError::Other(message),
    }
}

/// Sorts a failed workflow start.
pub(super) fn from_start(error: &WorkflowStartError) -> EngineError {
    match error {
        WorkflowStartError::AlreadyStarted { .. } => EngineError::AlreadyStarted,
        WorkflowStartError::Rpc(status) => from_status(status),
        // The input did not serialise: a bug here, not Temporal's trouble.
        other => EngineError::Other(other.to_string()),
    }
}

/// Sorts a failed cancel, describe or signal. Callers that treat a missing run as an answer
/// match `NotFound` before asking.
pub(super) fn from_interaction(error: &WorkflowInteractionError) -> EngineError {
    match error {
        WorkflowInteractionError::NotFound(status) | WorkflowInteractionError::Rpc(status) => {
            from_status(status)
        }
        other => EngineError::Other(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(code: Code, message: &str) -> EngineError {
        from_status(&Status::new(code, message))
    }

    #[test]
    fn transport_trouble_is_unavailable_whatever_the_text() {
        for code in [
            Code::Unavailable,
            Code::DeadlineExceeded,
            Code::ResourceExhausted,
            Code::Cancelled,
        ] {
            // The text says nothing of connections: only the code decides.
            assert!(
                matches!(sorted(code, "something"), EngineError::Unavailable(_)),
                "{code:?}"
            );
        }
    }

    #[test]
    fn a_request_fault_is_an_error_even_when_its_text_sounds_like_transport() {
        for code in [
            Code::InvalidArgument,
            Code::NotFound,
            Code::FailedPrecondition,
            Code::PermissionDenied,
            Code::Internal,
            Code::Unknown,
        ] {
            let error = sorted(code, "connection timed out while unavailable");
            assert!(
                matches!(error, EngineError::Other(_)),
                "{code:?}: {error:?}"
            );
        }
    }

    #[test]
    fn an_existing_run_is_already_started() {
        assert_eq!(
            sorted(Code::AlreadyExists, "workflow execution already started"),
            EngineError::AlreadyStarted
        );
        let start = WorkflowStartError::Rpc(Status::new(Code::AlreadyExists, "exists"));
        assert_eq!(from_start(&start), EngineError::AlreadyStarted);
    }

    #[test]
    fn start_and_interaction_errors_keep_the_status_code() {
        let start = WorkflowStartError::Rpc(Status::unavailable("frontend down"));
        assert!(matches!(from_start(&start), EngineError::Unavailable(_)));
        let start = WorkflowStartError::Rpc(Status::invalid_argument("bad task queue"));
        assert!(
            matches!(from_start(&start), EngineError::Other(m) if m.contains("bad task queue"))
        );
        let signal = WorkflowInteractionError::Rpc(Status::deadline_exceeded("slow"));
        assert!(matches!(
            from_interaction(&signal),
            EngineError::Unavailable(_)
        ));
        let missing = WorkflowInteractionError::NotFound(Status::not_found("no run"));
        assert!(matches!(from_interaction(&missing), EngineError::Other(_)));
        let other = WorkflowInteractionError::Other("decode failed".into());
        assert!(matches!(from_interaction(&other), EngineError::Other(_)));
    }
}

//! Thin transport wrappers for the services Flow calls: connection, deadlines and error
//! classification only; what a response means for a device is decided in `components`.

pub mod psm;
pub mod redfish;

/// A failed call to an external service, classified by whether retrying can help.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// No answer: connection refused, deadline passed, service unavailable or failing.
    #[error("{0}")]
    Unreachable(String),
    /// The service answered and refused the request (bad argument, not found, ...).
    #[error("{0}")]
    Refused(String),
}

impl ClientError {
    /// Classifies a gRPC status: only codes that mean "the call may work later" are retryable.
    pub fn from_status(service: &str, rpc: &str, status: &tonic::Status) -> Self {
        use tonic::Code;
        let text = format!("{service} {rpc}: {:?}: {}", status.code(), status.message());
        match status.code() {
            Code::Unavailable
            | Code::DeadlineExceeded
            | Code::Cancelled
            | Code::Unknown
            | Code::Internal
            | Code::ResourceExhausted
            | Code::Aborted => Self::Unreachable(text),
            _ => Self::Refused(text),
        }
    }
}

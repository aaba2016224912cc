//! The answer to a submission that created no task: the reason every targeted rack shares.

use super::{RefusalCode, Rejection};
use crate::error::{Code, Error, FieldError};

/// The error of a submission that created no task: what every refused rack has in common.
pub(super) fn refusal(rejected: &[Rejection]) -> Error {
    let errors: Vec<FieldError> = rejected
        .iter()
        .map(|r| FieldError::new(format!("racks.{}", r.rack_name), r.reason.clone()))
        .collect();
    let message = "no task was created: every targeted rack was refused".to_string();
    let all = |codes: &[RefusalCode]| rejected.iter().all(|r| codes.contains(&r.code));
    if all(&[RefusalCode::NoComponents]) {
        Error::Unprocessable {
            code: Code::NoComponents,
            message,
            errors,
        }
    } else if all(&[RefusalCode::NoComponents, RefusalCode::Unsupported]) {
        Error::Unprocessable {
            code: Code::Unsupported,
            message,
            errors,
        }
    } else if all(&[RefusalCode::Held, RefusalCode::NotReady]) {
        // Held or not ready by what was written while the request was decided.
        let code = if all(&[RefusalCode::NotReady]) {
            Code::NotReady
        } else {
            Code::Held
        };
        Error::Conflict {
            code,
            message,
            errors,
        }
    } else if all(&[RefusalCode::QueueFull]) {
        // Every rack refused because its queue is full: say so, a later retry may fit.
        Error::Conflict {
            code: Code::QueueFull,
            message,
            errors,
        }
    } else {
        Error::Conflict {
            code: Code::RackBusy,
            message,
            errors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::assert_serde_writes_as_str;

    #[test]
    fn every_refusal_code_is_the_problem_code_of_the_same_name() {
        assert_serde_writes_as_str(RefusalCode::ALL, RefusalCode::as_str);
        for code in RefusalCode::ALL {
            assert_eq!(Code::from(code).as_str(), code.as_str());
        }
    }
}

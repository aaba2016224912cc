//! Which console actions a viewer may take. The one place that decides it: pages ask
//! [`allows`] before offering a button or form, and the POST handlers ask again before acting.
//!
//! Flow has no roles yet (every caller may do everything, as with the API); once roles exist,
//! [`Role::of`] maps the session's token to its role and nothing else changes.

use axum::http::StatusCode;

use crate::api::problem::Problem;
use crate::app::AppState;

/// What a console user may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Reads everything, changes nothing.
    Viewer,
    /// Also runs operations, cancels tasks and controls schedules.
    Operator,
}

/// Something a console page can offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    RunOperation,
    CancelTask,
    ControlSchedule,
}

impl Role {
    /// The role of the current request. Without authentication everyone is an operator, the
    /// same as the API grants.
    pub fn of(_state: &AppState) -> Self {
        Role::Operator
    }
}

/// Whether `role` may take `action`.
pub fn allows(role: Role, action: Action) -> bool {
    match action {
        Action::RunOperation | Action::CancelTask | Action::ControlSchedule => {
            role == Role::Operator
        }
    }
}

/// Refuses an action the role may not take (a forged form, or a stale page).
pub fn require(role: Role, action: Action) -> Result<(), Problem> {
    if allows(role, action) {
        Ok(())
    } else {
        Err(Problem::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "your role may not do this",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_viewer_is_offered_no_action_and_an_operator_every_one() {
        for action in [
            Action::RunOperation,
            Action::CancelTask,
            Action::ControlSchedule,
        ] {
            assert!(!allows(Role::Viewer, action));
            assert!(require(Role::Viewer, action).is_err());
            assert!(allows(Role::Operator, action));
        }
    }
}

//! Who is looking at a console page and which actions they may take. The one place that decides
//! it: pages ask [`Viewer::may`] before offering a button or form, and the POST handlers ask
//! again with [`Viewer::require`] before acting (a forged form, or a page older than a change of
//! role, gets a readable 403).
//!
//! The identity comes from the API's access guard, which authenticates console requests by the
//! session cookie ([`super::session`]) and leaves the [`Identity`] in the request; roles are
//! the API's own ([`crate::auth::Role`], issue 17's table).

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;

use super::csrf::CsrfToken;
use super::page::UiError;
use crate::api::problem::Problem;
use crate::auth::{Identity, Role};
use crate::error::Code;

/// Something a console page can offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    RunOperation,
    CancelTask,
    ControlSchedule,
    /// Approve, pause, resume or abort a rollout.
    SteerRollout,
}

impl Action {
    /// The role the API asks for the same thing.
    pub fn needs(self) -> Role {
        match self {
            Action::RunOperation
            | Action::CancelTask
            | Action::ControlSchedule
            | Action::SteerRollout => Role::Operator,
        }
    }
}

/// The signed-in person (or `anonymous` when `FLOW_AUTH=none`).
#[derive(Debug, Clone)]
pub struct Viewer {
    pub identity: Identity,
    /// Whether there is a session to sign out of (false with `FLOW_AUTH=none`).
    pub signed_in: bool,
    /// This browser's form token, for the sign-out form every page carries.
    pub csrf: Option<CsrfToken>,
}

impl Viewer {
    pub fn new(identity: Identity) -> Self {
        let signed_in = identity != Identity::anonymous();
        Self {
            identity,
            signed_in,
            csrf: None,
        }
    }

    /// The strongest role held, as the page header shows it.
    pub fn role(&self) -> Option<Role> {
        self.identity.main_role()
    }

    /// Whether this viewer may take `action`.
    pub fn may(&self, action: Action) -> bool {
        self.identity.role_for(action.needs()).is_some()
    }

    /// Refuses an action the viewer's role may not take.
    pub fn require(&self, action: Action) -> Result<(), Problem> {
        if self.may(action) {
            return Ok(());
        }
        Err(Problem::new(
            StatusCode::FORBIDDEN,
            Code::Forbidden,
            format!(
                "this needs the {} role (or admin); you are signed in as {}",
                action.needs(),
                self.role().map_or("no Flow role", Role::as_str)
            ),
        ))
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Viewer {
    type Rejection = UiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        // The guard puts the identity on every console route it does not treat as public; a
        // route reaching here without one is wired wrong, and must not act for anybody.
        parts
            .extensions
            .get::<Identity>()
            .cloned()
            .map(|identity| Viewer {
                csrf: parts.extensions.get::<CsrfToken>().cloned(),
                ..Viewer::new(identity)
            })
            .ok_or_else(|| {
                UiError(Problem::new(
                    StatusCode::UNAUTHORIZED,
                    Code::Unauthorized,
                    "sign in to use the console",
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACTIONS: [Action; 4] = [
        Action::RunOperation,
        Action::CancelTask,
        Action::ControlSchedule,
        Action::SteerRollout,
    ];

    #[test]
    fn operators_and_admins_act_viewers_and_editors_only_look() {
        for role in Role::ALL {
            let viewer = Viewer::new(Identity::new("token:t", vec![role]));
            let acts = matches!(role, Role::Operator | Role::Admin);
            for action in ACTIONS {
                assert_eq!(viewer.may(action), acts, "{role} {action:?}");
                assert_eq!(viewer.require(action).is_ok(), acts, "{role} {action:?}");
            }
        }
        let anonymous = Viewer::new(Identity::anonymous());
        assert!(!anonymous.signed_in);
        assert!(ACTIONS.iter().all(|a| anonymous.may(*a)));
    }
}

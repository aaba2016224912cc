//! The blast-radius limit (`FLOW_LIMIT_RACKS_PER_REQUEST`): how many racks one request may touch,
//! by the caller's role. Operation requests and console submissions are checked here as they
//! are submitted, a rollout's every wave and a schedule's scope when they are created, a
//! schedule's fire when it fires. Over the cap, the answer is `403 blast_radius` naming the cap
//! and the count, and pointing to rollouts, which apply the cap per wave.
//!
//! The caller's roles come from the running audit context (the request's credentials, or a
//! schedule acting as `operator`). Outside any context the system itself acts, uncapped: a
//! rollout's run submits the racks of waves that were checked when it was created.

use crate::config::RackLimits;
use crate::domain::Role;
use crate::error::{Code, Error, FieldError, Result};

/// What the cap says of one request: the cap that applies (`None` = unlimited), the role it
/// belongs to, and how many racks the request touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Radius {
    pub role: Role,
    pub cap: Option<u32>,
    pub count: usize,
}

impl Radius {
    /// Whether the request stays within the cap.
    pub fn within(&self) -> bool {
        self.cap.is_none_or(|cap| self.count <= cap as usize)
    }
}

/// The radius of a request touching `count` racks, for a caller with `roles` (`None`: the
/// system, uncapped).
pub fn radius(limits: &RackLimits, roles: Option<&[Role]>, count: usize) -> Radius {
    let Some(roles) = roles else {
        return Radius {
            role: Role::Admin,
            cap: None,
            count,
        };
    };
    match limits.cap_for(roles) {
        Some((role, cap)) => Radius {
            role,
            cap: Some(cap),
            count,
        },
        None => Radius {
            role: roles
                .iter()
                .copied()
                .find(|r| r.grants(Role::Operator))
                .unwrap_or(Role::Operator),
            cap: None,
            count,
        },
    }
}

/// The radius for the running request or schedule.
pub fn current(limits: &RackLimits, count: usize) -> Radius {
    radius(limits, crate::audit::current_roles().as_deref(), count)
}

/// `403 blast_radius` when the radius is over its cap. `what` says what was counted ("this
/// request", "wave 3", "the schedule's scope"), `field` names the input at fault.
pub fn check(radius: Radius, what: &str, field: &str) -> Result<()> {
    let Some(cap) = radius.cap.filter(|_| !radius.within()) else {
        return Ok(());
    };
    let message = format!(
        "{what} touches {count} racks, more than the {cap} one request of role {role} may \
         (FLOW_LIMIT_RACKS_PER_REQUEST); split it, or use a rollout (POST /v1/rollouts) whose \
         waves stay within {cap} racks",
        count = radius.count,
        role = radius.role,
    );
    Err(Error::Forbidden {
        code: Code::BlastRadius,
        errors: vec![FieldError::new(
            field,
            format!("{} racks, cap {cap}", radius.count),
        )],
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn over_the_cap_is_refused_naming_the_cap_the_count_and_rollouts() {
        let limits = RackLimits::parse("operator=2,admin=5").unwrap();
        let ok = radius(&limits, Some(&[Role::Operator]), 2);
        assert!(check(ok, "this request", "target_spec").is_ok());
        let over = radius(&limits, Some(&[Role::Operator]), 3);
        let Err(Error::Forbidden {
            code,
            message,
            errors,
        }) = check(over, "this request", "target_spec")
        else {
            panic!("not refused");
        };
        assert_eq!(code, Code::BlastRadius);
        assert!(message.contains("3 racks") && message.contains("the 2 one request"));
        assert!(message.contains("rollout"), "{message}");
        assert_eq!(errors[0].field, "target_spec");
        // An admin holds the admin cap; the system is not capped.
        assert!(check(radius(&limits, Some(&[Role::Admin]), 5), "x", "f").is_ok());
        assert!(check(radius(&limits, None, 500), "x", "f").is_ok());
    }
}

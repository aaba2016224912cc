//! `FLOW_AUTH`, `FLOW_JWT_ROLE_MAP` and `FLOW_LIMIT_RACKS_PER_REQUEST` parsed into plain values:
//! which credentials are accepted, which identity-provider group maps to which Flow role, and how
//! many racks one request of each role may touch. `auth` builds its verifiers from the first two,
//! submissions apply the third.

use std::collections::HashMap;

use crate::domain::Role;

/// Which credentials `FLOW_AUTH` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modes {
    pub jwt: bool,
    pub token: bool,
}

impl Modes {
    /// `jwt`, `token`, `jwt,token` (either order) or `none`; `None` for anything else.
    pub fn parse(value: &str) -> Option<Modes> {
        let mut modes = Modes {
            jwt: false,
            token: false,
        };
        let value = value.trim();
        if value == "none" {
            return Some(modes);
        }
        for part in value.split(',').map(str::trim) {
            match part {
                "jwt" if !modes.jwt => modes.jwt = true,
                "token" if !modes.token => modes.token = true,
                _ => return None,
            }
        }
        Some(modes)
    }

    pub fn is_none(self) -> bool {
        !self.jwt && !self.token
    }
}

/// Parses `FLOW_JWT_ROLE_MAP` (`dc-admins=admin,noc=operator`).
pub fn parse_role_map(spec: &str) -> Result<HashMap<String, Role>, String> {
    let mut map = HashMap::new();
    for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (group, role) = pair
            .split_once('=')
            .ok_or_else(|| format!("{pair:?} is not group=role"))?;
        // An empty group would grant the role to a claim holding an empty string.
        if group.trim().is_empty() {
            return Err(format!("{pair:?} has an empty claim value"));
        }
        let role = Role::parse(role)
            .ok_or_else(|| format!("{role:?} is not a role (viewer, operator, editor or admin)"))?;
        map.insert(group.trim().to_string(), role);
    }
    Ok(map)
}

/// `FLOW_LIMIT_RACKS_PER_REQUEST` (`operator=8,admin=64`): the most racks one operation request
/// of a role may touch. A role left out, or given `0`, is unlimited.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RackLimits(HashMap<Role, u32>);

impl RackLimits {
    /// Parses `role=count,…`; an empty text is no limit at all.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let mut map = HashMap::new();
        for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (role, count) = pair
                .split_once('=')
                .ok_or_else(|| format!("{pair:?} is not role=count"))?;
            let role = Role::parse(role).ok_or_else(|| {
                format!("{role:?} is not a role (viewer, operator, editor or admin)")
            })?;
            let count: u32 = count.trim().parse().map_err(|_| {
                format!("{pair:?}: the count must be a whole number (0 = unlimited)")
            })?;
            if map.insert(role, count).is_some() {
                return Err(format!("{role} is given twice"));
            }
        }
        map.retain(|_, count| *count > 0);
        Ok(Self(map))
    }

    /// The cap of one role; `None` = unlimited.
    pub fn cap(&self, role: Role) -> Option<u32> {
        self.0.get(&role).copied()
    }

    /// The cap a caller holding `roles` submits under: the most generous one among its roles
    /// that may run operations (an admin who is also an operator is not held to the operator's
    /// cap), or the operator's cap for a caller with none of them (a viewer's dry run shows
    /// what an operator would hear). `None` = unlimited.
    pub fn cap_for(&self, roles: &[Role]) -> Option<(Role, u32)> {
        let mut running: Vec<Role> = roles
            .iter()
            .copied()
            .filter(|r| r.grants(Role::Operator))
            .collect();
        if running.is_empty() {
            running.push(Role::Operator);
        }
        let mut best: Option<(Role, u32)> = None;
        for role in running {
            let cap = self.cap(role)?;
            if best.is_none_or(|(_, b)| cap > b) {
                best = Some((role, cap));
            }
        }
        best
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rack_limits_read_roles_and_counts_and_zero_or_absence_is_unlimited() {
        let limits = RackLimits::parse("operator=8, admin=64,editor=0").unwrap();
        assert_eq!(limits.cap(Role::Operator), Some(8));
        assert_eq!(limits.cap(Role::Admin), Some(64));
        assert_eq!(limits.cap(Role::Editor), None);
        assert_eq!(limits.cap(Role::Viewer), None);
        assert!(RackLimits::parse("").unwrap().is_empty());
        for bad in [
            "operator",
            "boss=3",
            "operator=-1",
            "operator=x",
            "admin=1,admin=2",
        ] {
            assert!(RackLimits::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_caller_submits_under_the_most_generous_cap_of_the_roles_that_run_operations() {
        let limits = RackLimits::parse("operator=8,admin=64").unwrap();
        use Role::{Admin, Editor, Operator, Viewer};
        assert_eq!(limits.cap_for(&[Operator]), Some((Operator, 8)));
        assert_eq!(limits.cap_for(&[Operator, Admin]), Some((Admin, 64)));
        assert_eq!(limits.cap_for(&[Editor, Operator]), Some((Operator, 8)));
        assert_eq!(limits.cap_for(&[Viewer]), Some((Operator, 8)));
        let admin_free = RackLimits::parse("operator=8").unwrap();
        assert_eq!(admin_free.cap_for(&[Operator, Admin]), None);
        assert_eq!(admin_free.cap_for(&[Operator]), Some((Operator, 8)));
    }
}

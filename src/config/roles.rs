//! `FLOW_AUTH` and `FLOW_JWT_ROLE_MAP` parsed into plain values: which credentials are accepted,
//! and which identity-provider group maps to which Flow role. `auth` builds its verifiers from them.

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
        let role = Role::parse(role)
            .ok_or_else(|| format!("{role:?} is not a role (viewer, operator, editor or admin)"))?;
        map.insert(group.trim().to_string(), role);
    }
    Ok(map)
}

//! Flow's roles: the words the routes, the credentials (JWT role maps, API tokens) and the
//! configuration all use for what a caller may do.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a caller may do. Not a ladder: an editor cannot power racks, an operator cannot edit the
/// inventory; an admin may do everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Every read, event streams and dry runs.
    Viewer,
    /// Viewer + run operations, cancel tasks, live validation, trigger/pause/resume schedules.
    Operator,
    /// Viewer + inventory writes (racks, components, NVL domains).
    Editor,
    /// Everything, including rules, schedule definitions, purge, tokens and the audit log.
    Admin,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Viewer, Role::Operator, Role::Editor, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Editor => "editor",
            Role::Admin => "admin",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s.trim())
    }

    /// Whether holding `self` is enough for a route that needs `needed`.
    pub fn grants(self, needed: Role) -> bool {
        self == Role::Admin || needed == Role::Viewer || self == needed
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

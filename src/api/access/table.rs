//! The guard's table: method + path template → [`Access`], read once from the routes' own
//! declarations in the generated OpenAPI document, plus the prefix rows of the console (which is
//! not in the document).

use std::collections::HashMap;
use std::sync::OnceLock;

use utoipa::openapi::path::Operation;

use super::Access::{self, Public, Session};
use crate::auth::Role::{Operator, Viewer};

/// The security requirement name under which a `#[utoipa::path]` declares its access; the
/// document's real scheme (`bearerAuth`) replaces it in [`crate::api::openapi::secure`].
pub const DECLARED: &str = "access";

/// Route families decided by path prefix (the operator console and the document itself, which
/// are not operations of the OpenAPI document): method (`*`: any), prefix, access. A path
/// matches a prefix it equals or continues with `/`; the first matching row decides, so
/// narrower rows come first. The declared routes are consulted before this table.
pub const PREFIXES: &[(&str, &str, Access)] = &[
    ("GET", "/openapi.json", Public),
    // What the sign-in page itself needs.
    ("GET", "/ui/assets", Public),
    ("*", "/ui/login", Public),
    ("POST", "/ui/logout", Public),
    // Pages read; forms act (the console checks each action's own role again).
    ("GET", "/ui", Session(Viewer)),
    ("HEAD", "/ui", Session(Viewer)),
    ("*", "/ui", Session(Operator)),
];

/// The access an operation declares, if it declares one (and only one) that Flow knows.
pub fn declared_in(op: &Operation) -> Option<Access> {
    let requirements = op.security.as_ref()?;
    let mut words = requirements.iter().filter_map(|requirement| {
        let value = serde_json::to_value(requirement).ok()?;
        let words = value.get(DECLARED)?.as_array()?.clone();
        Some(words)
    });
    let words = words.next()?;
    match words.as_slice() {
        [word] => Access::declared(word.as_str()?),
        _ => None,
    }
}

/// Every route of the OpenAPI document that declares its access: method (upper case), path
/// template as the document spells it, access. Built once, from the same routes the server
/// mounts.
pub fn routes() -> &'static [(String, String, Access)] {
    static TABLE: OnceLock<Vec<(String, String, Access)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let (_, doc) = crate::api::api_router().split_for_parts();
        let mut table = Vec::new();
        for (path, item) in &doc.paths.paths {
            for (method, op) in [
                ("GET", &item.get),
                ("POST", &item.post),
                ("PUT", &item.put),
                ("PATCH", &item.patch),
                ("DELETE", &item.delete),
            ] {
                if let Some(access) = op.as_ref().and_then(declared_in) {
                    table.push((method.to_string(), path.clone(), access));
                }
            }
        }
        table
    })
}

/// [`routes`] by path template, each path's rows in the table's order: every request is decided
/// here, and a scan of the whole table cost more than a hash lookup (about 2,900 instructions
/// per request under callgrind, most of them string comparisons).
fn by_path() -> &'static HashMap<&'static str, Vec<(&'static str, Access)>> {
    static INDEX: OnceLock<HashMap<&'static str, Vec<(&'static str, Access)>>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index: HashMap<&'static str, Vec<(&'static str, Access)>> = HashMap::new();
        for (method, path, access) in routes() {
            index
                .entry(path.as_str())
                .or_default()
                .push((method.as_str(), *access));
        }
        index
    })
}

/// The tables' decision for a route, if they have one. `HEAD` is a `GET` without its body: a
/// route without a `HEAD` row of its own takes its `GET` row's decision.
pub fn access_for(method: &str, path: &str) -> Option<Access> {
    decided(method, path).or_else(|| {
        method
            .eq_ignore_ascii_case("HEAD")
            .then(|| decided("GET", path))
            .flatten()
    })
}

fn decided(method: &str, path: &str) -> Option<Access> {
    let method_matches = |m: &str| m == "*" || m.eq_ignore_ascii_case(method);
    by_path()
        .get(path)
        .and_then(|rows| rows.iter().find(|(m, _)| method_matches(m)))
        .map(|(_, access)| *access)
        .or_else(|| {
            PREFIXES
                .iter()
                .find(|(m, prefix, _)| {
                    method_matches(m)
                        && path
                            .strip_prefix(prefix)
                            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
                })
                .map(|(_, _, access)| *access)
        })
}

//! The layered loader: each setting's default, then the TOML file `FLOW_CONFIG` names, then the
//! original service's variables, then `FLOW_*` variables, merged into one TOML tree. Every value
//! is checked against its definition (type, range, check) before the tree becomes a
//! [`Config`], so a bad value is reported with the variable and file key that name it.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use toml::{Table, Value};

use super::settings::{self, EnvForm, Kind, SETTINGS, Setting};
use super::{Config, ConfigError, legacy};

/// The configuration with every setting at its default.
#[allow(
    clippy::expect_used,
    reason = "the defaults are constants, and a unit test loads them"
)]
pub(super) fn defaults() -> Config {
    build(defaults_table()).expect("the defined defaults make a valid configuration")
}

/// Defaults → file → legacy variables → `FLOW_*` variables, each value checked.
pub(super) fn layered(env: &HashMap<String, String>) -> Result<Config, ConfigError> {
    let mut tree = defaults_table();
    if let Some(path) = env.get("FLOW_CONFIG") {
        for (key, value) in read_file(Path::new(path))? {
            let setting = settings::by_key(&key).ok_or_else(|| {
                ConfigError(format!("{path}: unknown key {key:?} (keys are the FLOW_* variables without FLOW_, in lower case)"))
            })?;
            set(&mut tree, setting.path, value);
        }
    }
    for (setting, text) in legacy::values(env) {
        set(&mut tree, setting.path, from_env(setting, &text)?);
    }
    // A value a `FLOW_*` variable gave is reported by the variable alone: that is what the
    // operator wrote; one from the file or a default also names its file key.
    let mut from_variables = HashSet::new();
    for (setting, text) in SETTINGS.iter().filter_map(|s| Some((s, env_text(s, env)?))) {
        set(&mut tree, setting.path, from_env(setting, &text)?);
        from_variables.insert(setting.env);
    }
    for setting in SETTINGS {
        check(setting, &mut tree, from_variables.contains(setting.env))?;
    }
    build(tree)
}

fn read_file(path: &Path) -> Result<Table, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError(format!("{}: {e}", path.display())))?;
    text.parse::<Table>()
        .map_err(|e| ConfigError(format!("{}: {e}", path.display())))
}

fn build(tree: Table) -> Result<Config, ConfigError> {
    // Every value was checked against its definition, so this fails only on a definition that
    // does not fit its field.
    Value::Table(tree)
        .try_into()
        .map_err(|e| ConfigError(format!("{e}")))
}

fn defaults_table() -> Table {
    let mut tree = Table::new();
    for setting in SETTINGS {
        let value = match setting.kind {
            Kind::Text { default, .. } => Value::String(default.into()),
            Kind::Optional { .. } => continue,
            Kind::Int { default, .. } => Value::Integer(default as i64),
            Kind::Float { default, .. } => Value::Float(default),
            Kind::Bool { default } => Value::Boolean(default),
            Kind::List => Value::Array(Vec::new()),
        };
        set(&mut tree, setting.path, value);
    }
    tree
}

/// The variable's text, or `None` when it counts as unset.
fn env_text(setting: &Setting, env: &HashMap<String, String>) -> Option<String> {
    let text = env.get(setting.env)?;
    match setting.form {
        EnvForm::EmptyIsValue => Some(text.clone()),
        _ if text.is_empty() => None,
        EnvForm::Plain => Some(text.clone()),
        EnvForm::Trimmed => Some(text.trim().to_string()),
        EnvForm::Lowercase => Some(text.to_ascii_lowercase()),
    }
}

/// A variable's text as a value of the setting's kind.
fn from_env(setting: &Setting, text: &str) -> Result<Value, ConfigError> {
    let bad = |e: &dyn std::fmt::Display| ConfigError(format!("{}={text:?}: {e}", setting.env));
    Ok(match setting.kind {
        Kind::Text { .. } | Kind::Optional { .. } => Value::String(text.into()),
        Kind::Int { .. } => Value::Integer(text.parse().map_err(|e| bad(&e))?),
        Kind::Float { .. } => Value::Float(text.parse().map_err(|e| bad(&e))?),
        Kind::Bool { .. } => Value::Boolean(text.parse().map_err(|e| bad(&e))?),
        Kind::List => Value::Array(
            text.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| Value::String(s.into()))
                .collect(),
        ),
    })
}

/// Checks the merged value of one setting against its definition (integers given for a
/// number become floats).
fn check(setting: &Setting, tree: &mut Table, from_variable: bool) -> Result<(), ConfigError> {
    let Some(value) = get_mut(tree, setting.path) else {
        return Ok(()); // an optional setting left unset
    };
    let name = if from_variable {
        setting.env.to_string()
    } else {
        setting.name()
    };
    let problem = |what: String| {
        let space = if what.starts_with(':') { "" } else { " " };
        Err(ConfigError(format!("{name}{space}{what}")))
    };
    match (setting.kind, &*value) {
        (Kind::Text { check, .. } | Kind::Optional { check }, Value::String(s)) => {
            match check.map(|c| c(s)) {
                Some(Err(e)) => problem(e),
                _ => Ok(()),
            }
        }
        (Kind::Bool { .. }, Value::Boolean(_)) => Ok(()),
        (Kind::Int { min, max, .. }, Value::Integer(n)) => {
            if u64::try_from(*n).is_ok_and(|n| (min..=max).contains(&n)) {
                Ok(())
            } else {
                problem(format!("must be between {min} and {max}, not {n}"))
            }
        }
        (Kind::Float { min, max, .. }, Value::Float(_) | Value::Integer(_)) => {
            let x = match value {
                Value::Integer(n) => *n as f64,
                Value::Float(x) => *x,
                _ => unreachable!("matched above"),
            };
            *value = Value::Float(x);
            if (min..=max).contains(&x) {
                Ok(())
            } else {
                problem(format!("must be between {min} and {max}, not {x}"))
            }
        }
        (Kind::List, Value::Array(items)) if items.iter().all(Value::is_str) => Ok(()),
        (kind, other) => problem(format!(
            "must be {}, not a {}",
            match kind {
                Kind::Text { .. } | Kind::Optional { .. } => "a string",
                Kind::Int { .. } => "a whole number",
                Kind::Float { .. } => "a number",
                Kind::Bool { .. } => "true or false",
                Kind::List => "a list of strings",
            },
            other.type_str()
        )),
    }
}

/// Sets `a.b.c` in the tree, making the tables on the way.
fn set(tree: &mut Table, path: &str, value: Value) {
    let (parents, leaf) = path.rsplit_once('.').unwrap_or(("", path));
    let mut table = tree;
    for part in parents.split('.').filter(|p| !p.is_empty()) {
        let next = table
            .entry(part)
            .or_insert_with(|| Value::Table(Table::new()));
        if !next.is_table() {
            *next = Value::Table(Table::new());
        }
        let Value::Table(next) = next else {
            return; // made a table just above
        };
        table = next;
    }
    table.insert(leaf.into(), value);
}

fn get_mut<'t>(tree: &'t mut Table, path: &str) -> Option<&'t mut Value> {
    let mut parts = path.split('.');
    let mut value = tree.get_mut(parts.next()?)?;
    for part in parts {
        value = value.as_table_mut()?.get_mut(part)?;
    }
    Some(value)
}

/// The value at `a.b.c`, for [`super::effective`].
pub(super) fn get<'t>(tree: &'t Table, path: &str) -> Option<&'t Value> {
    let mut parts = path.split('.');
    let mut value = tree.get(parts.next()?)?;
    for part in parts {
        value = value.as_table()?.get(part)?;
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::super::tests::env;

    #[test]
    fn file_values_of_the_wrong_type_name_the_setting() {
        let dir = std::env::temp_dir().join(format!("flow-config-type-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (line, named) in [
            (
                "psm_timeout_secs = \"soon\"",
                "FLOW_PSM_TIMEOUT_SECS (psm_timeout_secs)",
            ),
            (
                "redfish_insecure = 1",
                "FLOW_REDFISH_INSECURE (redfish_insecure)",
            ),
            (
                "sim_fail_serials = \"SN1\"",
                "FLOW_SIM_FAIL_SERIALS (sim_fail_serials)",
            ),
            ("redfish_port = 70000", "FLOW_REDFISH_PORT (redfish_port)"),
        ] {
            let file = dir.join("flow.toml");
            std::fs::write(&file, format!("{line}\n")).unwrap();
            let err = Config::load(&env(&[("FLOW_CONFIG", file.to_str().unwrap())])).unwrap_err();
            assert!(err.to_string().contains(named), "{line}: {err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

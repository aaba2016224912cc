//! `flow rule …`: operation rules (create from JSON or YAML, versions, defaults) and the rules
//! racks are attached to.

use clap::builder::PossibleValue;
use clap::{Subcommand, ValueEnum};
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use super::client::{CliError, Client, exit};
use super::input::{rack_id, read_text};
use super::output::{self, Format, Table, cell, fields};
use super::racks::done;
use crate::domain::code::OperationCode;

/// Operations as command-line values, spelled as the API spells them (`power_on`, `upgrade`).
/// The CLI's concern, so it lives here rather than on the domain enum.
impl ValueEnum for OperationCode {
    fn value_variants<'a>() -> &'a [Self] {
        &OperationCode::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.as_str()))
    }
}

/// `flow rule …`
#[derive(Debug, Subcommand)]
pub enum RuleCommand {
    /// List stored rules, newest first (or Flow's built-in ones).
    List {
        #[arg(long, value_enum)]
        operation: Option<OperationCode>,
        /// Only default rules.
        #[arg(long)]
        default: bool,
        /// Flow's built-in rules instead of stored ones.
        #[arg(long)]
        builtin: bool,
    },
    /// Show a rule's current version, one line per stage.
    Get { id: String },
    /// Create a rule from a JSON or YAML file (`-` reads stdin).
    Create {
        #[arg(short, long)]
        file: String,
    },
    /// Replace a rule's name, description, stages and default flag (a new version).
    Replace {
        id: String,
        #[arg(short, long)]
        file: String,
    },
    /// Delete a rule with its versions and rack attachments.
    Delete { id: String },
    /// Every version of a rule, newest first.
    Versions { id: String },
    /// Make a rule its operation's default (or, with `--unset`, stop it being one).
    Default {
        id: String,
        #[arg(long)]
        unset: bool,
    },
    /// Make a rack run a rule for an operation.
    Attach {
        /// Rack name or id.
        #[arg(long)]
        rack: String,
        #[arg(long, value_enum)]
        operation: OperationCode,
        /// Rule id.
        #[arg(long)]
        rule: String,
    },
    /// Let a rack go back to the default or built-in rule for an operation.
    Detach {
        /// Rack name or id.
        #[arg(long)]
        rack: String,
        #[arg(long, value_enum)]
        operation: OperationCode,
    },
    /// The rules a rack is attached to, one per operation at most.
    Rack {
        /// Rack name or id.
        rack: String,
    },
}

/// Runs one subcommand; `Ok` holds the exit code.
pub async fn run(client: &Client, format: Format, command: &RuleCommand) -> Result<u8, CliError> {
    match command {
        RuleCommand::List {
            operation,
            default,
            builtin,
        } => {
            let mut query = Vec::new();
            if let Some(operation) = operation {
                query.push(("operation", operation.to_string()));
            }
            if *default {
                query.push(("is_default", "true".to_string()));
            }
            if *builtin {
                query.push(("builtin", "true".to_string()));
            }
            let reply = client.get("/v1/operation-rules", &query).await?;
            output::emit(format, &reply.text, &reply.body, |body| {
                rules_table(body["items"].as_array().map(Vec::as_slice).unwrap_or(&[]))
            });
        }
        RuleCommand::Get { id } => {
            let reply = client.get(&rule_path(id, "")?, &[]).await?;
            output::emit(format, &reply.text, &reply.body, rule_view);
        }
        RuleCommand::Create { file } => {
            let request = with_document(client.request(Method::POST, "/v1/operation-rules"), file)?;
            let reply = client.send(request).await?;
            output::emit(format, &reply.text, &reply.body, rule_view);
        }
        RuleCommand::Replace { id, file } => {
            let path = rule_path(id, "")?;
            let request = with_document(client.request(Method::PUT, &path), file)?;
            let reply = client.send(request).await?;
            output::emit(format, &reply.text, &reply.body, rule_view);
        }
        RuleCommand::Delete { id } => {
            let path = rule_path(id, "")?;
            client.send(client.request(Method::DELETE, &path)).await?;
            done(format, &format!("deleted rule {id}"));
        }
        RuleCommand::Versions { id } => {
            let reply = client.get(&rule_path(id, "/versions")?, &[]).await?;
            output::emit(format, &reply.text, &reply.body, |body| {
                versions_view(body["items"].as_array().map(Vec::as_slice).unwrap_or(&[]))
            });
        }
        RuleCommand::Default { id, unset } => {
            let method = if *unset { Method::DELETE } else { Method::POST };
            let path = rule_path(id, "/default")?;
            let reply = client.send(client.request(method, &path)).await?;
            output::emit(format, &reply.text, &reply.body, rule_view);
        }
        RuleCommand::Attach {
            rack,
            operation,
            rule,
        } => {
            let rule = parse_id(rule)?;
            let id = rack_id(client, rack).await?;
            let path = format!("/v1/racks/{id}/operation-rules/{operation}");
            let request = client
                .request(Method::PUT, &path)
                .json(&json!({ "rule_id": rule }));
            let reply = client.send(request).await?;
            output::emit(format, &reply.text, &reply.body, |a| {
                associations_table(std::slice::from_ref(a))
            });
        }
        RuleCommand::Detach { rack, operation } => {
            let id = rack_id(client, rack).await?;
            let path = format!("/v1/racks/{id}/operation-rules/{operation}");
            client.send(client.request(Method::DELETE, &path)).await?;
            done(
                format,
                &format!("rack {rack} runs the default rule for {operation}"),
            );
        }
        RuleCommand::Rack { rack } => {
            let id = rack_id(client, rack).await?;
            let reply = client
                .get(&format!("/v1/racks/{id}/operation-rules"), &[])
                .await?;
            output::emit(format, &reply.text, &reply.body, |body| {
                associations_table(body["items"].as_array().map(Vec::as_slice).unwrap_or(&[]))
            });
        }
    }
    Ok(exit::OK)
}

/// A rule id as typed; checked here so that no other text ends up in the request path.
fn parse_id(id: &str) -> Result<Uuid, CliError> {
    Uuid::parse_str(id.trim()).map_err(|_| CliError::Input(format!("{id:?} is not a rule id")))
}

fn rule_path(id: &str, action: &str) -> Result<String, CliError> {
    Ok(format!("/v1/operation-rules/{}{action}", parse_id(id)?))
}

/// The file's text as the body: JSON as JSON, anything else as YAML, so that the server's own
/// parser (and its messages, by line) judges the YAML.
fn with_document(
    request: reqwest::RequestBuilder,
    file: &str,
) -> Result<reqwest::RequestBuilder, CliError> {
    let text = read_text(file)?;
    let content_type = if serde_json::from_str::<Value>(&text).is_ok() {
        "application/json"
    } else {
        "application/yaml"
    };
    Ok(request
        .header(reqwest::header::CONTENT_TYPE, content_type)
        .body(text))
}

/// Rules, one per row.
pub fn rules_table(rules: &[Value]) -> String {
    let mut table = Table::new(&["ID", "NAME", "OPERATION", "DEFAULT", "VERSION"]);
    for r in rules {
        let id = if r["builtin"] == true {
            "(built-in)".to_string()
        } else {
            cell(&r["id"])
        };
        table.row(vec![
            id,
            cell(&r["name"]),
            cell(&r["operation"]),
            cell(&r["is_default"]),
            cell(&r["version"]),
        ]);
    }
    table.render()
}

/// One rule: `key value` lines, then one row per stage.
pub fn rule_view(rule: &Value) -> String {
    let mut out = fields(&[
        ("id", cell(&rule["id"])),
        ("name", cell(&rule["name"])),
        ("description", cell(&rule["description"])),
        ("operation", cell(&rule["operation"])),
        ("default", cell(&rule["is_default"])),
        ("builtin", cell(&rule["builtin"])),
        ("version", cell(&rule["version"])),
        ("updated_at", cell(&rule["updated_at"])),
    ]);
    out.push('\n');
    out.push_str(&stages_table(&rule["stages"]));
    out
}

/// A rule's stages as stored: number, name, types, actions, parallelism, timeout.
fn stages_table(stages: &Value) -> String {
    let mut table = Table::new(&[
        "STAGE",
        "NAME",
        "TYPES",
        "ACTIONS",
        "MAX_PARALLEL",
        "TIMEOUT",
        "ON_FAILURE",
    ]);
    for (i, s) in stages
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        table.row(vec![
            (i + 1).to_string(),
            cell(&s["name"]),
            list(&s["component_types"]),
            actions_text(&s["actions"]),
            cell(&s["max_parallel"]),
            cell(&s["timeout"]),
            cell(&s["on_failure"]),
        ]);
    }
    table.render()
}

/// Versions, newest first, each followed by its stages.
fn versions_view(versions: &[Value]) -> String {
    let mut table = Table::new(&["VERSION", "NAME", "STAGES", "CREATED"]);
    for v in versions {
        table.row(vec![
            cell(&v["version"]),
            cell(&v["name"]),
            v["stages"].as_array().map_or(0, Vec::len).to_string(),
            cell(&v["created_at"]),
        ]);
    }
    table.render()
}

/// A rack's attachments, one per operation.
fn associations_table(items: &[Value]) -> String {
    let mut table = Table::new(&["RACK", "OPERATION", "RULE", "UPDATED"]);
    for a in items {
        table.row(vec![
            cell(&a["rack_id"]),
            cell(&a["operation"]),
            cell(&a["rule_id"]),
            cell(&a["updated_at"]),
        ]);
    }
    table.render()
}

/// A JSON array of strings as `a,b,c`.
pub fn list(values: &Value) -> String {
    values
        .as_array()
        .map(|v| v.iter().map(cell).collect::<Vec<_>>().join(","))
        .unwrap_or_default()
}

/// A stage's actions in order, compactly: `power_on`, `verify_power_on`, `sleep 30s`.
pub fn actions_text(actions: &Value) -> String {
    let label = |a: &Value| {
        let name = cell(&a["action"]);
        match name.as_str() {
            "power_control" if a["operation"].is_string() => cell(&a["operation"]),
            "verify_power" => format!("verify_power_{}", cell(&a["expect"])),
            "sleep" => format!("sleep {}", cell(&a["duration"])),
            _ => name,
        }
    };
    actions
        .as_array()
        .map(|a| a.iter().map(label).collect::<Vec<_>>().join(", "))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cli_offers_exactly_the_operations_rules_are_written_for() {
        let names: Vec<String> = OperationCode::value_variants()
            .iter()
            .filter_map(|o| o.to_possible_value())
            .map(|v| v.get_name().to_string())
            .collect();
        let codes: Vec<String> = OperationCode::ALL.map(|c| c.as_str().to_string()).to_vec();
        assert_eq!(names, codes);
    }

    #[test]
    fn actions_read_in_order_with_their_key_values() {
        let actions = json!([{"action": "power_control"}, {"action": "sleep", "duration": "30s"},
            {"action": "verify_power", "expect": "on", "timeout": "5m"},
            {"action": "power_control", "operation": "warm_reset"}]);
        assert_eq!(
            actions_text(&actions),
            "power_control, sleep 30s, verify_power_on, warm_reset"
        );
    }
}

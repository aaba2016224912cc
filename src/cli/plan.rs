//! `--dry-run` of the operation commands: the server's plan per rack, printed without creating
//! anything.

use reqwest::Method;
use serde_json::Value;

use super::client::{CliError, Client, exit};
use super::output::{self, Format, Table, cell, fields};
use super::rules::{actions_text, list};

/// Posts the operation with `?dry_run=true` and prints the plan. Exit code: 4 when any rack
/// would be refused, else 0.
pub async fn dry_run(
    client: &Client,
    format: Format,
    path: &str,
    body: &Value,
) -> Result<u8, CliError> {
    let request = client
        .request(Method::POST, path)
        .query(&[("dry_run", "true")])
        .json(body);
    let reply = client.send(request).await?;
    output::emit(format, &reply.text, &reply.body, plans_view);
    let racks = reply.body["racks"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let refused = racks.iter().filter(|r| r["outcome"] == "reject").count();
    if refused > 0 {
        if format == Format::Json {
            eprintln!("{refused} rack(s) would be refused; see `outcome`");
        }
        return Ok(exit::CONFLICT);
    }
    Ok(exit::OK)
}

/// Every rack's plan, separated by a blank line.
fn plans_view(body: &Value) -> String {
    body["racks"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .map(rack_plan_view)
        .collect::<Vec<_>>()
        .join("\n")
}

/// One rack: what would happen and by which rule, then each stage as it would run.
fn rack_plan_view(plan: &Value) -> String {
    let rule = &plan["rule"];
    let rule_text = if rule.is_object() {
        let version = match rule["version"].as_i64() {
            Some(v) => format!(", v{v}"),
            None => String::new(),
        };
        format!(
            "{} ({}{version})",
            cell(&rule["name"]),
            cell(&rule["source"])
        )
    } else {
        String::new()
    };
    let blockers = plan["conflicts"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .map(|b| {
            format!(
                "{} {} ({})",
                cell(&b["operation"]),
                cell(&b["task_id"]),
                cell(&b["status"])
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let bound = match plan["max_duration_seconds"].as_f64() {
        Some(secs) if secs > 0.0 => format!(
            "{} (workflow timeout {})",
            duration(secs),
            duration(plan["workflow_timeout_seconds"].as_f64().unwrap_or(0.0))
        ),
        _ => String::new(),
    };
    let mut out = fields(&[
        (
            "rack",
            format!("{} ({})", cell(&plan["rack_name"]), cell(&plan["rack_id"])),
        ),
        ("outcome", cell(&plan["outcome"])),
        ("reason", cell(&plan["reason"])),
        ("blocked by", blockers),
        ("rule", rule_text),
        ("bound", bound),
    ]);
    let stages = plan["stages"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if !stages.is_empty() {
        let mut table = Table::new(&[
            "STAGE",
            "NAME",
            "TYPES",
            "ACTIONS",
            "COMPONENTS",
            "MAX_PARALLEL",
            "BOUND",
        ]);
        for s in stages {
            table.row(vec![
                cell(&s["number"]),
                cell(&s["name"]),
                list(&s["component_types"]),
                actions_text(&s["actions"]),
                s["components"].as_array().map_or(0, Vec::len).to_string(),
                cell(&s["max_parallel"]),
                duration(s["max_duration_seconds"].as_f64().unwrap_or(0.0)),
            ]);
        }
        out.push('\n');
        out.push_str(&table.render());
    }
    out
}

/// Seconds as `1h2m3s` (whole seconds; the bounds are upper limits, not measurements).
fn duration(secs: f64) -> String {
    let total = secs.ceil() as u64;
    let (h, m, s) = (total / 3600, total / 60 % 60, total % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || out.is_empty() {
        out.push_str(&format!("{s}s"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_hours_minutes_seconds() {
        assert_eq!(duration(0.0), "0s");
        assert_eq!(duration(90.0), "1m30s");
        assert_eq!(duration(3600.0), "1h");
        assert_eq!(duration(3723.2), "1h2m4s");
    }
}

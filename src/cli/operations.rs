//! `flow power …` and `flow firmware upgrade`: submit an operation (or plan it with `--dry-run`),
//! print its tasks, optionally wait.

use clap::{Args, Subcommand, ValueEnum};
use reqwest::Method;
use serde_json::{Map, Value, json};

use super::client::{CliError, Client, exit};
use super::input::rack_ref;
use super::output::{self, Format, Table, cell};
use super::{plan, watch};

/// Options every operation takes.
#[derive(Debug, Clone, Args)]
pub struct Submit {
    /// Free text stored with the tasks.
    #[arg(long)]
    pub description: Option<String>,
    /// Block until every created task ends; the exit code is the worst outcome.
    #[arg(long)]
    pub wait: bool,
    /// Retrying with the same key returns the first answer instead of starting new tasks.
    #[arg(long)]
    pub idempotency_key: Option<String>,
    /// Run this stored operation rule (id) instead of the rack's, the default or the built-in one.
    #[arg(long, value_name = "RULE_ID")]
    pub rule: Option<String>,
    /// Print the plan per rack (rule, stages, components, time bound) and create nothing; exit 4
    /// when a rack would be refused.
    #[arg(long, conflicts_with_all = ["wait", "idempotency_key"])]
    pub dry_run: bool,
}

/// Which racks (and which of their component types) an operation touches: racks, or every
/// live rack of some NVLink domains.
#[derive(Debug, Clone, Args)]
pub struct Targets {
    /// Rack names or ids (repeat, or comma-separate).
    #[arg(long, required_unless_present = "nvl_domain", num_args = 1.., value_delimiter = ',')]
    pub rack: Vec<String>,
    /// Only these component types (`compute,nvswitch,powershelf`, ...); with `--rack` only.
    #[arg(long = "type", value_delimiter = ',')]
    pub types: Vec<String>,
    /// NVLink domain names or ids: every live rack of each (repeat, or comma-separate).
    #[arg(long = "nvl-domain", value_name = "NAME", num_args = 1.., value_delimiter = ',',
        conflicts_with_all = ["rack", "types"])]
    pub nvl_domain: Vec<String>,
}

/// What to do when a rack is busy with a conflicting task.
#[derive(Debug, Clone, Args)]
pub struct Conflict {
    /// Wait for the rack to be free (the task is created `waiting`).
    #[arg(long, conflicts_with = "reject")]
    pub queue: bool,
    /// Refuse a busy rack (the default).
    #[arg(long)]
    pub reject: bool,
    /// How long a queued task may wait, in seconds (default 3600).
    #[arg(long, value_name = "SECS")]
    pub queue_timeout: Option<u64>,
}

/// Options of `flow power on|off|reset`.
#[derive(Debug, Clone, Args)]
pub struct PowerArgs {
    #[command(flatten)]
    pub targets: Targets,
    /// Off / reset only: cut power without a graceful shutdown.
    #[arg(long)]
    pub forced: bool,
    #[command(flatten)]
    pub conflict: Conflict,
    #[command(flatten)]
    pub submit: Submit,
}

/// How `flow power reset` resets.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ResetMode {
    /// Everything off in safe order, then on again (`--forced` skips the graceful shutdown).
    Restart,
    /// Compute and NVSwitch trays reset through their BMCs, power stays on.
    Warm,
    /// A full AC cycle, with a pause for power to drain.
    Cold,
    /// The trays' BMCs restart themselves (`Manager.Reset`); host power is untouched.
    Bmc,
}

/// Options of `flow power reset`.
#[derive(Debug, Clone, Args)]
pub struct ResetArgs {
    #[command(flatten)]
    pub power: PowerArgs,
    /// `restart` (the server's default), `warm`, `cold` or `bmc`.
    #[arg(long, value_enum)]
    pub mode: Option<ResetMode>,
}

/// `flow power …`
#[derive(Debug, Subcommand)]
pub enum PowerCommand {
    /// Power on: power shelves, then NVSwitch trays, then compute trays.
    On(PowerArgs),
    /// Power off in reverse order.
    Off(PowerArgs),
    /// Reset: off and on in safe order (`--mode restart`), through the BMCs (`warm`), an AC
    /// cycle (`cold`), or of the BMCs themselves (`bmc`).
    Reset(ResetArgs),
}

/// `flow firmware …`
#[derive(Debug, Subcommand)]
pub enum FirmwareCommand {
    /// Update each device's firmware and follow it until done.
    Upgrade(FirmwareArgs),
}

/// Options of `flow firmware upgrade`.
#[derive(Debug, Clone, Args)]
pub struct FirmwareArgs {
    #[command(flatten)]
    pub targets: Targets,
    /// One version for every component type (default: each manager's desired version).
    #[arg(long, conflicts_with = "version_for")]
    pub version: Option<String>,
    /// A version per component type: `--version-for compute=1.4.2` (repeatable).
    #[arg(long, value_name = "TYPE=VERSION")]
    pub version_for: Vec<String>,
    /// Firmware parts (`pmc`, `psu`, `bmc`, `cpld`, `bios`, `nvos`); repeat or comma-separate.
    #[arg(long, value_delimiter = ',')]
    pub sub_target: Vec<String>,
    /// Upgrade even though the racks cover only part of an NVLink domain (audited).
    #[arg(long)]
    pub allow_split_domain: bool,
    /// Do not start before this time (RFC 3339).
    #[arg(long)]
    pub start_time: Option<String>,
    /// Give up if not done by this time (RFC 3339).
    #[arg(long)]
    pub end_time: Option<String>,
    /// Upgrade without asking: otherwise the dry-run plan is printed and the upgrade starts
    /// only once confirmed on the terminal.
    #[arg(long, short = 'y')]
    pub yes: bool,
    #[command(flatten)]
    pub conflict: Conflict,
    #[command(flatten)]
    pub submit: Submit,
}

/// `flow power on|off|reset`: the exit code as for [`submit`].
pub async fn power(
    client: &Client,
    format: Format,
    command: &PowerCommand,
) -> Result<u8, CliError> {
    let (operation, args, mode) = match command {
        PowerCommand::On(args) => ("power-on", args, None),
        PowerCommand::Off(args) => ("power-off", args, None),
        PowerCommand::Reset(args) => ("power-reset", &args.power, args.mode),
    };
    let mut body = target_spec(&args.targets);
    if let Some(mode) = mode.and_then(|m| m.to_possible_value()) {
        body.insert("mode".into(), json!(mode.get_name()));
    }
    if args.forced {
        if operation == "power-on" {
            return Err(CliError::Usage(
                "--forced applies to power off and reset".into(),
            ));
        }
        body.insert("forced".into(), json!(true));
    }
    conflict(&mut body, &args.conflict);
    submit(client, format, operation, Value::Object(body), &args.submit).await
}

/// `flow firmware upgrade`: the exit code as for [`submit`].
pub async fn firmware(
    client: &Client,
    format: Format,
    command: &FirmwareCommand,
) -> Result<u8, CliError> {
    let FirmwareCommand::Upgrade(args) = command;
    let mut body = target_spec(&args.targets);
    if let Some(version) = &args.version {
        body.insert("target_version".into(), json!(version));
    } else if !args.version_for.is_empty() {
        let mut versions = Map::new();
        for pair in &args.version_for {
            let (kind, version) = pair.split_once('=').ok_or_else(|| {
                CliError::Usage(format!("--version-for {pair}: expected TYPE=VERSION"))
            })?;
            versions.insert(kind.to_string(), json!(version));
        }
        body.insert("target_version".into(), Value::Object(versions));
    }
    if !args.sub_target.is_empty() {
        body.insert("sub_targets".into(), json!(args.sub_target));
    }
    for (key, value) in [
        ("start_time", &args.start_time),
        ("end_time", &args.end_time),
    ] {
        if let Some(value) = value {
            body.insert(key.into(), json!(value));
        }
    }
    if args.allow_split_domain {
        body.insert("allow_split_domain".into(), json!(true));
    }
    conflict(&mut body, &args.conflict);
    let body = Value::Object(body);
    if !args.yes && !args.submit.dry_run {
        let planned =
            plan::dry_run(client, format, "/v1/operations/firmware-upgrade", &body).await?;
        if planned != exit::OK {
            return Ok(planned);
        }
        if !confirm("Start this firmware upgrade? [y/N] ") {
            return Err(CliError::Usage(
                "firmware upgrade not confirmed; nothing was started (--yes starts it without asking)"
                    .into(),
            ));
        }
    }
    submit(client, format, "firmware-upgrade", body, &args.submit).await
}

/// Asks on stderr and reads one line from stdin: only `y` or `yes` confirms (no terminal, an
/// empty line or end of input do not).
fn confirm(question: &str) -> bool {
    use std::io::{BufRead, Write};
    eprint!("{question}");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

fn target_spec(targets: &Targets) -> Map<String, Value> {
    let mut body = Map::new();
    if !targets.nvl_domain.is_empty() {
        // The same id-or-name shape as a rack reference.
        let domains: Vec<Value> = targets.nvl_domain.iter().map(|d| rack_ref(d)).collect();
        body.insert("target_spec".into(), json!({ "nvl_domains": domains }));
        return body;
    }
    let racks: Vec<Value> = targets
        .rack
        .iter()
        .map(|r| {
            let mut rack = rack_ref(r);
            if !targets.types.is_empty() {
                rack["component_types"] = json!(targets.types);
            }
            rack
        })
        .collect();
    body.insert("target_spec".into(), json!({ "racks": racks }));
    body
}

fn conflict(body: &mut Map<String, Value>, conflict: &Conflict) {
    if conflict.queue || conflict.reject {
        let strategy = if conflict.queue { "queue" } else { "reject" };
        body.insert("conflict_strategy".into(), json!(strategy));
    }
    if let Some(secs) = conflict.queue_timeout {
        body.insert("queue_timeout_seconds".into(), json!(secs));
    }
}

/// Posts `POST /v1/operations/{operation}`, prints the submission and, with `--wait`, follows
/// every task. Exit code: 1 if a task failed or was cancelled, else 4 if a rack was refused.
pub async fn submit(
    client: &Client,
    format: Format,
    operation: &str,
    mut body: Value,
    submit: &Submit,
) -> Result<u8, CliError> {
    if let Some(description) = &submit.description {
        body["description"] = json!(description);
    }
    if let Some(rule) = &submit.rule {
        body["rule_id"] = json!(rule);
    }
    let path = format!("/v1/operations/{operation}");
    if submit.dry_run {
        return plan::dry_run(client, format, &path, &body).await;
    }
    let mut request = client.request(Method::POST, &path).json(&body);
    if let Some(key) = &submit.idempotency_key {
        request = request.header("idempotency-key", key);
    }
    let reply = client.send(request).await?;
    output::emit(format, &reply.text, &reply.body, submission_view);
    let rejected = reply.body["rejected"].as_array().map_or(0, Vec::len);
    if rejected > 0 && format == Format::Json {
        eprintln!("{rejected} rack(s) refused; see `rejected`");
    }
    let mut code = if rejected > 0 {
        exit::CONFLICT
    } else {
        exit::OK
    };
    if submit.wait {
        let ids: Vec<String> = reply.body["task_ids"]
            .as_array()
            .map(|ids| {
                ids.iter()
                    .filter_map(|i| i.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let tasks: Vec<Value> = watch::wait_all(client, &ids)
            .await?
            .into_iter()
            .map(|t| t.body)
            .collect();
        if format == Format::Table {
            output::print(&super::tasks::tasks_table(&tasks));
        }
        if tasks.iter().any(|t| !watch::succeeded(t)) {
            code = exit::TASK_FAILED;
        }
    }
    Ok(code)
}

fn submission_view(body: &Value) -> String {
    let mut out = format!("request {}\n", cell(&body["request_id"]));
    for id in body["task_ids"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        out.push_str(&format!("task    {}\n", cell(id)));
    }
    let rejected = body["rejected"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if !rejected.is_empty() {
        let mut table = Table::new(&["REFUSED RACK", "CODE", "REASON"]);
        for r in rejected {
            table.row(vec![
                cell(&r["rack_name"]),
                cell(&r["code"]),
                cell(&r["reason"]),
            ]);
        }
        out.push('\n');
        out.push_str(&table.render());
    }
    out
}

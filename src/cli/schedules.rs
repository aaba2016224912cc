//! `flow schedule …`: create, list, show, pause, resume, fire and delete task schedules.

use clap::{Args, Subcommand, ValueEnum};
use reqwest::Method;
use serde_json::{Value, json};

use super::client::{CliError, Client, exit};
use super::input::{self, rack_id};
use super::list::{self, Paging};
use super::output::{self, Format, Table, cell, fields};
use super::racks::done;

/// The operation a schedule runs.
#[derive(Debug, Clone, Copy, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum ScheduledOperation {
    PowerOn,
    PowerOff,
    PowerReset,
    FirmwareUpgrade,
    BringUp,
    Ingest,
}

/// `flow schedule create` options (or a whole body with `--file`).
#[derive(Debug, Clone, Args)]
pub struct CreateArgs {
    /// The whole request body as JSON or YAML (`-` for stdin); the other options are then ignored.
    #[arg(short, long)]
    pub file: Option<String>,
    #[arg(long, required_unless_present = "file")]
    pub name: Option<String>,
    /// Fire every DURATION (`30s`, `15m`, `6h`).
    #[arg(long, value_name = "DURATION", conflicts_with_all = ["cron", "at"])]
    pub every: Option<String>,
    /// Fire on a five-field cron expression (`"30 2 * * *"`), read in `--timezone`.
    #[arg(long, conflicts_with = "at")]
    pub cron: Option<String>,
    /// Fire once at an RFC 3339 time.
    #[arg(long)]
    pub at: Option<String>,
    /// IANA time zone of the cron expression (default UTC).
    #[arg(long)]
    pub timezone: Option<String>,
    #[arg(long, value_enum, required_unless_present = "file")]
    pub operation: Option<ScheduledOperation>,
    /// Power off or reset without a graceful shutdown.
    #[arg(long)]
    pub forced: bool,
    /// Rack name or id; repeat for more racks.
    #[arg(long = "rack", required_unless_present_any = ["file", "nvl_domain"])]
    pub racks: Vec<String>,
    /// NVLink domain name or id: every live rack of it, followed at each fire; repeat for more.
    #[arg(long = "nvl-domain", value_name = "NAME", conflicts_with_all = ["racks", "types"])]
    pub nvl_domain: Vec<String>,
    /// Only these component types on each rack (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub types: Vec<String>,
    /// `skip` (default) or `queue` when a rack is still busy.
    #[arg(long)]
    pub overlap: Option<String>,
    /// Create it paused.
    #[arg(long)]
    pub paused: bool,
    /// Operation rule to run instead of the resolved one.
    #[arg(long)]
    pub rule: Option<String>,
}

/// `flow schedule …`
#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Create a schedule.
    Create(CreateArgs),
    /// List schedules in name order.
    List {
        /// Only schedules with this rack (name or id) in scope.
        #[arg(long)]
        rack: Option<String>,
        /// Only enabled (`true`) or only paused (`false`) schedules.
        #[arg(long)]
        enabled: Option<bool>,
        #[command(flatten)]
        paging: Paging,
    },
    /// Show a schedule with its latest run.
    Get { id: String },
    /// Stop firing until resumed.
    Pause { id: String },
    /// Fire again from the next time after now.
    Resume { id: String },
    /// Fire now, once.
    Trigger { id: String },
    /// The latest runs with the tasks they created.
    Runs { id: String },
    /// Delete a schedule (its tasks stay).
    Delete { id: String },
}

fn create_body(a: &CreateArgs) -> Result<Value, CliError> {
    if let Some(file) = &a.file {
        return input::read_body(file);
    }
    let spec = match (&a.every, &a.cron, &a.at) {
        (Some(every), None, None) => json!({"type": "interval", "spec": every}),
        (None, Some(cron), None) => json!({"type": "cron", "spec": cron, "timezone": a.timezone}),
        (None, None, Some(at)) => json!({"type": "one_time", "spec": at}),
        _ => {
            return Err(CliError::Usage(
                "give one of --every, --cron or --at".into(),
            ));
        }
    };
    let kind = a
        .operation
        .and_then(|o| o.to_possible_value())
        .map(|v| v.get_name().to_string());
    let mut operation = json!({"kind": kind});
    if a.forced {
        operation["forced"] = json!(true);
    }
    if let Some(rule) = &a.rule {
        operation["rule_id"] = json!(rule);
    }
    let racks: Vec<Value> = a
        .racks
        .iter()
        .map(|r| {
            let mut target = input::rack_ref(r);
            if !a.types.is_empty() {
                target["component_types"] = json!(a.types);
            }
            target
        })
        .collect();
    let target_spec = if a.nvl_domain.is_empty() {
        json!({ "racks": racks })
    } else {
        // The same id-or-name shape as a rack reference.
        let domains: Vec<Value> = a.nvl_domain.iter().map(|d| input::rack_ref(d)).collect();
        json!({ "nvl_domains": domains })
    };
    let mut body = json!({
        "name": a.name,
        "spec": spec,
        "operation": operation,
        "target_spec": target_spec,
    });
    if let Some(overlap) = &a.overlap {
        body["overlap_policy"] = json!(overlap);
    }
    if a.paused {
        body["enabled"] = json!(false);
    }
    Ok(body)
}

/// Runs one subcommand; `Ok` holds the exit code.
pub async fn run(
    client: &Client,
    format: Format,
    command: &ScheduleCommand,
) -> Result<u8, CliError> {
    let path = |id: &str, action: &str| format!("/v1/task-schedules/{id}{action}");
    match command {
        ScheduleCommand::Create(args) => {
            let reply = client
                .post("/v1/task-schedules", &create_body(args)?)
                .await?;
            output::emit(format, &reply.text, &reply.body, schedule_view);
        }
        ScheduleCommand::List {
            rack,
            enabled,
            paging,
        } => {
            let rack = match rack {
                Some(rack) => Some(rack_id(client, rack).await?),
                None => None,
            };
            let query = list::query(&[
                ("rack_id", rack),
                ("enabled", enabled.map(|e| e.to_string())),
            ]);
            list::run(
                client,
                format,
                "/v1/task-schedules",
                query,
                paging,
                schedules_table,
            )
            .await?;
        }
        ScheduleCommand::Get { id } => {
            let reply = client.get(&path(id, ""), &[]).await?;
            output::emit(format, &reply.text, &reply.body, schedule_view);
        }
        ScheduleCommand::Pause { id } | ScheduleCommand::Resume { id } => {
            let action = if matches!(command, ScheduleCommand::Pause { .. }) {
                "/pause"
            } else {
                "/resume"
            };
            let reply = client.post_empty(&path(id, action)).await?;
            output::emit(format, &reply.text, &reply.body, schedule_view);
        }
        ScheduleCommand::Trigger { id } => {
            let reply = client.post_empty(&path(id, "/trigger")).await?;
            output::emit(format, &reply.text, &reply.body, |run| {
                runs_table(std::slice::from_ref(run))
            });
        }
        ScheduleCommand::Runs { id } => {
            let reply = client.get(&path(id, "/runs"), &[]).await?;
            output::emit(format, &reply.text, &reply.body, |body| {
                runs_table(body["items"].as_array().map(Vec::as_slice).unwrap_or(&[]))
            });
        }
        ScheduleCommand::Delete { id } => {
            client
                .send(client.request(Method::DELETE, &path(id, "")))
                .await?;
            done(format, &format!("deleted schedule {id}"));
        }
    }
    Ok(exit::OK)
}

fn spec_text(s: &Value) -> String {
    let spec = &s["spec"];
    match spec["type"].as_str() {
        Some("cron") => format!("cron {} ({})", cell(&spec["spec"]), cell(&spec["timezone"])),
        Some("interval") => format!("every {}", cell(&spec["spec"])),
        _ => format!("once at {}", cell(&spec["spec"])),
    }
}

/// Schedules, one per row.
pub fn schedules_table(items: &[Value]) -> String {
    let mut table = Table::new(&[
        "ID",
        "NAME",
        "WHEN",
        "OPERATION",
        "ENABLED",
        "NEXT RUN",
        "LAST RUN",
    ]);
    for s in items {
        table.row(vec![
            cell(&s["id"]),
            cell(&s["name"]),
            spec_text(s),
            cell(&s["operation"]["code"]),
            cell(&s["enabled"]),
            cell(&s["next_run_at"]),
            cell(&s["last_run_at"]),
        ]);
    }
    table.render()
}

/// One schedule as `key value` lines, then its latest run.
pub fn schedule_view(s: &Value) -> String {
    let mut out = fields(&[
        ("id", cell(&s["id"])),
        ("name", cell(&s["name"])),
        ("when", spec_text(s)),
        ("operation", cell(&s["operation"]["code"])),
        ("overlap_policy", cell(&s["overlap_policy"])),
        ("enabled", cell(&s["enabled"])),
        ("next_run_at", cell(&s["next_run_at"])),
        ("last_run_at", cell(&s["last_run_at"])),
    ]);
    if s["last_run"].is_object() {
        out.push('\n');
        out.push_str(&runs_table(std::slice::from_ref(&s["last_run"])));
    }
    out
}

/// One row per rack of each run.
pub fn runs_table(runs: &[Value]) -> String {
    let mut table = Table::new(&[
        "RUN", "FIRED", "TRIGGER", "RACK", "OUTCOME", "TASK", "REASON",
    ]);
    for run in runs {
        for rack in run["racks"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            table.row(vec![
                cell(&run["id"]),
                cell(&run["fired_at"]),
                cell(&run["trigger"]),
                cell(&rack["rack_id"]),
                cell(&rack["outcome"]),
                cell(&rack["task_id"]),
                cell(&rack["reason"]),
            ]);
        }
    }
    table.render()
}

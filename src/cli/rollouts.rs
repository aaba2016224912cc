//! `flow rollout …`: create (or plan), list, show, pause, resume, approve, abort and watch
//! fleet rollouts.

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::client::{CliError, Client, exit};
use super::input;
use super::list::{self, Paging};
use super::output::{self, Format, Table, cell, fields};
use super::schedules::ScheduledOperation;

/// `flow rollout create` options (or a whole body with `--file`).
#[derive(Debug, Clone, Args)]
pub struct CreateArgs {
    /// The whole request body as JSON or YAML (`-` for stdin); the other options are then ignored.
    #[arg(short, long)]
    pub file: Option<String>,
    #[arg(long, required_unless_present = "file")]
    pub name: Option<String>,
    #[arg(long, value_enum, required_unless_present = "file")]
    pub operation: Option<ScheduledOperation>,
    /// Power off or reset without a graceful shutdown.
    #[arg(long)]
    pub forced: bool,
    /// Firmware version to install (firmware_upgrade).
    #[arg(long = "firmware-version")]
    pub firmware_version: Option<String>,
    /// Rack name or id; repeat for more racks.
    #[arg(long = "rack", conflicts_with_all = ["datacenter", "room", "nvl_domain", "match_name"])]
    pub racks: Vec<String>,
    /// Selector: racks in this datacenter.
    #[arg(long)]
    pub datacenter: Option<String>,
    /// Selector: racks in this room.
    #[arg(long)]
    pub room: Option<String>,
    /// Selector: racks of this NVL domain (id or name).
    #[arg(long)]
    pub nvl_domain: Option<String>,
    /// Selector: rack names matching this glob (`gb200-*`).
    #[arg(long = "match")]
    pub match_name: Option<String>,
    /// Only these component types on each rack (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub types: Vec<String>,
    /// `name` (default) or `location`.
    #[arg(long)]
    pub order: Option<String>,
    /// Racks in the canary wave (default 1; 0 for none).
    #[arg(long)]
    pub canary: Option<i64>,
    /// Racks per wave after the canary: a count or a share such as `10%`.
    #[arg(long)]
    pub batch_size: Option<String>,
    /// Most racks of a wave running at once.
    #[arg(long)]
    pub max_concurrent: Option<i64>,
    /// Wait between waves (`10m`).
    #[arg(long)]
    pub pause_between: Option<String>,
    /// Wait for `flow rollout approve` after the canary wave.
    #[arg(long)]
    pub approval: bool,
    /// Halt once more than this many racks failed.
    #[arg(long)]
    pub max_failed_racks: Option<i64>,
    /// Halt once more than this share (0–1) of the racks failed.
    #[arg(long)]
    pub max_failed_fraction: Option<f64>,
    /// `none`, `nvl_domain` or `room`: at most one rack of a group per wave.
    #[arg(long)]
    pub spread_by: Option<String>,
    /// Plan racks one by one even if one NVLink domain's racks land in different waves
    /// (default: a domain's racks share their wave).
    #[arg(long)]
    pub split_domains: bool,
    /// `none` or `validation`: after each wave its racks must validate clean.
    #[arg(long)]
    pub verify: Option<String>,
    /// Waves start only after this RFC 3339 time…
    #[arg(long, requires = "window_end")]
    pub window_start: Option<String>,
    /// …and before this one.
    #[arg(long, requires = "window_start")]
    pub window_end: Option<String>,
    /// The window repeats every day.
    #[arg(long, requires = "window_start")]
    pub daily: bool,
    /// `reject` (default) or `queue` when a rack is busy.
    #[arg(long)]
    pub conflict_strategy: Option<String>,
    /// `skip` (default) or `fail`: how a refused rack counts.
    #[arg(long)]
    pub on_refused: Option<String>,
    /// Print the wave plan; create nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Follow the rollout after creating it; the exit code is its outcome.
    #[arg(long, conflicts_with = "dry_run")]
    pub watch: bool,
}

/// `flow rollout …`
#[derive(Debug, Subcommand)]
pub enum RolloutCommand {
    /// Create a rollout (or only plan it with `--dry-run`).
    Create(Box<CreateArgs>),
    /// List rollouts, newest first.
    List {
        /// One status or a comma-separated list.
        #[arg(long)]
        status: Option<String>,
        /// Name or `*` glob.
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        paging: Paging,
    },
    /// Show a rollout with its waves.
    Get { id: String },
    /// Start no new rack until resumed (running racks finish).
    Pause { id: String },
    /// Go on after a pause.
    Resume { id: String },
    /// Let the waves after the canary start.
    Approve { id: String },
    /// Stop the rollout.
    Abort {
        id: String,
        /// Cancel the tasks still running (default: let them finish).
        #[arg(long)]
        cancel_running: bool,
    },
    /// Follow a rollout to its end, a progress bar per wave; exit code 0 only if it succeeded.
    Watch { id: String },
}

fn create_body(a: &CreateArgs) -> Result<Value, CliError> {
    if let Some(file) = &a.file {
        return input::read_body(file);
    }
    let kind = a
        .operation
        .and_then(|o| clap::ValueEnum::to_possible_value(&o))
        .map(|v| v.get_name().to_string());
    let mut operation = json!({"kind": kind});
    if a.forced {
        operation["forced"] = json!(true);
    }
    if let Some(version) = &a.firmware_version {
        operation["target_version"] = json!(version);
    }
    let mut target = if a.racks.is_empty() {
        json!({"selector": {"datacenter": a.datacenter, "room": a.room,
            "nvl_domain": a.nvl_domain, "name": a.match_name}})
    } else {
        json!({"racks": a.racks.iter().map(|r| input::rack_ref(r)).collect::<Vec<_>>()})
    };
    if !a.types.is_empty() {
        target["component_types"] = json!(a.types);
    }
    let batch = a.batch_size.as_ref().map(|b| match b.parse::<i64>() {
        Ok(n) => json!(n),
        Err(_) => json!(b),
    });
    let mut body = json!({
        "name": a.name,
        "operation": operation,
        "target_spec": target,
        "strategy": {
            "order": a.order, "canary": a.canary, "batch_size": batch,
            "max_concurrent_racks": a.max_concurrent, "pause_between": a.pause_between,
            "approval_after_canary": a.approval,
            "failure_budget": {"max_failed_racks": a.max_failed_racks, "max_failed_fraction": a.max_failed_fraction},
            "spread_by": a.spread_by, "verify": a.verify,
            "split_domains": a.split_domains,
        },
        "conflict_strategy": a.conflict_strategy,
        "on_refused": a.on_refused,
    });
    if let (Some(start), Some(end)) = (&a.window_start, &a.window_end) {
        body["window"] = json!({"start": start, "end": end,
            "recurring": if a.daily { "daily" } else { "none" }});
    }
    Ok(strip_nulls(body))
}

/// Drops absent options so the server applies its defaults.
fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        other => other,
    }
}

/// The exit code a rollout's outcome maps to.
fn outcome_code(rollout: &Value) -> u8 {
    if rollout["status"] == "succeeded" {
        exit::OK
    } else {
        exit::TASK_FAILED
    }
}

/// Runs one subcommand; `Ok` holds the exit code.
pub async fn run(
    client: &Client,
    format: Format,
    command: &RolloutCommand,
) -> Result<u8, CliError> {
    let path = |id: &str, action: &str| format!("/v1/rollouts/{id}{action}");
    match command {
        RolloutCommand::Create(args) => {
            let path = if args.dry_run {
                "/v1/rollouts?dry_run=true"
            } else {
                "/v1/rollouts"
            };
            let reply = client.post(path, &create_body(args)?).await?;
            if args.dry_run {
                output::emit(format, &reply.text, &reply.body, plan_view);
                return Ok(exit::OK);
            }
            output::emit(format, &reply.text, &reply.body, rollout_view);
            if args.watch {
                let last = super::rollout_watch::watch(client, &cell(&reply.body["id"])).await?;
                return Ok(outcome_code(&last));
            }
        }
        RolloutCommand::List {
            status,
            name,
            paging,
        } => {
            let query = list::query(&[("status", status.clone()), ("name", name.clone())]);
            list::run(
                client,
                format,
                "/v1/rollouts",
                query,
                paging,
                rollouts_table,
            )
            .await?;
        }
        RolloutCommand::Get { id } => {
            let reply = client.get(&path(id, ""), &[]).await?;
            output::emit(format, &reply.text, &reply.body, rollout_view);
        }
        RolloutCommand::Pause { id }
        | RolloutCommand::Resume { id }
        | RolloutCommand::Approve { id } => {
            let action = match command {
                RolloutCommand::Pause { .. } => "/pause",
                RolloutCommand::Resume { .. } => "/resume",
                _ => "/approve",
            };
            let reply = client.post_empty(&path(id, action)).await?;
            // The answer is the rollout as it was: print it once its run took the command.
            let reply = match action {
                "/pause" => settled(client, &path(id, ""), reply, |s| s == "paused").await?,
                "/resume" => settled(client, &path(id, ""), reply, |s| s != "paused").await?,
                _ => settled(client, &path(id, ""), reply, |s| s != "awaiting_approval").await?,
            };
            output::emit(format, &reply.text, &reply.body, rollout_view);
        }
        RolloutCommand::Abort { id, cancel_running } => {
            let body = json!({"cancel_running": cancel_running});
            let reply = client.post(&path(id, "/abort"), &body).await?;
            output::emit(format, &reply.text, &reply.body, rollout_view);
        }
        RolloutCommand::Watch { id } => {
            let last = super::rollout_watch::watch(client, id).await?;
            let raw = last.to_string();
            output::emit(format, &raw, &last, rollout_view);
            return Ok(outcome_code(&last));
        }
    }
    Ok(exit::OK)
}

/// Rollouts, one per row.
pub fn rollouts_table(items: &[Value]) -> String {
    let mut table = Table::new(&[
        "ID",
        "NAME",
        "OPERATION",
        "STATUS",
        "WAVE",
        "DONE",
        "FAILED",
    ]);
    for r in items {
        let c = &r["counts"];
        let wave = r["current_wave"]
            .as_u64()
            .map(|w| format!("{}/{}", w + 1, r["waves"].as_array().map_or(0, Vec::len)));
        table.row(vec![
            cell(&r["id"]),
            cell(&r["name"]),
            cell(&r["operation"]),
            cell(&r["status"]),
            wave.unwrap_or_else(|| "-".into()),
            format!("{}/{}", cell(&c["succeeded"]), cell(&c["total"])),
            cell(&c["failed"]),
        ]);
    }
    table.render()
}

/// One rollout: its fields, then a row per rack per wave.
pub fn rollout_view(r: &Value) -> String {
    let c = &r["counts"];
    let b = &r["failure_budget_used"];
    let mut text = fields(&[
        ("id", cell(&r["id"])),
        ("name", cell(&r["name"])),
        ("operation", cell(&r["operation"])),
        ("status", cell(&r["status"])),
        ("message", cell(&r["message"])),
        (
            "racks",
            format!(
                "{} total: {} succeeded, {} failed, {} skipped, {} running, {} pending, {} not run",
                cell(&c["total"]),
                cell(&c["succeeded"]),
                cell(&c["failed"]),
                cell(&c["skipped"]),
                cell(&c["running"]),
                cell(&c["pending"]),
                cell(&c["not_run"])
            ),
        ),
        ("failure budget", budget_text(b)),
    ]);
    let mut table = Table::new(&["WAVE", "RACK", "OUTCOME", "TASK", "TASK STATUS", "REASON"]);
    for w in r["waves"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let label = format!(
            "{}{} {}",
            w["index"].as_u64().unwrap_or(0) + 1,
            if w["canary"] == true { " canary" } else { "" },
            cell(&w["status"])
        );
        for rack in w["racks"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            table.row(vec![
                label.clone(),
                cell(&rack["rack_name"]),
                cell(&rack["outcome"]),
                cell(&rack["task_id"]),
                cell(&rack["task_status"]),
                cell(&rack["reason"]),
            ]);
        }
    }
    text.push('\n');
    text.push_str(&table.render());
    text
}

/// A dry run's waves.
fn plan_view(plan: &Value) -> String {
    let mut table = Table::new(&["WAVE", "RACK", "OUTCOME", "REASON"]);
    for w in plan["waves"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let label = format!(
            "{}{}",
            w["index"].as_u64().unwrap_or(0) + 1,
            if w["canary"] == true { " canary" } else { "" }
        );
        for rack in w["racks"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            table.row(vec![
                label.clone(),
                cell(&rack["rack_name"]),
                cell(&rack["outcome"]),
                cell(&rack["reason"]),
            ]);
        }
    }
    table.render()
}

/// The failure budget, naming only the limits that are set (`null` ones are left out).
fn budget_text(b: &Value) -> String {
    let mut limits = Vec::new();
    if let Some(n) = b["max_failed_racks"].as_u64() {
        limits.push(format!("max {n} {}", plural(n, "rack", "racks")));
    }
    if let Some(f) = b["max_failed_fraction"].as_f64() {
        limits.push(format!("max fraction {f}"));
    }
    let failed = b["failed_racks"].as_u64().unwrap_or(0);
    let limits = match limits.is_empty() {
        true => "no limit".to_string(),
        false => limits.join(", "),
    };
    format!("{failed} failed ({limits})")
}

/// `one` or `many` by count: "1 rack", "2 racks".
fn plural<'a>(n: u64, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// Re-reads the rollout until its status passes `done` (at most about 5 s), so pause and resume
/// print the state the command led to; the last read otherwise, with a note on stderr.
async fn settled(
    client: &Client,
    path: &str,
    mut reply: super::client::Reply,
    done: impl Fn(&str) -> bool,
) -> Result<super::client::Reply, CliError> {
    for _ in 0..20 {
        if done(reply.body["status"].as_str().unwrap_or_default()) {
            return Ok(reply);
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        reply = client.get(path, &[]).await?;
    }
    eprintln!(
        "command delivered; the rollout still shows {}",
        cell(&reply.body["status"])
    );
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::budget_text;
    use serde_json::json;

    #[test]
    fn the_budget_names_only_the_limits_set_and_counts_racks_in_words() {
        let budget = |racks, fraction| {
            budget_text(&json!({"failed_racks": 1, "max_failed_racks": racks,
                "max_failed_fraction": fraction}))
        };
        assert_eq!(budget(json!(1), json!(null)), "1 failed (max 1 rack)");
        assert_eq!(
            budget(json!(3), json!(0.25)),
            "1 failed (max 3 racks, max fraction 0.25)"
        );
        assert_eq!(budget(json!(null), json!(null)), "1 failed (no limit)");
    }
}

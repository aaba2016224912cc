//! `flow task …`: list, show with the per-stage report, cancel, and watch live.

use clap::Subcommand;
use serde_json::Value;

use super::client::{CliError, Client, exit};
use super::input::rack_id;
use super::list::{self, Paging};
use super::output::{self, Format, Table, cell, fields};
use super::watch;
use crate::domain::code::OperationCode;

/// `flow task …`
#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// List tasks, newest first.
    List {
        /// Rack id or name.
        #[arg(long)]
        rack: Option<String>,
        /// `pending`, `waiting`, `running`, `succeeded`, `failed` or `cancelled`.
        #[arg(long)]
        status: Option<String>,
        /// `power_on`, `power_off`, `upgrade`, `bring_up`, `ingest`, ...
        #[arg(long, value_enum)]
        operation: Option<OperationCode>,
        #[arg(long)]
        component: Option<String>,
        /// The request that created the tasks.
        #[arg(long)]
        request: Option<String>,
        /// Only tasks that have not ended.
        #[arg(long)]
        active: bool,
        #[command(flatten)]
        paging: Paging,
    },
    /// Show a task with each stage and component step.
    Get { id: String },
    /// Cancel a waiting or running task.
    Cancel { id: String },
    /// Follow a task's progress until it ends; exit 0 if it succeeded, 1 otherwise.
    Watch { id: String },
}

/// Runs one subcommand; `Ok` holds the exit code.
pub async fn run(client: &Client, format: Format, command: &TaskCommand) -> Result<u8, CliError> {
    match command {
        TaskCommand::List {
            rack,
            status,
            operation,
            component,
            request,
            active,
            paging,
        } => {
            let rack = match rack {
                Some(rack) => Some(rack_id(client, rack).await?),
                None => None,
            };
            let query = list::query(&[
                ("rack_id", rack),
                ("status", status.clone()),
                ("operation", operation.map(|o| o.to_string())),
                ("component_id", component.clone()),
                ("request_id", request.clone()),
                ("active_only", active.then(|| "true".to_string())),
            ]);
            list::run(client, format, "/v1/tasks", query, paging, tasks_table).await?;
        }
        TaskCommand::Get { id } => {
            let reply = client.get(&format!("/v1/tasks/{id}"), &[]).await?;
            output::emit(format, &reply.text, &reply.body, task_view);
        }
        TaskCommand::Cancel { id } => {
            let reply = client.post_empty(&format!("/v1/tasks/{id}/cancel")).await?;
            output::emit(format, &reply.text, &reply.body, task_view);
        }
        TaskCommand::Watch { id } => {
            let Some(task) = watch::wait_all(client, std::slice::from_ref(id))
                .await?
                .pop()
            else {
                return Ok(exit::TASK_FAILED);
            };
            output::emit(format, &task.raw, &task.body, task_view);
            return Ok(if watch::succeeded(&task.body) {
                exit::OK
            } else {
                exit::TASK_FAILED
            });
        }
    }
    Ok(exit::OK)
}

/// Tasks, one per row.
pub fn tasks_table(tasks: &[Value]) -> String {
    let mut table = Table::new(&["ID", "OPERATION", "RACK", "STATUS", "MESSAGE", "CREATED"]);
    for t in tasks {
        table.row(vec![
            cell(&t["id"]),
            cell(&t["operation"]),
            cell(&t["rack_id"]),
            cell(&t["status"]),
            cell(&t["message"]),
            cell(&t["created_at"]),
        ]);
    }
    table.render()
}

/// A task's fields, then one row per component step, stage by stage.
pub fn task_view(t: &Value) -> String {
    let mut out = fields(&[
        ("id", cell(&t["id"])),
        ("operation", cell(&t["operation"])),
        ("rack_id", cell(&t["rack_id"])),
        ("status", cell(&t["status"])),
        ("message", cell(&t["message"])),
        ("description", cell(&t["description"])),
        ("created_at", cell(&t["created_at"])),
        ("started_at", cell(&t["started_at"])),
        ("finished_at", cell(&t["finished_at"])),
        ("queue_expires_at", cell(&t["queue_expires_at"])),
    ]);
    let stages = t["stages"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if stages.is_empty() {
        return out;
    }
    let mut table = Table::new(&["STAGE", "COMPONENT", "TYPE", "STATUS", "ATTEMPTS", "ERROR"]);
    for stage in stages {
        let label = format!("{} {}", cell(&stage["number"]), cell(&stage["name"]));
        for step in stage["components"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
        {
            table.row(vec![
                label.clone(),
                cell(&step["name"]),
                cell(&step["type"]),
                cell(&step["status"]),
                cell(&step["attempts"]),
                cell(&step["error"]),
            ]);
        }
    }
    out.push('\n');
    out.push_str(&table.render());
    out
}

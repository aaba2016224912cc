//! `flow hold …`: holds a workload scheduler (or a person) puts on a rack, a component or an
//! NVLink domain so that no operation touches it; create, list and delete through the API.

use clap::{ArgGroup, Subcommand};
use reqwest::Method;
use serde_json::{Value, json};

use super::client::{CliError, Client};
use super::input::rack_ref;
use super::list::{self, Paging};
use super::output::{self, Format, Table, cell};
use super::racks::done;

/// `flow hold …`
#[derive(Debug, Subcommand)]
pub enum HoldCommand {
    /// Hold exactly one of a rack (id or name), a component (id) or an NVLink domain (id or name).
    #[command(group(ArgGroup::new("target").required(true).args(["rack", "component", "nvl_domain"])))]
    Create {
        #[arg(long)]
        rack: Option<String>,
        #[arg(long)]
        component: Option<String>,
        #[arg(long)]
        nvl_domain: Option<String>,
        /// Who holds it (`slurm`, `k8s-controller`); `list --owner` filters on it.
        #[arg(long)]
        owner: String,
        #[arg(long)]
        reason: String,
        /// RFC 3339 time when the hold stops counting by itself; none = until deleted.
        #[arg(long)]
        expires_at: Option<String>,
    },
    /// List holds, newest first.
    List {
        /// Holds on this rack (id or name) or on one of its components.
        #[arg(long)]
        rack: Option<String>,
        /// Holds on this component (id).
        #[arg(long)]
        component: Option<String>,
        #[arg(long)]
        owner: Option<String>,
        /// `true`: only holds that count now; `false`: only expired ones.
        #[arg(long)]
        active: Option<bool>,
        #[command(flatten)]
        paging: Paging,
    },
    /// Delete (release) a hold by id: its creator or an admin.
    Delete { id: String },
}

/// Runs one subcommand; `Ok` holds the exit code.
pub async fn run(client: &Client, format: Format, command: &HoldCommand) -> Result<u8, CliError> {
    match command {
        HoldCommand::Create {
            rack,
            component,
            nvl_domain,
            owner,
            reason,
            expires_at,
        } => {
            let target = match (rack, component, nvl_domain) {
                (Some(r), _, _) => json!({ "rack": rack_ref(r) }),
                (_, Some(c), _) => json!({ "component": { "id": c } }),
                (_, _, Some(d)) => json!({ "nvl_domain": rack_ref(d) }),
                _ => unreachable!("clap requires one target"),
            };
            let mut body = json!({ "target": target, "owner": owner, "reason": reason });
            if let Some(at) = expires_at {
                body["expires_at"] = json!(at);
            }
            let reply = client.post("/v1/holds", &body).await?;
            output::emit(format, &reply.text, &reply.body, |h| {
                holds_table(std::slice::from_ref(h))
            });
        }
        HoldCommand::List {
            rack,
            component,
            owner,
            active,
            paging,
        } => {
            let query = list::query(&[
                ("rack", rack.clone()),
                ("component", component.clone()),
                ("owner", owner.clone()),
                ("active", active.map(|a| a.to_string())),
            ]);
            list::run(client, format, "/v1/holds", query, paging, holds_table).await?;
        }
        HoldCommand::Delete { id } => {
            let path = format!(
                "/v1/holds/{}",
                form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>()
            );
            client.send(client.request(Method::DELETE, &path)).await?;
            done(format, &format!("deleted hold {id}"));
        }
    }
    Ok(0)
}

/// `rack <id>` / `component <id>` / `nvl_domain <id>`.
fn target(t: &Value) -> String {
    t.as_object()
        .and_then(|o| o.iter().next())
        .map(|(kind, r)| format!("{kind} {}", cell(&r["id"])))
        .unwrap_or_default()
}

fn holds_table(holds: &[Value]) -> String {
    let mut table = Table::new(&["ID", "TARGET", "OWNER", "REASON", "ACTIVE", "EXPIRES"]);
    for h in holds {
        table.row(vec![
            cell(&h["id"]),
            target(&h["target"]),
            cell(&h["owner"]),
            cell(&h["reason"]),
            cell(&h["active"]),
            cell(&h["expires_at"]),
        ]);
    }
    table.render()
}

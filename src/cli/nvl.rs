//! `flow nvl-domain …`: NVLink domains and the racks attached to them (by id or name).

use clap::Subcommand;
use reqwest::Method;
use serde_json::{Value, json};

use super::client::{CliError, Client};
use super::input::rack_ref;
use super::list::{self, Paging};
use super::output::{self, Format, Table, cell};
use super::racks::{done, racks_table};

/// `flow nvl-domain …`
#[derive(Debug, Subcommand)]
pub enum NvlCommand {
    /// Create an NVL domain (answers the existing one when the name is taken by an equal domain).
    Create { name: String },
    /// List NVL domains.
    List {
        #[arg(long)]
        name: Option<String>,
        #[command(flatten)]
        paging: Paging,
    },
    /// Attach racks (ids or names) to a domain.
    Attach {
        domain: String,
        #[arg(required = true)]
        racks: Vec<String>,
    },
    /// Detach one rack from a domain.
    Detach { domain: String, rack: String },
    /// The racks in a domain.
    Racks {
        domain: String,
        #[command(flatten)]
        paging: Paging,
    },
}

/// Runs one subcommand; `Ok` holds the exit code.
pub async fn run(client: &Client, format: Format, command: &NvlCommand) -> Result<u8, CliError> {
    match command {
        NvlCommand::Create { name } => {
            let reply = client
                .post("/v1/nvl-domains", &json!({ "name": name }))
                .await?;
            output::emit(format, &reply.text, &reply.body, |d| {
                domains_table(std::slice::from_ref(d))
            });
        }
        NvlCommand::List { name, paging } => {
            let query = list::query(&[("name", name.clone())]);
            list::run(
                client,
                format,
                "/v1/nvl-domains",
                query,
                paging,
                domains_table,
            )
            .await?;
        }
        NvlCommand::Attach { domain, racks } => {
            let body = json!({ "racks": racks.iter().map(|r| rack_ref(r)).collect::<Vec<_>>() });
            let path = format!("/v1/nvl-domains/{}/racks", segment(domain));
            let reply = client.post(&path, &body).await?;
            output::emit(format, &reply.text, &reply.body, |b| {
                racks_table(b["items"].as_array().map(Vec::as_slice).unwrap_or(&[]))
            });
        }
        NvlCommand::Detach { domain, rack } => {
            let path = format!(
                "/v1/nvl-domains/{}/racks/{}",
                segment(domain),
                segment(rack)
            );
            client.send(client.request(Method::DELETE, &path)).await?;
            done(format, &format!("detached {rack} from {domain}"));
        }
        NvlCommand::Racks { domain, paging } => {
            let path = format!("/v1/nvl-domains/{}/racks", segment(domain));
            list::run(client, format, &path, Vec::new(), paging, racks_table).await?;
        }
    }
    Ok(0)
}

/// A name as one URL path segment (names may hold characters a path cannot).
fn segment(name: &str) -> String {
    form_urlencoded::byte_serialize(name.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

fn domains_table(domains: &[Value]) -> String {
    let mut table = Table::new(&["ID", "NAME", "CREATED"]);
    for d in domains {
        table.row(vec![
            cell(&d["id"]),
            cell(&d["name"]),
            cell(&d["created_at"]),
        ]);
    }
    table.render()
}

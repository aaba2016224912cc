//! `flow component …`: add, look up (by id, serial or BMC MAC), list, patch, delete, purge.

use clap::Subcommand;
use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;

use super::client::{CliError, Client};
use super::input;
use super::list::{self, Paging};
use super::output::{self, Format, Table, cell, fields};
use super::racks::{done, with_if_match};

/// `flow component …`
#[derive(Debug, Subcommand)]
pub enum ComponentCommand {
    /// Add one component, optionally into a rack (the POST /v1/components body).
    Add {
        /// JSON or YAML file; `-` reads stdin.
        #[arg(short, long)]
        file: String,
    },
    /// Show one component: by id, by manufacturer and serial number, or by a BMC MAC.
    Get {
        #[arg(required_unless_present_any = ["serial", "mac"], conflicts_with_all = ["serial", "mac"])]
        id: Option<String>,
        #[arg(long, requires = "manufacturer", conflicts_with = "mac")]
        serial: Option<String>,
        #[arg(long, requires = "serial")]
        manufacturer: Option<String>,
        /// Any of its BMC MACs, in any common notation.
        #[arg(long)]
        mac: Option<String>,
        /// Include the rack it is in.
        #[arg(long)]
        with_rack: bool,
    },
    /// List components.
    List {
        /// Rack id or name.
        #[arg(long)]
        rack: Option<String>,
        /// Component types, comma-separated (`compute,nvswitch`).
        #[arg(long = "type")]
        kind: Option<String>,
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        manufacturer: Option<String>,
        #[arg(long)]
        model: Option<String>,
        #[arg(long)]
        serial: Option<String>,
        #[arg(long)]
        external_id: Option<String>,
        /// BMC MAC.
        #[arg(long)]
        mac: Option<String>,
        #[command(flatten)]
        paging: Paging,
    },
    /// Merge-patch a component from a file (the PATCH /v1/components/{id} body) or `--set`.
    Patch {
        id: String,
        #[arg(short, long)]
        file: Option<String>,
        /// `key=value` (string) or `key:=json`: `firmware_version=1.3`, `position.slot_id:=37`.
        #[arg(long, value_name = "KEY=VALUE")]
        set: Vec<String>,
        #[arg(long, value_name = "REVISION")]
        if_match: Option<String>,
    },
    /// Soft-delete a component.
    Delete {
        id: String,
        #[arg(long, value_name = "REVISION")]
        if_match: Option<String>,
    },
    /// Remove a deleted component for good.
    Purge { id: String },
}

/// Runs one subcommand; `Ok` holds the exit code.
pub async fn run(
    client: &Client,
    format: Format,
    command: &ComponentCommand,
) -> Result<u8, CliError> {
    match command {
        ComponentCommand::Add { file } => {
            let reply = client
                .post("/v1/components", &input::read_body(file)?)
                .await?;
            output::emit(format, &reply.text, &reply.body, component_view);
        }
        ComponentCommand::Get {
            id,
            serial,
            manufacturer,
            mac,
            with_rack,
        } => {
            let mut query = vec![("with_rack", with_rack.to_string())];
            let path = match (id, serial, manufacturer, mac) {
                (Some(id), ..) => format!("/v1/components/{id}"),
                (None, Some(serial), Some(manufacturer), _) => {
                    query.push(("serial_number", serial.clone()));
                    query.push(("manufacturer", manufacturer.clone()));
                    "/v1/components/by-serial".to_string()
                }
                (None, _, _, Some(mac)) => format!("/v1/components/by-mac/{mac}"),
                _ => return Err(CliError::Usage("give an id, --serial or --mac".into())),
            };
            let reply = client.get(&path, &query).await?;
            output::emit(format, &reply.text, &reply.body, |b| {
                let mut out = component_view(&b["component"]);
                if b["rack"].is_object() {
                    out.push_str(&format!(
                        "\nrack  {} ({})\n",
                        cell(&b["rack"]["name"]),
                        cell(&b["rack"]["id"])
                    ));
                }
                out
            });
        }
        ComponentCommand::List {
            rack,
            kind,
            name,
            manufacturer,
            model,
            serial,
            external_id,
            mac,
            paging,
        } => {
            let (rack_id, rack_name) = match rack {
                Some(r) if Uuid::parse_str(r).is_ok() => (Some(r.clone()), None),
                other => (None, other.clone()),
            };
            let query = list::query(&[
                ("rack_id", rack_id),
                ("rack_name", rack_name),
                ("type", kind.clone()),
                ("name", name.clone()),
                ("manufacturer", manufacturer.clone()),
                ("model", model.clone()),
                ("serial_number", serial.clone()),
                ("external_id", external_id.clone()),
                ("bmc_mac", mac.clone()),
            ]);
            list::run(
                client,
                format,
                "/v1/components",
                query,
                paging,
                components_table,
            )
            .await?;
        }
        ComponentCommand::Patch {
            id,
            file,
            set,
            if_match,
        } => {
            let body = input::body_or_set(file.as_deref(), set)?;
            let request = client.request(Method::PATCH, &format!("/v1/components/{id}"));
            let reply = client
                .send(with_if_match(request, if_match).json(&body))
                .await?;
            output::emit(format, &reply.text, &reply.body, component_view);
        }
        ComponentCommand::Delete { id, if_match } => {
            let request = client.request(Method::DELETE, &format!("/v1/components/{id}"));
            client.send(with_if_match(request, if_match)).await?;
            done(format, &format!("deleted component {id}"));
        }
        ComponentCommand::Purge { id } => {
            client
                .post_empty(&format!("/v1/components/{id}/purge"))
                .await?;
            done(format, &format!("purged component {id}"));
        }
    }
    Ok(0)
}

/// The MACs of a component's BMCs, comma-separated.
fn macs(component: &Value) -> String {
    component["bmcs"]
        .as_array()
        .map(|bmcs| {
            bmcs.iter()
                .map(|b| cell(&b["mac_address"]))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

/// One component as `key value` lines, then its BMCs.
pub fn component_view(c: &Value) -> String {
    let position = &c["position"];
    let mut out = fields(&[
        ("id", cell(&c["id"])),
        ("type", cell(&c["type"])),
        ("name", cell(&c["name"])),
        ("manufacturer", cell(&c["manufacturer"])),
        ("serial_number", cell(&c["serial_number"])),
        ("model", cell(&c["model"])),
        ("firmware_version", cell(&c["firmware_version"])),
        ("description", cell(&c["description"])),
        ("rack_id", cell(&c["rack_id"])),
        ("slot_id", cell(&position["slot_id"])),
        ("tray_idx", cell(&position["tray_idx"])),
        ("host_id", cell(&position["host_id"])),
        ("power_state", cell(&c["power_state"])),
        ("external_id", cell(&c["external_id"])),
        ("revision", cell(&c["revision"])),
    ]);
    let mut bmcs = Table::new(&["BMC", "MAC", "IP"]);
    for b in c["bmcs"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        bmcs.row(vec![
            cell(&b["type"]),
            cell(&b["mac_address"]),
            cell(&b["ip_address"]),
        ]);
    }
    out.push('\n');
    out.push_str(&bmcs.render());
    out
}

/// Components, one per row, with their BMC MACs.
pub fn components_table(components: &[Value]) -> String {
    let mut table = Table::new(&[
        "ID",
        "TYPE",
        "NAME",
        "MANUFACTURER",
        "SERIAL",
        "FIRMWARE",
        "SLOT",
        "BMC MACS",
    ]);
    for c in components {
        table.row(vec![
            cell(&c["id"]),
            cell(&c["type"]),
            cell(&c["name"]),
            cell(&c["manufacturer"]),
            cell(&c["serial_number"]),
            cell(&c["firmware_version"]),
            cell(&c["position"]["slot_id"]),
            macs(c),
        ]);
    }
    table.render()
}

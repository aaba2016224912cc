//! `flow rack …`: expected racks (create, look up, list, patch, delete, purge) and whole-rack jobs.

use clap::Subcommand;
use reqwest::Method;
use serde_json::{Value, json};

use super::client::{CliError, Client};
use super::components::components_table;
use super::input::{self, rack_id};
use super::list::{self, Paging};
use super::operations::{self, Submit};
use super::output::{self, Format, Table, cell, fields};

/// `flow rack …`
#[derive(Debug, Subcommand)]
pub enum RackCommand {
    /// Create an expected rack with its components and BMCs (the POST /v1/expected-racks body).
    Create {
        /// JSON or YAML file; `-` reads stdin.
        #[arg(short, long)]
        file: String,
    },
    /// Show one rack, by id or name, or by manufacturer and serial number.
    Get {
        /// Rack id or name.
        #[arg(required_unless_present = "serial", conflicts_with = "serial")]
        rack: Option<String>,
        #[arg(long, requires = "manufacturer")]
        serial: Option<String>,
        #[arg(long, requires = "serial")]
        manufacturer: Option<String>,
        /// Include the rack's components.
        #[arg(long)]
        components: bool,
    },
    /// List racks; text filters match exactly, or as a glob with `*`.
    List {
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        manufacturer: Option<String>,
        #[arg(long)]
        model: Option<String>,
        /// NVL domain id or name.
        #[arg(long)]
        nvl_domain: Option<String>,
        #[arg(long)]
        region: Option<String>,
        #[arg(long)]
        datacenter: Option<String>,
        #[arg(long)]
        room: Option<String>,
        #[arg(long)]
        position: Option<String>,
        /// Include each rack's components (JSON output).
        #[arg(long)]
        components: bool,
        #[command(flatten)]
        paging: Paging,
    },
    /// Merge-patch a rack from a file (the PATCH /v1/racks/{id} body) or `--set` assignments.
    Patch {
        /// Rack id or name.
        rack: String,
        #[arg(short, long)]
        file: Option<String>,
        /// `key=value` (string) or `key:=json`; dotted keys nest: `location.room=EW-F00-DH-03`.
        #[arg(long, value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Only if the rack is still at this revision (its ETag).
        #[arg(long, value_name = "REVISION")]
        if_match: Option<String>,
    },
    /// Soft-delete a rack (its name, serials and MACs become free again).
    Delete {
        rack: String,
        #[arg(long, value_name = "REVISION")]
        if_match: Option<String>,
    },
    /// Remove a deleted rack for good.
    Purge { rack: String },
    /// Bring a rack up: power on in safe order, then firmware to the desired versions.
    BringUp {
        /// Rack name or id.
        rack: String,
        #[command(flatten)]
        submit: Submit,
    },
    /// Compare the rack's inventory with what its component managers see right now.
    Validate {
        /// Rack name or id.
        rack: String,
    },
    /// Register the rack's devices with their managers.
    Ingest {
        /// Rack name or id.
        rack: String,
        #[command(flatten)]
        submit: Submit,
    },
}

/// Runs one subcommand; `Ok` holds the exit code.
pub async fn run(client: &Client, format: Format, command: &RackCommand) -> Result<u8, CliError> {
    match command {
        RackCommand::Create { file } => {
            let reply = client
                .post("/v1/expected-racks", &input::read_body(file)?)
                .await?;
            output::emit(format, &reply.text, &reply.body, rack_view);
        }
        RackCommand::Get {
            rack,
            serial,
            manufacturer,
            components,
        } => {
            let mut query = vec![("include_components", components.to_string())];
            let reply = match (rack, serial, manufacturer) {
                (Some(rack), _, _) => {
                    let id = rack_id(client, rack).await?;
                    client.get(&format!("/v1/racks/{id}"), &query).await?
                }
                (None, Some(serial), Some(manufacturer)) => {
                    query.push(("serial_number", serial.clone()));
                    query.push(("manufacturer", manufacturer.clone()));
                    client.get("/v1/racks/by-serial", &query).await?
                }
                _ => {
                    return Err(CliError::Usage(
                        "give a rack, or --serial and --manufacturer".into(),
                    ));
                }
            };
            output::emit(format, &reply.text, &reply.body, rack_view);
        }
        RackCommand::List {
            name,
            manufacturer,
            model,
            nvl_domain,
            region,
            datacenter,
            room,
            position,
            components,
            paging,
        } => {
            let query = list::query(&[
                ("name", name.clone()),
                ("manufacturer", manufacturer.clone()),
                ("model", model.clone()),
                ("nvl_domain", nvl_domain.clone()),
                ("region", region.clone()),
                ("datacenter", datacenter.clone()),
                ("room", room.clone()),
                ("position", position.clone()),
                ("include_components", components.then(|| "true".to_string())),
            ]);
            list::run(client, format, "/v1/racks", query, paging, racks_table).await?;
        }
        RackCommand::Patch {
            rack,
            file,
            set,
            if_match,
        } => {
            let body = input::body_or_set(file.as_deref(), set)?;
            let id = rack_id(client, rack).await?;
            let request = client.request(Method::PATCH, &format!("/v1/racks/{id}"));
            let reply = client
                .send(with_if_match(request, if_match).json(&body))
                .await?;
            output::emit(format, &reply.text, &reply.body, |b| {
                format!(
                    "{}\nrack: {}\n",
                    rack_view(&b["rack"]),
                    cell(&b["report"]["rack"])
                )
            });
        }
        RackCommand::Delete { rack, if_match } => {
            let id = rack_id(client, rack).await?;
            let request = client.request(Method::DELETE, &format!("/v1/racks/{id}"));
            client.send(with_if_match(request, if_match)).await?;
            done(format, &format!("deleted rack {id}"));
        }
        RackCommand::Purge { rack } => {
            let id = rack_id(client, rack).await?;
            client.post_empty(&format!("/v1/racks/{id}/purge")).await?;
            done(format, &format!("purged rack {id}"));
        }
        RackCommand::BringUp { rack, submit } => {
            let body = json!({"target_spec": {"racks": [input::rack_ref(rack)]}});
            return operations::submit(client, format, "bring-up", body, submit).await;
        }
        RackCommand::Validate { rack } => {
            let id = rack_id(client, rack).await?;
            let reply = client
                .get(&format!("/v1/racks/{id}/validation"), &[])
                .await?;
            output::emit(format, &reply.text, &reply.body, validation_view);
            // Scripts can tell a clean rack from one with differences by the exit code.
            let summary = &reply.body["summary"];
            let differs = [
                "missing",
                "unexpected",
                "mismatch",
                "unreachable",
                "rejected",
            ]
            .iter()
            .any(|k| summary[k].as_u64().unwrap_or(0) > 0);
            return Ok(u8::from(differs));
        }
        RackCommand::Ingest { rack, submit } => {
            let body = json!({"target_spec": {"racks": [input::rack_ref(rack)]}});
            return operations::submit(client, format, "ingest", body, submit).await;
        }
    }
    Ok(0)
}

/// `If-Match: "N"`: the API's ETags are quoted revisions.
pub fn with_if_match(
    request: reqwest::RequestBuilder,
    revision: &Option<String>,
) -> reqwest::RequestBuilder {
    match revision {
        Some(r) => request.header("if-match", format!("\"{}\"", r.trim_matches('"'))),
        None => request,
    }
}

/// A confirmation for writes that answer 204: said in tables, silent in JSON (there is none).
pub fn done(format: Format, message: &str) {
    if format == Format::Table {
        output::print(message);
    }
}

/// One rack as `key value` lines, then its components when present.
pub fn rack_view(rack: &Value) -> String {
    let location = &rack["location"];
    let mut out = fields(&[
        ("id", cell(&rack["id"])),
        ("name", cell(&rack["name"])),
        ("manufacturer", cell(&rack["manufacturer"])),
        ("serial_number", cell(&rack["serial_number"])),
        ("model", cell(&rack["model"])),
        ("description", cell(&rack["description"])),
        ("region", cell(&location["region"])),
        ("datacenter", cell(&location["datacenter"])),
        ("room", cell(&location["room"])),
        ("position", cell(&location["position"])),
        ("nvl_domain_id", cell(&rack["nvl_domain_id"])),
        ("revision", cell(&rack["revision"])),
        ("updated_at", cell(&rack["updated_at"])),
    ]);
    if let Some(components) = rack["components"].as_array() {
        out.push('\n');
        out.push_str(&components_table(components));
    }
    out
}

/// A validation: its counts, then one row per difference.
pub fn validation_view(validation: &Value) -> String {
    let summary = &validation["summary"];
    let mut out = fields(
        &[
            "match",
            "missing",
            "unexpected",
            "mismatch",
            "unreachable",
            "rejected",
            "unchecked",
        ]
        .map(|k| (k, cell(&summary[k]))),
    );
    let diffs = validation["diffs"].as_array().cloned().unwrap_or_default();
    if !diffs.is_empty() {
        let mut table = Table::new(&["KIND", "TYPE", "COMPONENT", "EXTERNAL_ID", "DETAIL"]);
        for d in &diffs {
            let detail = match d["fields"].as_array() {
                Some(f) if !f.is_empty() => f
                    .iter()
                    .map(|f| {
                        format!(
                            "{}: {} != {}",
                            cell(&f["field"]),
                            cell(&f["expected"]),
                            cell(&f["actual"])
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
                _ => cell(&d["message"]),
            };
            table.row(vec![
                cell(&d["kind"]),
                cell(&d["type"]),
                cell(&d["component_id"]),
                cell(&d["external_id"]),
                detail,
            ]);
        }
        out.push('\n');
        out.push_str(&table.render());
    }
    out
}

/// Racks, one per row.
pub fn racks_table(racks: &[Value]) -> String {
    let mut table = Table::new(&[
        "ID",
        "NAME",
        "MANUFACTURER",
        "SERIAL",
        "MODEL",
        "DATACENTER",
        "ROOM",
        "POSITION",
    ]);
    for r in racks {
        let location = &r["location"];
        table.row(vec![
            cell(&r["id"]),
            cell(&r["name"]),
            cell(&r["manufacturer"]),
            cell(&r["serial_number"]),
            cell(&r["model"]),
            cell(&location["datacenter"]),
            cell(&location["room"]),
            cell(&location["position"]),
        ]);
    }
    table.render()
}

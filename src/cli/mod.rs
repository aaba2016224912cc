//! The `flow` command-line client: every REST API capability from a terminal, over HTTP at `FLOW_URL`.

pub mod client;
pub mod components;
pub mod follow;
pub mod holds;
pub mod input;
pub mod list;
pub mod nvl;
pub mod operations;
pub mod output;
pub mod plan;
pub mod racks;
pub mod rollout_watch;
pub mod rollouts;
pub mod rules;
pub mod schedules;
pub mod tasks;
pub mod tokens;
pub mod watch;

use clap::{Args, Subcommand};

use client::{CliError, Client};
use output::Format;

/// Options of every client command (accepted anywhere on the command line).
// No `Debug`: it holds the token.
#[derive(Clone, Args)]
pub struct GlobalArgs {
    /// Client commands: the Flow API's base URL.
    #[arg(
        long,
        global = true,
        env = "FLOW_URL",
        default_value = "http://localhost:8080"
    )]
    pub url: String,
    /// Client commands: bearer token sent with every request.
    #[arg(long, global = true, env = "FLOW_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Client commands: `table` for people, `json` for scripts (the API's JSON, pretty-printed).
    #[arg(short, long, global = true, value_enum, default_value_t = Format::Table)]
    pub output: Format,
}

/// The client subcommands, flattened into the binary's own.
#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Expected racks: create, get, list, patch, delete, purge, validate, bring-up, ingest.
    Rack {
        #[command(subcommand)]
        command: racks::RackCommand,
    },
    /// Components: add, get (id, serial or MAC), list, patch, delete, purge.
    Component {
        #[command(subcommand)]
        command: components::ComponentCommand,
    },
    /// NVLink domains and their racks.
    NvlDomain {
        #[command(subcommand)]
        command: nvl::NvlCommand,
    },
    /// Holds on racks, components and NVLink domains: create, list, delete.
    Hold {
        #[command(subcommand)]
        command: holds::HoldCommand,
    },
    /// Power operations on racks.
    Power {
        #[command(subcommand)]
        command: operations::PowerCommand,
    },
    /// Firmware operations on racks.
    Firmware {
        #[command(subcommand)]
        command: operations::FirmwareCommand,
    },
    /// Tasks: list, get, cancel, watch.
    Task {
        #[command(subcommand)]
        command: tasks::TaskCommand,
    },
    /// Operation rules: list, get, create, replace, delete, versions, default; attach to racks.
    Rule {
        #[command(subcommand)]
        command: rules::RuleCommand,
    },
    /// Task schedules: create, list, get, pause, resume, trigger, runs, delete.
    Schedule {
        #[command(subcommand)]
        command: schedules::ScheduleCommand,
    },
    /// API tokens for automation: create, list, revoke (admin).
    Token {
        #[command(subcommand)]
        command: tokens::TokenCommand,
    },
    /// Fleet rollouts: create (or plan), list, get, pause, resume, approve, abort, watch.
    Rollout {
        #[command(subcommand)]
        command: rollouts::RolloutCommand,
    },
    /// Print a shell completion script (`source <(flow completions bash)`).
    Completions { shell: clap_complete::Shell },
}

/// Runs a client command; returns the process exit code. `command` builds the whole binary's
/// clap definition, which completions need.
pub async fn run(
    global: &GlobalArgs,
    command: &ClientCommand,
    cli: impl FnOnce() -> clap::Command,
) -> i32 {
    let result = match command {
        ClientCommand::Completions { shell } => {
            let mut cli = cli();
            let name = cli.get_name().to_string();
            // Into a buffer first: clap_complete panics on a closed pipe, `output::print` does not.
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut cli, name, &mut script);
            output::print(&String::from_utf8_lossy(&script));
            Ok(0)
        }
        _ => match Client::new(&global.url, global.token.clone()) {
            Ok(client) => dispatch(&client, global.output, command).await,
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(code) => i32::from(code),
        Err(e) => {
            eprintln!("error: {}", output::printable(&e.to_string(), true));
            i32::from(e.exit_code())
        }
    }
}

async fn dispatch(
    client: &Client,
    format: Format,
    command: &ClientCommand,
) -> Result<u8, CliError> {
    match command {
        ClientCommand::Rack { command } => racks::run(client, format, command).await,
        ClientCommand::Component { command } => components::run(client, format, command).await,
        ClientCommand::NvlDomain { command } => nvl::run(client, format, command).await,
        ClientCommand::Hold { command } => holds::run(client, format, command).await,
        ClientCommand::Power { command } => operations::power(client, format, command).await,
        ClientCommand::Firmware { command } => operations::firmware(client, format, command).await,
        ClientCommand::Task { command } => tasks::run(client, format, command).await,
        ClientCommand::Rule { command } => rules::run(client, format, command).await,
        ClientCommand::Schedule { command } => schedules::run(client, format, command).await,
        ClientCommand::Token { command } => tokens::run(client, format, command).await,
        ClientCommand::Rollout { command } => rollouts::run(client, format, command).await,
        ClientCommand::Completions { .. } => Ok(0),
    }
}

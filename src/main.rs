//! The `flow` binary: serve the API, run migrations, print the OpenAPI document, and the
//! client commands (`flow rack …`, `flow task watch …`) over HTTP.

use std::io::Write;

use anyhow::Context;
use clap::{CommandFactory, Parser, Subcommand};
use flow::cli::tokens::TokenCommand;
use flow::config::Config;
use flow::service::{self, Roles};
use flow::{api, db, dev, telemetry};
use migration::{Migrator, MigratorTrait};

/// mimalloc rather than glibc's malloc: a lookup allocates and frees small buffers on both
/// cores at once, and glibc's arenas spent a quarter of the process's CPU doing it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "flow",
    version,
    about = "Inventory and rack-level operations for GPU datacenter racks"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    client: flow::cli::GlobalArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the REST API and run the Temporal worker (migrating the database first unless
    /// FLOW_MIGRATE_ON_START=false).
    Serve {
        /// Debug logging and permissive CORS.
        #[arg(long)]
        dev_mode: bool,
        /// Serve the API only; run workers separately with `flow worker`.
        #[arg(long)]
        no_worker: bool,
    },
    /// Run only the Temporal worker (and task reconciliation): scale out with several.
    Worker,
    /// Local all-in-one: SQLite, simulated devices, API and worker on 127.0.0.1:8080, and a
    /// Temporal dev server child (state in .flow/) when none answers.
    Dev,
    /// Database administration.
    Db {
        #[command(subcommand)]
        command: DbCommand,
    },
    /// Print the OpenAPI document (what /openapi.json serves).
    Openapi,
    /// The server's configuration.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    // Boxed: the client commands' options dwarf the other variants.
    #[command(flatten)]
    Client(Box<flow::cli::ClientCommand>),
}

#[derive(Subcommand)]
enum DbCommand {
    /// Schema migrations.
    Migrate {
        #[command(subcommand)]
        action: Option<MigrateAction>,
    },
}

#[derive(Subcommand, Clone, Copy)]
enum ConfigCommand {
    /// Check every setting (defaults, the FLOW_CONFIG file, FLOW_* and OTEL_* variables) and
    /// print the effective configuration as TOML, secrets redacted; exits 2 on a problem,
    /// naming the setting.
    Check,
}

#[derive(Subcommand, Clone, Copy)]
enum MigrateAction {
    /// Apply all pending migrations (the default).
    Up,
    /// Roll back the most recent migration.
    Down,
    /// List migrations and whether each is applied.
    Status,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Before any TLS client is built (the OTLP exporter's, the CLI's, JWKS, Redfish): rustls is
    // compiled with ring only and has no process default otherwise.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Hidden: the Temporal baseline of scripts/bench (src/bench.rs).
    if std::env::args().nth(1).as_deref() == Some("bench-baseline") {
        return flow::bench::main_from_args(std::env::args().skip(2)).await;
    }
    let cli = Cli::parse();
    // Client commands only talk HTTP: the server's configuration is neither needed nor checked.
    if let Command::Client(command) = &cli.command {
        if let flow::cli::ClientCommand::Token {
            command:
                TokenCommand::Create {
                    name,
                    role,
                    expires,
                },
        } = command.as_ref()
            && cli.client.token.as_deref().is_none_or(str::is_empty)
            && std::env::var("FLOW_DATABASE_URL").is_ok_and(|v| !v.is_empty())
        {
            return create_token_in_database(name, role, expires.as_deref()).await;
        }
        std::process::exit(flow::cli::run(&cli.client, command, Cli::command).await);
    }
    if let Command::Config {
        command: ConfigCommand::Check,
    } = &cli.command
    {
        std::process::exit(config_check());
    }
    let mut config = Config::from_env()?;
    match cli.command {
        Command::Client(_) | Command::Config { .. } => Ok(()), // ran above
        Command::Openapi => {
            let doc = api::openapi().to_pretty_json()?;
            // A closed pipe (`flow openapi | head`) is not an error worth a panic.
            let _ = writeln!(std::io::stdout(), "{doc}");
            Ok(())
        }
        Command::Db {
            command: DbCommand::Migrate { action },
        } => {
            let _telemetry = telemetry::init(&config.log.filter, &config.log.format);
            let conn = db::connect(&db::DbOptions::new(config.database.url.expose())).await?;
            match action.unwrap_or(MigrateAction::Up) {
                MigrateAction::Up => db::migrate(&conn).await?,
                MigrateAction::Down => Migrator::down(&conn, Some(1)).await?,
                MigrateAction::Status => Migrator::status(&conn).await?,
            }
            Ok(())
        }
        Command::Serve {
            dev_mode,
            no_worker,
        } => {
            if dev_mode {
                config.server.dev_mode = true;
                if config.log.filter == "info" {
                    config.log.filter =
                        "debug,sqlx=warn,hyper=info,h2=info,tonic=info,temporalio_sdk_core=info"
                            .into();
                }
            }
            run(
                config,
                Roles {
                    api: true,
                    worker: !no_worker,
                },
            )
            .await
        }
        Command::Worker => {
            run(
                config,
                Roles {
                    api: false,
                    worker: true,
                },
            )
            .await
        }
        Command::Dev => {
            dev::apply_defaults(&mut config, &std::env::vars().collect());
            let telemetry = telemetry::init(&config.log.filter, &config.log.format);
            tracing::info!(config = %config.effective_line(), "starting flow dev");
            // No context added: each dev error already says what to do.
            let result = dev::run(config, shutdown_signal()).await;
            telemetry.shutdown();
            Ok(result?)
        }
    }
}

/// `flow config check`: the effective configuration on stdout, or the problem on stderr.
fn config_check() -> i32 {
    let checked = Config::from_env()
        .map_err(|e| e.to_string())
        .and_then(|config| {
            telemetry::trace::check_exporter(&std::env::vars().collect())
                .map(|()| config)
                .map_err(|e| format!("configuration: {e}"))
        })
        .and_then(|config| {
            // The firmware catalog is read and checked as the service would at start-up.
            match &config.redfish.firmware_catalog {
                Some(path) => flow::components::providers::redfish::Catalog::load(path)
                    .map(|_| config)
                    .map_err(|e| format!("configuration: {e}")),
                None => Ok(config),
            }
        });
    match checked {
        Ok(config) => {
            let _ = write!(std::io::stdout(), "{}", config.effective_toml());
            0
        }
        Err(e) => {
            eprintln!("{e}");
            2
        }
    }
}

async fn run(config: Config, roles: Roles) -> anyhow::Result<()> {
    let Some(modes) = config.auth_modes() else {
        anyhow::bail!(
            "FLOW_AUTH is not set. Choose who may call the API: FLOW_AUTH=jwt (OIDC bearer tokens; \
also set FLOW_JWT_JWKS_URL or FLOW_JWT_JWKS_FILE, FLOW_JWT_ISSUER and FLOW_JWT_AUDIENCE), \
FLOW_AUTH=token (API tokens from `flow token create`), FLOW_AUTH=jwt,token (both), or \
FLOW_AUTH=none to accept every request without credentials (local use only)"
        );
    };
    config.check_bmc_confinement()?;
    let telemetry = telemetry::init(&config.log.filter, &config.log.format);
    if modes.is_none() {
        tracing::warn!(
            "FLOW_AUTH=none: every request is accepted without credentials and audited as `anonymous`"
        );
    }
    // The effective settings, redacted as `flow config check` prints them (`Debug` would show
    // URL query strings such as `?password=`).
    tracing::info!(config = %config.effective_line(), ?roles, "starting flow");
    let result = service::run(config, roles, shutdown_signal()).await;
    // Buffered spans reach the collector before the process ends.
    telemetry.shutdown();
    result.context("flow stopped")
}

/// `flow token create` straight on the database: how the first admin token comes to exist.
/// Audited as `local:<user>`, in the transaction that stores the token.
async fn create_token_in_database(
    name: &str,
    role: &str,
    expires: Option<&str>,
) -> anyhow::Result<()> {
    use flow::auth::tokens::{self, NewToken};
    let config = Config::from_env()?;
    let role = flow::auth::Role::parse(role)
        .context("--role must be viewer, operator, editor or admin")?;
    let expires_in =
        Some(tokens::lifetime(expires, config.auth.token_max_days).context("--expires")?);
    let conn = db::connect(&db::DbOptions::new(config.database.url.expose())).await?;
    db::migrate(&conn).await?;
    let user = local_user();
    let actor = format!("local:{user}");
    let identity = flow::auth::Identity::new(actor.clone(), vec![flow::auth::Role::Admin]);
    let context = std::sync::Arc::new(flow::audit::Context::new(
        &identity.actor,
        Some("admin"),
        "CLI",
        "flow token create",
        None,
    ));
    let new = NewToken {
        name: name.to_string(),
        role,
        expires_in,
    };
    let now = chrono::Utc::now();
    let created = flow::audit::scope(context, tokens::create(&conn, &new, &actor, now)).await?;
    let doc = serde_json::to_value(api::tokens::TokenDoc::from(created.token))?;
    flow::cli::tokens::print_created(&doc, &created.secret);
    Ok(())
}

/// Who runs the command, for the audit log: `USER` or `LOGNAME`, else the account of the process's
/// uid (containers often set neither variable), else `uid-N`.
fn local_user() -> String {
    for var in ["USER", "LOGNAME"] {
        if let Ok(name) = std::env::var(var)
            && !name.trim().is_empty()
        {
            return name;
        }
    }
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().next().map(String::from))
        });
    let Some(uid) = uid else {
        return "unknown".into();
    };
    std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|passwd| {
            passwd.lines().find_map(|l| {
                let fields: Vec<&str> = l.split(':').collect();
                (fields.len() > 2 && fields[2] == uid).then(|| fields[0].to_string())
            })
        })
        .unwrap_or_else(|| format!("uid-{uid}"))
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = terminate => {} }
    tracing::info!("shutting down");
}

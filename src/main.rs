//! The `flow` binary: serve the API, run migrations, print the OpenAPI document.

use std::io::Write;

use anyhow::Context;
use clap::{Parser, Subcommand};
use flow::config::Config;
use flow::{api, app::AppState, db, telemetry};
use migration::{Migrator, MigratorTrait};

#[derive(Parser)]
#[command(
    name = "flow",
    version,
    about = "Inventory and rack-level operations for GPU datacenter racks"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the REST API (migrating the database first unless FLOW_MIGRATE_ON_START=false).
    Serve {
        /// Debug logging and permissive CORS.
        #[arg(long)]
        dev_mode: bool,
    },
    /// Database administration.
    Db {
        #[command(subcommand)]
        command: DbCommand,
    },
    /// Print the OpenAPI document (what /openapi.json serves).
    Openapi,
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
    let cli = Cli::parse();
    let mut config = Config::from_env()?;
    match cli.command {
        Command::Openapi => {
            let doc = api::openapi().to_pretty_json()?;
            // A closed pipe (`flow openapi | head`) is not an error worth a panic.
            let _ = writeln!(std::io::stdout(), "{doc}");
            Ok(())
        }
        Command::Db {
            command: DbCommand::Migrate { action },
        } => {
            telemetry::init(&config.log, &config.log_format);
            let conn = db::connect(&db::DbOptions::new(&config.database_url)).await?;
            match action.unwrap_or(MigrateAction::Up) {
                MigrateAction::Up => Migrator::up(&conn, None).await?,
                MigrateAction::Down => Migrator::down(&conn, Some(1)).await?,
                MigrateAction::Status => Migrator::status(&conn).await?,
            }
            Ok(())
        }
        Command::Serve { dev_mode } => {
            if dev_mode {
                config.dev_mode = true;
                if config.log == "info" {
                    config.log = "debug,sqlx=warn,hyper=info,h2=info".into();
                }
            }
            serve(config).await
        }
    }
}

async fn serve(config: Config) -> anyhow::Result<()> {
    telemetry::init(&config.log, &config.log_format);
    tracing::info!(?config, "starting flow");
    let conn = db::connect(&db::DbOptions::new(&config.database_url))
        .await
        .context("connecting to the database")?;
    if config.migrate_on_start {
        db::migrate(&conn).await.context("migrating the database")?;
    }
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "listening; Swagger UI at http://{}/swagger-ui/", display_addr(addr));
    let app = api::router(AppState::new(conn, config));
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    Ok(())
}

/// `0.0.0.0` is where we listen, not where a browser should go.
fn display_addr(addr: std::net::SocketAddr) -> String {
    if addr.ip().is_unspecified() {
        format!("localhost:{}", addr.port())
    } else {
        addr.to_string()
    }
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

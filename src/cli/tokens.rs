//! `flow token …`: create, list and revoke API tokens through the API; `create` also works
//! straight on the database (`FLOW_DATABASE_URL`, no `FLOW_TOKEN`) to bootstrap the first admin.

use clap::Subcommand;
use reqwest::Method;
use serde_json::{Value, json};

use super::client::{CliError, Client, exit};
use super::output::{self, Format, Table, cell};

/// `flow token …`
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token and print its secret once, on the last line. With FLOW_DATABASE_URL set
    /// and no FLOW_TOKEN, writes the database directly (bootstrapping the first admin).
    Create {
        #[arg(long)]
        name: String,
        /// `viewer`, `operator`, `editor` or `admin`.
        #[arg(long)]
        role: String,
        /// Lifetime such as `90d`, `12h` or `30m`; none = the server's FLOW_TOKEN_MAX_DAYS (365d).
        #[arg(long)]
        expires: Option<String>,
    },
    /// List tokens (never their secrets).
    List,
    /// Revoke a token by id: it stops working at once.
    Revoke { id: String },
}

/// Runs one subcommand through the API; `Ok` holds the exit code.
pub async fn run(client: &Client, format: Format, command: &TokenCommand) -> Result<u8, CliError> {
    match command {
        TokenCommand::Create {
            name,
            role,
            expires,
        } => {
            let mut body = json!({"name": name, "role": role});
            if let Some(expires) = expires {
                body["expires"] = json!(expires);
            }
            let reply = client.post("/v1/tokens", &body).await?;
            let secret = reply.body["secret"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            match format {
                Format::Json => output::print(&output::pretty(&reply.text)),
                Format::Table => print_created(&reply.body, &secret),
            }
        }
        TokenCommand::List => {
            let reply = client.get("/v1/tokens", &[]).await?;
            output::emit(format, &reply.text, &reply.body, tokens_table);
        }
        TokenCommand::Revoke { id } => {
            let reply = client
                .send(client.request(Method::DELETE, &format!("/v1/tokens/{id}")))
                .await?;
            output::emit(format, &reply.text, &reply.body, |t| {
                format!("revoked token {} ({})", cell(&t["name"]), cell(&t["id"]))
            });
        }
    }
    Ok(exit::OK)
}

/// What a created token prints: who it is, then the secret alone on the last line.
pub fn print_created(token: &Value, secret: &str) {
    output::print(&format!(
        "created token {} ({}), role {}, expires {}\nstore this secret now; it is not shown again:\n{secret}",
        cell(&token["name"]),
        cell(&token["id"]),
        cell(&token["role"]),
        token["expires_at"].as_str().unwrap_or("never"),
    ));
}

fn tokens_table(body: &Value) -> String {
    let mut table = Table::new(&[
        "ID",
        "NAME",
        "ROLE",
        "PREFIX",
        "CREATED",
        "BY",
        "EXPIRES",
        "LAST USED",
        "REVOKED",
    ]);
    for t in body["items"].as_array().into_iter().flatten() {
        table.row(vec![
            cell(&t["id"]),
            cell(&t["name"]),
            cell(&t["role"]),
            cell(&t["prefix"]),
            cell(&t["created_at"]),
            cell(&t["created_by"]),
            cell(&t["expires_at"]),
            cell(&t["last_used_at"]),
            cell(&t["revoked_at"]),
        ]);
    }
    table.render()
}

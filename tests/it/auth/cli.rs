//! The real binary: `flow serve` refuses an unset `FLOW_AUTH`; `flow token create` bootstraps
//! the first admin on the database; the CLI passes `FLOW_TOKEN` to the API.

use std::process::Stdio;

use flow::config::Config;

use crate::support::{Backend, TestApp};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

async fn flow(args: &[&str], env: &[(&str, &str)]) -> Run {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_flow"))
        .args(args)
        .env_remove("FLOW_TOKEN")
        .env_remove("FLOW_DATABASE_URL")
        .env_remove("FLOW_AUTH")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), output)
        .await
        .expect("flow finished in time")
        .expect("run flow");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn last_line(text: &str) -> String {
    text.trim_end()
        .lines()
        .last()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn serve_and_worker_refuse_to_start_without_flow_auth_and_say_how_to_set_it() {
    for command in ["serve", "worker"] {
        let run = flow(&[command], &[("FLOW_TEMPORAL_ADDRESS", "none")]).await;
        assert_ne!(run.code, 0, "{command}");
        for hint in ["FLOW_AUTH=jwt", "FLOW_AUTH=token", "FLOW_AUTH=none"] {
            assert!(run.stderr.contains(hint), "{command}: {}", run.stderr);
        }
    }
}

#[tokio::test]
async fn the_first_admin_is_bootstrapped_on_the_database_and_the_cli_sends_flow_token() {
    let mut config = Config::default();
    config.auth.mode = "token".into();
    let app = TestApp::with_config(Backend::Sqlite, config).await;
    let db_url = app.db.url.clone();
    let boot = flow(
        &[
            "token",
            "create",
            "--name",
            "first-admin",
            "--role",
            "admin",
            "--expires",
            "1d",
        ],
        &[("FLOW_DATABASE_URL", &db_url)],
    )
    .await;
    assert_eq!(boot.code, 0, "{}{}", boot.stdout, boot.stderr);
    let secret = last_line(&boot.stdout);
    assert!(
        secret.starts_with("flow_"),
        "the secret is the last line: {}",
        boot.stdout
    );

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let router = app.router.clone();
    tokio::spawn(async move { axum::serve(listener, router).await });

    let anonymous = flow(&["token", "list"], &[("FLOW_URL", &url)]).await;
    assert_ne!(anonymous.code, 0);
    assert!(
        anonymous.stderr.contains("401")
            || anonymous.stderr.to_lowercase().contains("unauthorized"),
        "{}",
        anonymous.stderr
    );

    let list = flow(
        &["token", "list"],
        &[("FLOW_URL", &url), ("FLOW_TOKEN", &secret)],
    )
    .await;
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert!(list.stdout.contains("first-admin"), "{}", list.stdout);
    assert!(!list.stdout.contains(&secret));

    let ci = flow(
        &["token", "create", "--name", "ci", "--role", "viewer"],
        &[("FLOW_URL", &url), ("FLOW_TOKEN", &secret)],
    )
    .await;
    assert_eq!(ci.code, 0, "{}", ci.stderr);
    let ci_secret = last_line(&ci.stdout);
    assert!(ci_secret.starts_with("flow_") && ci_secret != secret);
    let racks = flow(
        &["rack", "list"],
        &[("FLOW_URL", &url), ("FLOW_TOKEN", &ci_secret)],
    )
    .await;
    assert_eq!(racks.code, 0, "{}", racks.stderr);

    let json = flow(
        &["token", "list", "-o", "json"],
        &[("FLOW_URL", &url), ("FLOW_TOKEN", &secret)],
    )
    .await;
    let body: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let ci_id = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ci")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let revoke = flow(
        &["token", "revoke", &ci_id],
        &[("FLOW_URL", &url), ("FLOW_TOKEN", &secret)],
    )
    .await;
    assert_eq!(revoke.code, 0, "{}", revoke.stderr);
    let refused = flow(
        &["rack", "list"],
        &[("FLOW_URL", &url), ("FLOW_TOKEN", &ci_secret)],
    )
    .await;
    assert_ne!(refused.code, 0);
    let audit = flow(
        &["token", "list"],
        &[("FLOW_URL", &url), ("FLOW_TOKEN", &secret)],
    )
    .await;
    assert!(
        audit.stdout.contains("local:") && !audit.stdout.contains("local:unknown"),
        "created_by of the bootstrap token names the account: {}",
        audit.stdout
    );
}

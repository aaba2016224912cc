//! `flow rollout watch`: follows a rollout over `GET /v1/rollouts/{id}/events` (SSE), one
//! progress bar per wave; without a terminal, one line per change.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use reqwest::Method;
use serde_json::Value;

use super::client::{CliError, Client};
use super::output::cell;
use super::watch::SseParser;

const ENDED: [&str; 4] = ["succeeded", "failed", "halted", "aborted"];

fn ended(rollout: &Value) -> bool {
    rollout["status"]
        .as_str()
        .is_some_and(|s| ENDED.contains(&s))
}

/// How many times in a row the stream may fail before the watcher gives up.
const MAX_FAILURES: u32 = 5;

/// Follows the rollout until it ends; answers its last document.
pub async fn watch(client: &Client, id: &str) -> Result<Value, CliError> {
    let mut view = View::new();
    let mut failures = 0;
    loop {
        let error = match stream(client, id, &mut view).await {
            Ok(Some(done)) => return Ok(view.finish(done)),
            Ok(None) => None,
            Err(e @ CliError::Api { .. }) => return Err(e),
            Err(e) => Some(e),
        };
        // The stream closed before the end: ask the rollout itself.
        let error = match client.get(&format!("/v1/rollouts/{id}"), &[]).await {
            Ok(reply) if ended(&reply.body) => {
                view.update(&reply.body);
                return Ok(view.finish(reply.body));
            }
            Ok(_) => error,
            Err(e @ CliError::Api { .. }) => return Err(e),
            Err(e) => Some(e),
        };
        if let Some(error) = error {
            failures += 1;
            if failures >= MAX_FAILURES {
                return Err(error);
            }
            tokio::time::sleep(Duration::from_millis(500 * u64::from(failures))).await;
        }
    }
}

async fn stream(client: &Client, id: &str, view: &mut View) -> Result<Option<Value>, CliError> {
    let request = client
        .request(Method::GET, &format!("/v1/rollouts/{id}/events"))
        .header("accept", "text/event-stream");
    let mut response = client.open_stream(request).await?;
    let mut parser = SseParser::default();
    while let Some(chunk) = response.chunk().await? {
        for (event, data) in parser.push(&chunk) {
            match event.as_str() {
                "rollout" => {
                    let body: Value = serde_json::from_str(&data)
                        .map_err(|e| CliError::Transport(format!("bad rollout event: {e}")))?;
                    view.update(&body);
                    if ended(&body) {
                        return Ok(Some(body));
                    }
                }
                "error" => return Err(CliError::Transport(format!("rollout stream: {data}"))),
                _ => {}
            }
        }
    }
    Ok(None)
}

/// The rollout on screen: a header and a bar per wave.
struct View {
    multi: Option<MultiProgress>,
    header: Option<ProgressBar>,
    waves: Vec<ProgressBar>,
    printed: HashMap<String, String>,
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

impl View {
    fn new() -> Self {
        let multi = std::io::stderr()
            .is_terminal()
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        let header = multi.as_ref().map(|m| {
            let bar = m.add(ProgressBar::new(0));
            bar.set_style(style("{msg} ({elapsed})"));
            bar.set_message("connecting");
            bar
        });
        Self {
            multi,
            header,
            waves: Vec::new(),
            printed: HashMap::new(),
        }
    }

    fn update(&mut self, r: &Value) {
        let c = &r["counts"];
        let header = format!(
            "rollout {} ({}): {} — {} | {}/{} succeeded, {} failed, {} skipped",
            cell(&r["name"]),
            cell(&r["operation"]),
            cell(&r["status"]),
            cell(&r["message"]),
            cell(&c["succeeded"]),
            cell(&c["total"]),
            cell(&c["failed"]),
            cell(&c["skipped"]),
        );
        match &self.header {
            Some(bar) => bar.set_message(header),
            None => self.plain("rollout", header),
        }
        for (i, wave) in r["waves"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .iter()
            .enumerate()
        {
            let c = &wave["counts"];
            let n = |k: &str| c[k].as_u64().unwrap_or(0);
            let done = n("succeeded") + n("failed") + n("skipped") + n("not_run");
            let label = format!(
                "  wave {}{}",
                i + 1,
                if wave["canary"] == true {
                    " (canary)"
                } else {
                    ""
                }
            );
            let status = format!(
                "{} — {} ok, {} failed, {} running",
                cell(&wave["status"]),
                n("succeeded"),
                n("failed"),
                n("running")
            );
            if let Some(multi) = &self.multi {
                while self.waves.len() <= i {
                    let bar = multi.add(ProgressBar::new(0));
                    bar.set_style(style("{prefix:18} [{bar:24}] {pos}/{len} {msg}"));
                    self.waves.push(bar);
                }
                let bar = &self.waves[i];
                bar.set_prefix(label);
                bar.set_length(n("total"));
                bar.set_position(done);
                bar.set_message(status);
            } else {
                self.plain(
                    &format!("wave {i}"),
                    format!("{label} {done}/{} {status}", n("total")),
                );
            }
        }
    }

    fn plain(&mut self, key: &str, line: String) {
        if self.printed.get(key) != Some(&line) {
            eprintln!("{}", line.trim_start());
            self.printed.insert(key.to_string(), line);
        }
    }

    fn finish(self, last: Value) -> Value {
        for bar in self.waves.iter().chain(&self.header) {
            bar.abandon();
        }
        last
    }
}

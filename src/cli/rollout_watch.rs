//! `flow rollout watch`: follows a rollout over `GET /v1/rollouts/{id}/events` (SSE), one
//! progress bar per wave; without a terminal, one line per change.

use std::collections::HashMap;
use std::io::IsTerminal;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

use super::client::{CliError, Client};
use super::follow::{Followed, Progress, follow};
use super::output::cell;

const ENDED: [&str; 4] = ["succeeded", "failed", "halted", "aborted"];

fn ended(rollout: &Value) -> bool {
    rollout["status"]
        .as_str()
        .is_some_and(|s| ENDED.contains(&s))
}

/// Follows the rollout until it ends; answers its last document.
pub async fn watch(client: &Client, id: &str) -> Result<Value, CliError> {
    let path = format!("/v1/rollouts/{id}");
    let what = Followed {
        path: &path,
        event: "rollout",
        ended,
    };
    let mut view = View::new();
    let last = follow(client, &what, &mut view).await;
    view.finish();
    Ok(last?.body)
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

    fn plain(&mut self, key: &str, line: String) {
        if self.printed.get(key) != Some(&line) {
            eprintln!("{}", line.trim_start());
            self.printed.insert(key.to_string(), line);
        }
    }

    fn finish(&self) {
        for bar in self.waves.iter().chain(&self.header) {
            bar.abandon();
        }
    }
}

impl Progress for View {
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
}

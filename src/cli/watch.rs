//! Following tasks to their end over `GET /v1/tasks/{id}/events` (SSE, through [`super::follow`]),
//! drawing stage and component progress.

use std::collections::HashMap;
use std::io::IsTerminal;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

use super::client::{CliError, Client};
use super::follow::{Followed, Last, Progress, follow};

/// A task that ended, as the API last sent it.
pub type Ended = Last;

/// Whether a task document says it succeeded.
pub fn succeeded(task: &Value) -> bool {
    task["status"] == "succeeded"
}

fn ended(task: &Value) -> bool {
    matches!(
        task["status"].as_str(),
        Some("succeeded" | "failed" | "cancelled")
    )
}

/// Follows every task at once (they run in parallel on the server) until all have ended.
pub async fn wait_all(client: &Client, ids: &[String]) -> Result<Vec<Ended>, CliError> {
    // Bars when a person watches; otherwise one plain line per change, which logs read better.
    let multi = std::io::stderr()
        .is_terminal()
        .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
    let views = ids.iter().map(|id| View::new(id, multi.clone()));
    let follows = ids.iter().zip(views).map(|(id, mut view)| async move {
        let path = format!("/v1/tasks/{id}");
        let what = Followed {
            path: &path,
            event: "task",
            ended,
        };
        let last = follow(client, &what, &mut view).await;
        view.finish();
        last
    });
    futures::future::join_all(follows)
        .await
        .into_iter()
        .collect()
}

/// One task on screen: a header, a bar per stage, a line per component step.
struct View {
    short: String,
    multi: Option<MultiProgress>,
    header: Option<ProgressBar>,
    lines: HashMap<String, ProgressBar>,
    last: Option<ProgressBar>,
    printed: HashMap<String, String>,
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

impl View {
    fn new(id: &str, multi: Option<MultiProgress>) -> Self {
        let header = multi.as_ref().map(|m| {
            let bar = m.add(ProgressBar::new(0));
            bar.set_style(style("{msg} ({elapsed})"));
            bar.set_message(format!("task {id}: connecting"));
            bar
        });
        Self {
            short: id.chars().take(8).collect(),
            last: header.clone(),
            multi,
            header,
            lines: HashMap::new(),
            printed: HashMap::new(),
        }
    }

    /// The bar of `key`, created below this task's last one on first use.
    fn line(&mut self, key: &str, template: &str, set: impl FnOnce(&ProgressBar)) {
        let Some(multi) = &self.multi else { return };
        let bar = self.lines.entry(key.to_string()).or_insert_with(|| {
            let bar = match &self.last {
                Some(last) => multi.insert_after(last, ProgressBar::new(0)),
                None => multi.add(ProgressBar::new(0)),
            };
            bar.set_style(style(template));
            self.last = Some(bar.clone());
            bar
        });
        set(bar);
    }

    /// Without a terminal: a line on stderr whenever what `key` shows changes.
    fn plain(&mut self, key: &str, line: String) {
        if self.printed.get(key) != Some(&line) {
            eprintln!(
                "[{}] {}",
                self.short,
                super::output::printable(line.trim_start(), false)
            );
            self.printed.insert(key.to_string(), line);
        }
    }

    fn finish(&self) {
        for bar in self.lines.values().chain(&self.header) {
            bar.abandon();
        }
    }
}

impl Progress for View {
    fn update(&mut self, task: &Value) {
        let (status, message) = (text(&task["status"]), text(&task["message"]));
        let mut header = format!(
            "task {} {}: {status}",
            text(&task["id"]),
            text(&task["operation"])
        );
        // The message often just repeats the status.
        if !message.is_empty() && message != status {
            header.push_str(&format!(" ({message})"));
        }
        match &self.header {
            Some(bar) => bar.set_message(header),
            None => self.plain("task", header),
        }
        for stage in task["stages"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let steps = stage["components"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let done = steps.iter().filter(|s| ended(s)).count();
            let key = format!("stage {}", text(&stage["number"]));
            let label = format!("  {key} {}", text(&stage["name"]));
            let status = text(&stage["status"]);
            self.line(&key, "{prefix} [{bar:24}] {pos}/{len} {msg}", |bar| {
                bar.set_prefix(label.clone());
                bar.set_length(steps.len() as u64);
                bar.set_position(done as u64);
                bar.set_message(status.clone());
            });
            if self.multi.is_none() {
                self.plain(&key, format!("{label} {done}/{} {status}", steps.len()));
            }
            for step in steps {
                let last_event = step["events"]
                    .as_array()
                    .and_then(|e| e.last())
                    .map(|e| text(&e["message"]))
                    .unwrap_or_default();
                let error = text(&step["error"]);
                let mut line = format!("    {} {}", text(&step["name"]), text(&step["status"]));
                let detail = if error.is_empty() { last_event } else { error };
                if !detail.is_empty() {
                    line.push_str(&format!(": {detail}"));
                }
                if let Some(n) = step["attempts"].as_u64().filter(|n| *n > 1) {
                    line.push_str(&format!(" (attempt {n})"));
                }
                let step_key = format!("{key}/{}", text(&step["component_id"]));
                self.line(&step_key, "{msg}", |bar| bar.set_message(line.clone()));
                if self.multi.is_none() {
                    self.plain(&step_key, line);
                }
            }
        }
    }
}

fn text(value: &Value) -> String {
    super::output::cell(value)
}

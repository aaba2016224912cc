//! Following tasks to their end over `GET /v1/tasks/{id}/events` (SSE), drawing stage and component progress.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use reqwest::Method;
use serde_json::Value;

use super::client::{CliError, Client};

/// A task that ended, as the API last sent it.
#[derive(Debug)]
pub struct Ended {
    pub body: Value,
    pub raw: String,
}

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
    let follows = ids
        .iter()
        .zip(views)
        .map(|(id, view)| follow(client, id, view));
    futures::future::join_all(follows)
        .await
        .into_iter()
        .collect()
}

/// How many times in a row the stream may fail before the watcher gives up.
const MAX_FAILURES: u32 = 5;

async fn follow(client: &Client, id: &str, mut view: View) -> Result<Ended, CliError> {
    let mut failures = 0;
    loop {
        let error = match stream(client, id, &mut view).await {
            Ok(Some(ended)) => return Ok(view.finish(ended)),
            Ok(None) => None,
            // The API answered (404, ...): retrying cannot help.
            Err(e @ CliError::Api { .. }) => return Err(e),
            Err(e) => Some(e),
        };
        // The stream closed before the end (its time limit, a restarted server): ask the task.
        let error = match client.get(&format!("/v1/tasks/{id}"), &[]).await {
            Ok(reply) if ended(&reply.body) => {
                view.update(&reply.body);
                let ended = Ended {
                    body: reply.body,
                    raw: reply.text,
                };
                return Ok(view.finish(ended));
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
            // Back off before reconnecting to a server that is restarting.
            tokio::time::sleep(Duration::from_millis(500 * u64::from(failures))).await;
        }
    }
}

/// One connection to the event stream: `Some` when the task ended on it.
async fn stream(client: &Client, id: &str, view: &mut View) -> Result<Option<Ended>, CliError> {
    let request = client
        .request(Method::GET, &format!("/v1/tasks/{id}/events"))
        .header("accept", "text/event-stream");
    let mut response = client.open_stream(request).await?;
    let mut parser = SseParser::default();
    while let Some(chunk) = response.chunk().await? {
        for (event, data) in parser.push(&chunk) {
            match event.as_str() {
                "task" => {
                    let body: Value = serde_json::from_str(&data)
                        .map_err(|e| CliError::Transport(format!("bad task event: {e}")))?;
                    view.update(&body);
                    if ended(&body) {
                        return Ok(Some(Ended { body, raw: data }));
                    }
                }
                "error" => return Err(CliError::Transport(format!("task stream: {data}"))),
                _ => {}
            }
        }
    }
    Ok(None)
}

/// Server-Sent Events framing: blocks separated by a blank line, `event:` and `data:` fields.
#[derive(Default)]
pub struct SseParser {
    buffer: Vec<u8>,
}

impl SseParser {
    /// Adds bytes; returns the complete events in them as `(event, data)`.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<(String, String)> {
        // JSON escapes carriage returns, so dropping them turns CRLF framing into LF framing.
        self.buffer.extend(bytes.iter().filter(|b| **b != b'\r'));
        let mut events = Vec::new();
        while let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
            let block: Vec<u8> = self.buffer.drain(..end + 2).collect();
            let block = String::from_utf8_lossy(&block);
            let (mut event, mut data) = ("message".to_string(), Vec::new());
            for line in block
                .lines()
                .filter(|l| !l.is_empty() && !l.starts_with(':'))
            {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "event" => event = value.to_string(),
                    "data" => data.push(value),
                    _ => {}
                }
            }
            if !data.is_empty() {
                events.push((event, data.join("\n")));
            }
        }
        events
    }
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

    fn finish(self, ended: Ended) -> Ended {
        for bar in self.lines.values().chain(&self.header) {
            bar.abandon();
        }
        ended
    }
}

fn text(value: &Value) -> String {
    super::output::cell(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_are_framed_across_chunks_and_comments_skipped() {
        let mut parser = SseParser::default();
        assert!(
            parser
                .push(b":keep-alive\n\nevent: task\r\ndata: {\"a\"")
                .is_empty()
        );
        let events = parser.push(b":1}\r\n\r\nevent: task\ndata: 2\n\n");
        assert_eq!(
            events,
            vec![
                ("task".to_string(), "{\"a\":1}".to_string()),
                ("task".to_string(), "2".to_string())
            ]
        );
    }
}

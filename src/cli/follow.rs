//! Following one resource to its end over its `…/events` SSE stream, for `flow task watch`,
//! `flow run --wait` and `flow rollout watch`: one reconnect loop whatever is followed.
//!
//! A stream may close before the end (its time limit, a restarting server); the follower then
//! reads the resource itself, and reconnects with a growing pause until it has ended or the
//! connection failed `MAX_FAILURES` times in a row. An answer from the API (404, …) ends the
//! follow at once: retrying cannot change it.

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;

use super::client::{CliError, Client};

/// How many times in a row the stream may fail before the follower gives up.
const MAX_FAILURES: u32 = 5;

/// What a follower draws as documents arrive.
pub trait Progress {
    fn update(&mut self, doc: &Value);
}

/// What is followed: the resource's path (its stream is `{path}/events`), the SSE event that
/// carries its document, and when a document is final.
pub struct Followed<'a> {
    pub path: &'a str,
    pub event: &'a str,
    pub ended: fn(&Value) -> bool,
}

/// The document that ended the follow, parsed and as the API sent it.
#[derive(Debug)]
pub struct Last {
    pub body: Value,
    pub raw: String,
}

/// Follows `what` until a final document arrives, drawing each one on `view`.
pub async fn follow(
    client: &Client,
    what: &Followed<'_>,
    view: &mut impl Progress,
) -> Result<Last, CliError> {
    let mut failures = 0;
    loop {
        let error = match stream(client, what, view).await {
            Ok(Some(last)) => return Ok(last),
            Ok(None) => None,
            Err(e @ CliError::Api { .. }) => return Err(e),
            Err(e) => Some(e),
        };
        // The stream closed before the end: ask the resource itself.
        let error = match client.get(what.path, &[]).await {
            Ok(reply) if (what.ended)(&reply.body) => {
                view.update(&reply.body);
                return Ok(Last {
                    body: reply.body,
                    raw: reply.text,
                });
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

/// One connection to the event stream: `Some` when the resource ended on it.
async fn stream(
    client: &Client,
    what: &Followed<'_>,
    view: &mut impl Progress,
) -> Result<Option<Last>, CliError> {
    let request = client
        .request(Method::GET, &format!("{}/events", what.path))
        .header("accept", "text/event-stream");
    let mut response = client.open_stream(request).await?;
    let mut parser = SseParser::default();
    while let Some(chunk) = response.chunk().await? {
        for (event, data) in parser.push(&chunk) {
            if event == what.event {
                let body: Value = serde_json::from_str(&data)
                    .map_err(|e| CliError::Transport(format!("bad {} event: {e}", what.event)))?;
                view.update(&body);
                if (what.ended)(&body) {
                    return Ok(Some(Last { body, raw: data }));
                }
            } else if event == "error" {
                return Err(CliError::Transport(format!(
                    "{} stream: {data}",
                    what.event
                )));
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

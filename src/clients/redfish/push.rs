//! Firmware images pushed to a BMC, streamed from disk rather than read whole into memory: a
//! bare body for `HttpPushUri`, or multipart/form-data with an `UpdateParameters` JSON part and
//! an `UpdateFile` part for `MultipartHttpPushUri`. A blocking thread reads the file into a
//! small bounded channel, which is the request body.

use std::io::Read;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::channel::mpsc;
use futures::{SinkExt, Stream};
use http_body::Frame;
use serde_json::Value;

/// The longest one image upload may take.
pub(super) const UPLOAD_TIMEOUT: Duration = Duration::from_secs(30 * 60);
const CHUNK: usize = 64 * 1024;
/// Chunks in flight between the reading thread and the connection.
const CHANNEL: usize = 4;

/// An image to push and how.
#[derive(Debug, Clone)]
pub enum Upload {
    /// `HttpPushUri`: the file is the body.
    Raw { file: PathBuf },
    /// `MultipartHttpPushUri`: `UpdateParameters` (JSON) then `UpdateFile`.
    Multipart { parameters: Value, file: PathBuf },
}

/// The request body: chunks as the reading thread sends them.
struct Streamed(Mutex<mpsc::Receiver<std::io::Result<Bytes>>>);

impl http_body::Body for Streamed {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let rx = self.0.get_mut().unwrap_or_else(|p| p.into_inner());
        Pin::new(rx)
            .poll_next(cx)
            .map(|item| item.map(|r| r.map(Frame::data)))
    }
}

/// Sends `prefix`, the file's bytes, then `suffix`; stops when the body is dropped.
fn stream(prefix: Bytes, file: PathBuf, suffix: Bytes) -> Streamed {
    let (mut tx, rx) = mpsc::channel(CHANNEL);
    tokio::task::spawn_blocking(move || {
        let mut send = |item| futures::executor::block_on(tx.send(item)).is_ok();
        if !prefix.is_empty() && !send(Ok(prefix)) {
            return;
        }
        let mut f = match std::fs::File::open(&file) {
            Ok(f) => f,
            Err(e) => {
                send(Err(e));
                return;
            }
        };
        let mut buf = vec![0u8; CHUNK];
        loop {
            match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if !send(Ok(Bytes::copy_from_slice(&buf[..n]))) {
                        return;
                    }
                }
                Err(e) => {
                    send(Err(e));
                    return;
                }
            }
        }
        if !suffix.is_empty() {
            send(Ok(suffix));
        }
    });
    Streamed(Mutex::new(rx))
}

impl Upload {
    /// The content type and a fresh body (one per attempt: a stream cannot be replayed).
    pub(super) fn body(&self) -> (String, reqwest::Body) {
        match self {
            Self::Raw { file } => (
                "application/octet-stream".into(),
                reqwest::Body::wrap(stream(Bytes::new(), file.clone(), Bytes::new())),
            ),
            Self::Multipart { parameters, file } => {
                let boundary = format!("flow-{}", uuid::Uuid::new_v4().simple());
                let name = file
                    .file_name()
                    .map(|n| n.to_string_lossy().replace('"', ""))
                    .unwrap_or_else(|| "image".into());
                let prefix = format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"UpdateParameters\"\r\n\
                     Content-Type: application/json\r\n\r\n{parameters}\r\n\
                     --{boundary}\r\nContent-Disposition: form-data; name=\"UpdateFile\"; \
                     filename=\"{name}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
                );
                let suffix = format!("\r\n--{boundary}--\r\n");
                (
                    format!("multipart/form-data; boundary={boundary}"),
                    reqwest::Body::wrap(stream(prefix.into(), file.clone(), suffix.into())),
                )
            }
        }
    }
}

/// The SHA-256 of a file, hex, read in chunks on a blocking thread.
pub async fn sha256_file(file: PathBuf) -> std::io::Result<String> {
    tokio::task::spawn_blocking(move || sha256_file_now(&file))
        .await
        .map_err(std::io::Error::other)?
}

/// The SHA-256 of a file, hex, read in chunks on this thread (catalog checks at start-up).
pub fn sha256_file_now(file: &std::path::Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(file)?;
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        ctx.update(&buf[..n]);
    }
    Ok(ctx
        .finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

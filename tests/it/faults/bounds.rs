//! Bounded streams and connections, by causing the floods against a `flow serve` child: a
//! thousand event streams from one identity (the 101st and later get `429` with `Retry-After`,
//! one shared watcher feeds the hundred that open, memory returns near idle once they close),
//! clients that send half a request line or nothing, and a connection cap that makes the next
//! client wait until a held connection closes.

use std::time::Duration;

use futures::future::join_all;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::support::{FlowProcess, Http, eventually, free_port};
use crate::observability::value;
use crate::support::fixtures::gb200_rack;
use crate::support::ops::temporal_address;
use crate::support::{Backend, TestDb};

/// A response's head read off a raw connection, and the connection (to hold or read on).
struct Opened {
    head: String,
    conn: TcpStream,
}

impl Opened {
    fn status(&self) -> u16 {
        self.head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }

    /// The rest of the answer, until the server closes the connection.
    async fn rest(mut self) -> String {
        let mut body = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(90), self.conn.read_to_end(&mut body))
            .await
            .expect("the stream ends");
        format!("{}{}", self.head, String::from_utf8_lossy(&body))
    }
}

/// Sends `GET path` on a new connection and reads the answer's head.
async fn get(port: u16, path: &str) -> Opened {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n"
    );
    conn.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    tokio::time::timeout(Duration::from_secs(15), async {
        while !head.ends_with(b"\r\n\r\n") {
            if conn.read(&mut byte).await.unwrap() == 0 {
                break;
            }
            head.push(byte[0]);
        }
    })
    .await
    .expect("an answer's head");
    Opened {
        head: String::from_utf8_lossy(&head).into_owned(),
        conn,
    }
}

/// The resident set of a process, from /proc.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

async fn metric(http: &Http, name: &str) -> f64 {
    let text = http
        .client()
        .get(http.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    value(&text, name, &[])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_flood_from_one_identity_gets_429_past_its_share_and_memory_returns_near_idle() {
    tokio::time::timeout(Duration::from_secs(300), async {
        let db = TestDb::new(Backend::Sqlite).await;
        let port = free_port();
        let queue = format!("fault-{}", uuid::Uuid::new_v4().simple());
        let vars = vec![
            ("FLOW_DATABASE_URL", db.url.clone()),
            ("FLOW_TEMPORAL_ADDRESS", temporal_address()),
            ("FLOW_TEMPORAL_TASK_QUEUE", queue),
            ("FLOW_LISTEN", format!("127.0.0.1:{port}")),
            // The task outlives the flood, so no stream ends (and frees its slot) during it.
            ("FLOW_SIM_SLOW_SERIALS", "SN-0001-compute-00".to_string()),
            ("FLOW_SIM_SLOW_MS", "20000".to_string()),
        ];
        let api = FlowProcess::spawn(&["serve"], &vars);
        let http = Http::new(port);
        http.wait_up(&api).await;
        let created = http
            .call("POST", "/v1/expected-racks", Some(&gb200_rack(1, 1)))
            .await;
        assert_eq!(created.status, 201, "{created:?}");
        let accepted = eventually(Duration::from_secs(30), "the operation is accepted", || async {
            let a = http
                .call(
                    "POST",
                    "/v1/operations/power-on",
                    Some(&json!({"target_spec": {"racks": [{"name": "rack-0001"}]}})),
                )
                .await;
            (a.status == 202).then_some(a)
        })
        .await;
        let task = accepted.body["task_ids"][0].as_str().unwrap().to_string();
        let path = format!("/v1/tasks/{task}/events");
        // Warm up what a first stream starts (the watcher), then take the idle figure.
        drop(get(port, &path).await);
        eventually(Duration::from_secs(10), "the warm-up stream closes", || async {
            (metric(&http, "flow_event_streams_open").await == 0.0).then_some(())
        })
        .await;
        let idle = rss_kib(api.pid());
        let queries_before = metric(&http, "flow_event_watch_queries_total").await;
        let watched = Instant::now();

        // FLOW_AUTH=none: every caller is `anonymous`, one identity with a tenth of 1000.
        let mut open = Vec::new();
        let mut refused = Vec::new();
        for _ in 0..1000 {
            let answer = get(port, &path).await;
            if answer.status() == 200 {
                open.push(answer);
            } else {
                refused.push(answer);
            }
        }
        assert_eq!(open.len(), 100, "one identity holds a tenth of FLOW_MAX_EVENT_STREAMS");
        assert_eq!(refused.len(), 900);
        let first = refused.remove(0);
        assert_eq!(first.status(), 429, "{}", first.head);
        let head = first.head.to_ascii_lowercase();
        assert!(head.contains("retry-after: 10"), "{head}");
        assert!(head.contains("application/problem+json"), "{head}");
        assert!(first.rest().await.contains("too_many_streams"));
        assert!(refused.iter().all(|r| r.status() == 429));
        drop(refused);
        assert_eq!(metric(&http, "flow_event_streams_open").await, 100.0);
        let peak = rss_kib(api.pid());

        // Every stream follows the task to its end, fed by the one watcher.
        let ends = join_all(open.into_iter().map(Opened::rest)).await;
        for end in &ends {
            assert!(end.contains("event: task"), "{end}");
            assert!(end.contains("\"status\":\"succeeded\""), "{end}");
        }
        let queries = metric(&http, "flow_event_watch_queries_total").await - queries_before;
        // Polls that could have run in the window (one per 500 ms), with slack; a poll per
        // stream would be a hundred times as many.
        let polls = watched.elapsed().as_secs_f64() * 2.0 + 5.0;
        println!(
            "watcher statements while 100 streams followed the task: {queries} in {:?} (at most {polls:.0} polls)",
            watched.elapsed()
        );
        assert!(
            queries <= polls * 1.5,
            "one statement per poll serves every stream, not one per stream: {queries}"
        );
        eventually(Duration::from_secs(10), "every stream slot is free", || async {
            (metric(&http, "flow_event_streams_open").await == 0.0).then_some(())
        })
        .await;
        let after = rss_kib(api.pid());
        println!("RSS of flow serve: idle {idle} KiB, 100 streams + 900 refused {peak} KiB, after {after} KiB");
        assert!(
            after < idle + 64 * 1024,
            "memory after the flood: {after} KiB against {idle} KiB idle"
        );
        // The freed slots are usable again.
        assert_eq!(get(port, &path).await.status(), 200);
    })
    .await
    .expect("bounded in time");
}

/// `flow serve` without Temporal, with the given bounds.
async fn bounded_server(header_secs: u64, max_connections: u64) -> (FlowProcess, u16, TestDb) {
    let db = TestDb::new(Backend::Sqlite).await;
    let port = free_port();
    let vars = vec![
        ("FLOW_DATABASE_URL", db.url.clone()),
        ("FLOW_TEMPORAL_ADDRESS", "none".to_string()),
        ("FLOW_LISTEN", format!("127.0.0.1:{port}")),
        ("FLOW_HEADER_READ_TIMEOUT_SECS", header_secs.to_string()),
        ("FLOW_MAX_CONNECTIONS", max_connections.to_string()),
    ];
    let api = FlowProcess::spawn(&["serve", "--no-worker"], &vars);
    Http::new(port).wait_up(&api).await;
    (api, port, db)
}

/// How long until the server closes `conn` (reads nothing, or an error, at the end).
async fn closed_after(mut conn: TcpStream, limit: Duration) -> Duration {
    let started = Instant::now();
    let mut buf = [0_u8; 512];
    tokio::time::timeout(limit, async {
        loop {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .expect("the server closes the connection");
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_sends_half_a_request_or_nothing_is_closed_after_the_header_timeout() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let (_api, port, _db) = bounded_server(2, 10_000).await;
        let mut half = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        half.write_all(b"GET /healthz HT").await.unwrap();
        let silent = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let (half, silent) = tokio::join!(
            closed_after(half, Duration::from_secs(10)),
            closed_after(silent, Duration::from_secs(10))
        );
        println!("closed after: half a request line {half:?}, nothing sent {silent:?}");
        for took in [half, silent] {
            assert!(
                took >= Duration::from_millis(1500),
                "closed early: {took:?}"
            );
        }
        // A client that sends its request in time is served as ever.
        let answer = get(port, "/healthz").await;
        assert_eq!(answer.status(), 200, "{}", answer.head);
    })
    .await
    .expect("bounded in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_connection_cap_the_next_client_waits_until_a_held_connection_closes() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let (_api, port, _db) = bounded_server(60, 20).await;
        // Twenty kept-alive connections, each answered once: all twenty slots are held.
        let mut held = Vec::new();
        for _ in 0..20 {
            let mut conn = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            conn.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                .await
                .unwrap();
            let mut buf = [0_u8; 1024];
            let n = tokio::time::timeout(Duration::from_secs(10), conn.read(&mut buf))
                .await
                .expect("answered")
                .unwrap();
            assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
            held.push(conn);
        }
        // The 21st gets through TCP (the listen backlog) but no answer while all are held.
        let mut next = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        next.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0_u8; 1024];
        let early = tokio::time::timeout(Duration::from_secs(2), next.read(&mut buf)).await;
        assert!(early.is_err(), "the 21st connection was served: {early:?}");
        drop(held.pop());
        let n = tokio::time::timeout(Duration::from_secs(10), next.read(&mut buf))
            .await
            .expect("served once a slot is free")
            .unwrap();
        assert!(
            String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"),
            "{:?}",
            String::from_utf8_lossy(&buf[..n])
        );
    })
    .await
    .expect("bounded in time");
}

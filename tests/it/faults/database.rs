//! PostgreSQL cut off through a TCP proxy the test controls: reads, writes, shared lookups and
//! readiness answer 503 `database_unavailable` within the bound, then recover without restart;
//! `/metrics` keeps answering at once (a scrape reads no database).

use std::time::Duration;

use axum::http::Method;
use flow::app::App;
use flow::config::Config;
use flow::db::{self, DbOptions};
use futures::future::join_all;
use sea_orm::ConnectionTrait;
use tokio::time::Instant;

use super::support::{Proxy, eventually};
use crate::support::fixtures::readme_rack;
use crate::support::{Backend, TestApp, TestDb, test_database_url};

/// The bound a caller waits during an outage: the pool's acquire timeout plus slack.
const BOUND: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_cut_off_answers_503_within_the_bound_and_recovers_without_restart() {
    tokio::time::timeout(Duration::from_secs(120), async {
        let owner = TestDb::new(Backend::Postgres).await;
        let cleanup = owner.cleanup();
        let schema: String = owner
            .db
            .query_one_raw(sea_orm::Statement::from_string(
                owner.db.get_database_backend(),
                "SELECT current_schema() AS s".to_string(),
            ))
            .await
            .unwrap()
            .unwrap()
            .try_get("", "s")
            .unwrap();
        let url = test_database_url();
        let upstream = url
            .split('@')
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or("127.0.0.1:5432")
            .to_string();
        let proxy = Proxy::start(&upstream).await;
        let mut options =
            DbOptions::new(url.replace(&upstream, &format!("127.0.0.1:{}", proxy.port)));
        options.schema = Some(schema);
        options.max_connections = 4;
        options.acquire_timeout = Duration::from_secs(2);
        let conn = db::connect(&options)
            .await
            .expect("connect through the proxy");
        let app = TestApp {
            router: flow::service::router(
                App::builder(conn, Config::default()).build().into_state(),
            ),
            db: owner,
        };
        let rack = app.create_rack(&readme_rack()).await;
        let serial = rack["components"][0]["serial_number"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(app.get("/v1/racks").await.status, 200);
        // A lookup before the cut: the lookup batcher keeps its connection for a while, and
        // the cut must reach lookups through it as promptly as through the pool.
        let path = format!("/v1/components/by-serial?manufacturer=WiWynn&serial_number={serial}");
        assert_eq!(app.get(&path).await.status, 200);
        // The first scrape starts the metrics sampler (and waits for its first round).
        assert_eq!(app.get("/metrics").await.status, 200);

        proxy.cut();
        let started = Instant::now();
        let list = app.get("/v1/racks").await;
        list.assert_problem(503, "database_unavailable");
        assert!(list.header("retry-after").is_some());
        assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());

        let started = Instant::now();
        let mut other = readme_rack();
        other["name"] = "g11".into();
        other["serial_number"] = "other".into();
        other["components"] = serde_json::json!([]);
        app.post("/v1/expected-racks", &other)
            .await
            .assert_problem(503, "database_unavailable");
        assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());

        // Lookups share batch statements: every waiter hears promptly.
        let started = Instant::now();
        let lookups = join_all((0..20).map(|_| app.call(Method::GET, &path, None, &[]))).await;
        for r in &lookups {
            r.assert_problem(503, "database_unavailable");
        }
        assert!(
            started.elapsed() < BOUND * 2,
            "took {:?}",
            started.elapsed()
        );

        let started = Instant::now();
        let ready = app.get("/readyz").await;
        assert_eq!(ready.status, 503, "{}", ready.text);
        assert_eq!(ready.body["checks"]["database"]["status"], "down");
        assert!(
            started.elapsed() < Duration::from_millis(2100),
            "took {:?}",
            started.elapsed()
        );

        // A flood of scrapes costs the database nothing: each answers at once, though any
        // database access would wait the pool's 2 s acquire timeout and fail.
        let started = Instant::now();
        for _ in 0..50 {
            let scrape = app.get("/metrics").await;
            assert_eq!(scrape.status, 200, "{}", scrape.text);
            assert!(
                scrape
                    .text
                    .contains("flow_tasks_active{status=\"running\"}")
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "50 scrapes took {:?}",
            started.elapsed()
        );

        proxy.restore();
        eventually(Duration::from_secs(20), "the API recovers", || async {
            (app.get("/v1/racks").await.status == 200).then_some(())
        })
        .await;
        assert_eq!(app.get(&path).await.status, 200);
        let created = app.post("/v1/expected-racks", &other).await;
        assert_eq!(created.status, 201, "{}", created.text);
        assert_eq!(app.count_rows("racks").await, 2);
        cleanup.run().await;
    })
    .await
    .expect("bounded in time");
}

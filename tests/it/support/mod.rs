//! Test harness: a `TestApp` on a fresh PostgreSQL schema or SQLite file, driven through HTTP.

pub mod fixtures;
pub mod ops;
pub mod psm;
pub mod redfish;

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use flow::app::App;
use flow::config::Config;
use flow::db::{self, DbOptions};
use http_body_util::BodyExt;
use sea_orm::{ConnectionTrait, DatabaseConnection};
use serde_json::Value;
use tokio::time::Instant;
use tower::ServiceExt;
use uuid::Uuid;

/// Which database a test runs on. Every API test runs on both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Postgres,
    Sqlite,
}

/// The management network tests confine BMC and PMC logins to: loopback (every in-test BMC)
/// and 10.0.0.0/8 (the PMC addresses of the fake PSM's shelves, which nothing dials).
pub fn bmc_networks() -> flow::domain::ManagementNetworks {
    flow::domain::ManagementNetworks::parse(&["127.0.0.0/8", "10.0.0.0/8"]).unwrap()
}

/// Polls `check` until it returns `Some`, failing the test with `what` after `limit`.
pub async fn eventually<T, F, Fut>(limit: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits (at most 5 s) until every open connection of the pool is idle: what the lookup
/// batcher keeps while lookups keep coming goes back once they stop.
pub async fn pool_settles(db: &DatabaseConnection) {
    eventually(
        Duration::from_secs(5),
        "every pool connection idle",
        || async {
            let pool = flow::db::pool_stats(db);
            (pool.open == pool.idle).then_some(())
        },
    )
    .await;
}

/// The PostgreSQL database tests create their schemas in (the test command creates it).
pub fn test_database_url() -> String {
    std::env::var("TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/flow_test".into())
}

/// Removes a test's SQLite file when the test ends, pass or fail. PostgreSQL schemas are dropped
/// by [`TestDb::cleanup`] (dropping needs async I/O), and by the sweep of stale schemas.
enum Cleanup {
    Schema,
    File(PathBuf),
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Cleanup::File(path) = self {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
        }
    }
}

/// Drops schemas left by test runs that ended more than an hour ago (a panicking test skips its
/// own cleanup). Schema names carry their creation time, so concurrent runs are never touched.
async fn sweep_stale_schemas(admin: &DatabaseConnection) {
    static SWEPT: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    SWEPT
        .get_or_init(|| async {
            let cutoff = unix_now().saturating_sub(3600);
            let rows = admin
                .query_all_raw(sea_orm::Statement::from_string(
                    admin.get_database_backend(),
                    "SELECT nspname FROM pg_namespace WHERE nspname LIKE 't\\_%'".to_string(),
                ))
                .await
                .unwrap_or_default();
            for row in rows {
                let Ok(name) = row.try_get::<String>("", "nspname") else {
                    continue;
                };
                let created = name.split('_').nth(1).and_then(|t| t.parse::<u64>().ok());
                if created.is_some_and(|t| t < cutoff) {
                    let _ = admin
                        .execute_unprepared(&format!("DROP SCHEMA IF EXISTS {name} CASCADE"))
                        .await;
                }
            }
        })
        .await;
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A migrated database of the given backend, private to one test.
pub struct TestDb {
    pub db: DatabaseConnection,
    /// The URL another process can open the same database with (SQLite only: PostgreSQL tests
    /// live in a schema that only this pool's search path selects).
    pub url: String,
    schema: Option<String>,
    _cleanup: Cleanup,
}

impl TestDb {
    pub async fn new(backend: Backend) -> Self {
        let tag = Uuid::new_v4().simple().to_string();
        let (options, cleanup) = match backend {
            Backend::Postgres => {
                let url = test_database_url();
                let schema = format!("t_{}_{tag}", unix_now());
                let admin = db::connect(&DbOptions::new(&url))
                    .await
                    .unwrap_or_else(|e| {
                        panic!(
                            "PostgreSQL at {url} is required (run the README's test command): {e}"
                        )
                    });
                sweep_stale_schemas(&admin).await;
                admin
                    .execute_unprepared(&format!("CREATE SCHEMA {schema}"))
                    .await
                    .expect("create schema");
                admin.close().await.ok();
                let mut options = DbOptions::new(&url);
                options.schema = Some(schema.clone());
                options.max_connections = 4;
                (options, Cleanup::Schema)
            }
            Backend::Sqlite => {
                let path = std::env::temp_dir().join(format!("flow-test-{tag}.db"));
                let options = DbOptions::new(format!("sqlite://{}?mode=rwc", path.display()));
                (options, Cleanup::File(path))
            }
        };
        let db = db::connect(&options).await.expect("connect test database");
        db::migrate(&db).await.expect("migrate test database");
        Self {
            db,
            url: options.url,
            schema: options.schema,
            _cleanup: cleanup,
        }
    }
}

impl TestDb {
    /// A second, independent pool on the same database, as another Flow process would open.
    pub async fn connect_again(&self) -> DatabaseConnection {
        let mut options = DbOptions::new(&self.url);
        options.schema = self.schema.clone();
        options.max_connections = 4;
        db::connect(&options).await.expect("second pool")
    }
}

/// Closes the pool and drops the test's PostgreSQL schema.
pub struct CleanupHandle {
    db: DatabaseConnection,
    schema: Option<String>,
}

impl CleanupHandle {
    pub async fn run(self) {
        let _ = self.db.close().await;
        if let Some(schema) = self.schema
            && let Ok(admin) = db::connect(&DbOptions::new(test_database_url())).await
        {
            let _ = admin
                .execute_unprepared(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                .await;
            let _ = admin.close().await;
        }
    }
}

impl TestDb {
    /// What to run once the test is done with the database.
    pub fn cleanup(&self) -> CleanupHandle {
        CleanupHandle {
            db: self.db.clone(),
            schema: self.schema.clone(),
        }
    }
}

/// The whole HTTP application over a private database.
pub struct TestApp {
    pub router: Router,
    pub db: TestDb,
}

/// A response with its body parsed as JSON (`Value::Null` when empty or not JSON).
#[derive(Debug)]
pub struct TestResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
}

impl TestResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts a problem+json response with this status and code; returns its body.
    pub fn assert_problem(&self, status: u16, code: &str) -> &Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.text
        );
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json"),
            "body: {}",
            self.text
        );
        assert_eq!(self.body["code"], code, "body: {}", self.text);
        assert_eq!(self.body["status"], status);
        &self.body
    }

    /// Asserts a 400 `invalid_input` whose `errors` name `field`; `request` is what was sent,
    /// for the message.
    pub fn assert_invalid_field(&self, field: &str, request: &Value) {
        self.assert_problem(400, "invalid_input");
        let fields = self.error_fields();
        assert!(
            fields.iter().any(|f| f == field),
            "{request}: expected field {field}, got {fields:?} ({})",
            self.text
        );
    }

    /// Field names listed in a problem's `errors`.
    pub fn error_fields(&self) -> Vec<String> {
        self.body["errors"]
            .as_array()
            .map(|errors| {
                errors
                    .iter()
                    .filter_map(|e| e["field"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl TestApp {
    pub async fn new(backend: Backend) -> Self {
        Self::with_config(backend, Config::default()).await
    }

    pub async fn with_config(backend: Backend, config: Config) -> Self {
        let db = TestDb::new(backend).await;
        let router =
            flow::service::router(App::builder(db.db.clone(), config).build().into_state());
        Self { router, db }
    }

    pub async fn send(&self, request: Request<Body>) -> TestResponse {
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("router never fails");
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("read body")
            .to_bytes();
        let text = String::from_utf8_lossy(&bytes).to_string();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        TestResponse {
            status,
            headers,
            body,
            text,
        }
    }

    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> TestResponse {
        let mut builder = Request::builder().method(method).uri(path);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let body = match body {
            Some(json) => {
                builder = builder.header("content-type", "application/json");
                Body::from(json.to_string())
            }
            None => Body::empty(),
        };
        self.send(builder.body(body).expect("request")).await
    }

    pub async fn get(&self, path: &str) -> TestResponse {
        self.call(Method::GET, path, None, &[]).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> TestResponse {
        self.call(Method::POST, path, Some(body), &[]).await
    }

    pub async fn post_empty(&self, path: &str) -> TestResponse {
        self.call(Method::POST, path, None, &[]).await
    }

    pub async fn patch(&self, path: &str, body: &Value) -> TestResponse {
        self.call(Method::PATCH, path, Some(body), &[]).await
    }

    /// A PATCH that sends `If-Match: if_match`.
    pub async fn patch_if_match(&self, path: &str, body: &Value, if_match: &str) -> TestResponse {
        self.call(Method::PATCH, path, Some(body), &[("if-match", if_match)])
            .await
    }

    pub async fn delete(&self, path: &str) -> TestResponse {
        self.call(Method::DELETE, path, None, &[]).await
    }

    /// Posts an expected rack and returns the created rack's body, asserting a 201.
    pub async fn create_rack(&self, body: &Value) -> Value {
        let r = self.post("/v1/expected-racks", body).await;
        assert_eq!(r.status, StatusCode::CREATED, "create rack: {}", r.text);
        r.body
    }

    /// Number of rows in a table, read straight from the database.
    pub async fn count_rows(&self, table: &str) -> i64 {
        let row = self
            .db
            .db
            .query_one_raw(sea_orm::Statement::from_string(
                self.db.db.get_database_backend(),
                format!("SELECT COUNT(*) AS n FROM {table}"),
            ))
            .await
            .expect("count query")
            .expect("one row");
        row.try_get::<i64>("", "n").expect("count column")
    }
}

/// Runs each listed test body once on PostgreSQL and once on SQLite.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    let app = $crate::support::TestApp::new($crate::support::Backend::Postgres).await;
                    let cleanup = app.db.cleanup();
                    super::$name(app).await;
                    cleanup.run().await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name($crate::support::TestApp::new($crate::support::Backend::Sqlite).await).await
                }
            )*
        }
    };
}

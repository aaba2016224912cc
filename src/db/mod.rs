//! Database access: connecting to PostgreSQL or SQLite, running migrations, mapping driver errors.

pub mod entities;
pub mod kept;
pub mod lease;
pub mod page;

use std::time::Duration;

use migration::{Migrator, MigratorTrait};
use sea_orm::{
    ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DatabaseTransaction, DbErr,
    SqlErr, SqliteTransactionMode, TransactionOptions, TransactionTrait,
};

use crate::error::{Error, Result};

/// Pool and timeout settings for [`connect`].
#[derive(Debug, Clone)]
pub struct DbOptions {
    pub url: String,
    /// Set a PostgreSQL `search_path` (tests isolate themselves in a schema).
    pub schema: Option<String>,
    pub max_connections: u32,
    pub connect_timeout: Duration,
    /// How long a request waits for a pooled connection before it answers 503: short, so a
    /// database outage is reported promptly instead of hanging every request.
    pub acquire_timeout: Duration,
}

impl DbOptions {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            schema: None,
            max_connections: 16,
            connect_timeout: Duration::from_secs(10),
            acquire_timeout: Duration::from_secs(10),
        }
    }
}

/// Opens a connection pool to PostgreSQL or SQLite, failing with `Unavailable` when it cannot.
pub async fn connect(options: &DbOptions) -> Result<DatabaseConnection> {
    let sqlite = options.url.starts_with("sqlite:");
    let mut opts = ConnectOptions::new(options.url.clone());
    opts.max_connections(if sqlite {
        options.max_connections.min(8)
    } else {
        options.max_connections
    })
    .min_connections(if sqlite { 1 } else { 0 })
    .connect_timeout(options.connect_timeout)
    .acquire_timeout(options.acquire_timeout)
    // A broken connection fails its statement and is replaced; pinging before every use
    // doubled the round trips of a lookup.
    .test_before_acquire(false)
    .sqlx_logging(false);
    if let Some(schema) = &options.schema {
        opts.set_schema_search_path(schema.clone());
    }
    let db = Database::connect(opts)
        .await
        .map_err(|e| Error::Unavailable {
            service: "database",
            message: e.to_string(),
        })?;
    if sqlite {
        // WAL lets the API read while a writer commits; sqlx already turns foreign keys on and
        // sets a busy timeout on every pooled connection.
        db.execute_unprepared("PRAGMA journal_mode = WAL").await?;
    }
    Ok(db)
}

/// Applies every pending migration. On PostgreSQL under an advisory lock (one per schema):
/// replicas started together, or a rolling upgrade bringing a new migration, run them one
/// at a time — the others wait, then find nothing left to do — instead of racing to create
/// the same types and tables.
pub async fn migrate(db: &DatabaseConnection) -> Result<()> {
    if db.get_database_backend() != sea_orm::DbBackend::Postgres {
        Migrator::up(db, None).await?;
        return Ok(());
    }
    let lock_error = |e: sea_orm::sqlx::Error| Error::Unavailable {
        service: "database",
        message: format!("taking the migration lock: {e}"),
    };
    // The lock is a session's: taken on a connection of its own, held while the pool migrates.
    let mut session = db
        .get_postgres_connection_pool()
        .acquire()
        .await
        .map_err(lock_error)?
        .detach();
    sea_orm::sqlx::query(MIGRATION_LOCK)
        .execute(&mut session)
        .await
        .map_err(lock_error)?;
    let result = Migrator::up(db, None).await;
    // Ending the session releases the lock, whatever happened to the migrations.
    if let Err(e) = sea_orm::sqlx::Connection::close(session).await {
        tracing::warn!(error = %e, "closing the migration lock's session failed");
    }
    result?;
    Ok(())
}

/// Waits for the migration lock of the current schema (tests give each its own schema).
const MIGRATION_LOCK: &str =
    "SELECT pg_advisory_lock(hashtext(current_schema() || ':flow-migrations'))";

/// Cheap liveness probe used by `/readyz`.
pub async fn ping(db: &DatabaseConnection) -> Result<()> {
    db.ping().await.map_err(|e| Error::Unavailable {
        service: "database",
        message: e.to_string(),
    })
}

/// Begins a transaction that will write. On SQLite it takes the write lock at once (`BEGIN
/// IMMEDIATE`): a deferred transaction that reads first and writes later fails outright when
/// another connection wrote in between, instead of waiting its turn. PostgreSQL ignores the mode.
pub async fn begin_write(db: &DatabaseConnection) -> Result<DatabaseTransaction> {
    let options = TransactionOptions {
        sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
        ..Default::default()
    };
    Ok(db.begin_with_options(options).await?)
}

/// An error of a statement run straight on the `sqlx` pool (the hot paths that bypass SeaORM's
/// statement wrapper) as the database error every other statement reports.
pub fn sqlx_error(error: sea_orm::sqlx::Error) -> DbErr {
    DbErr::Query(sea_orm::RuntimeErr::SqlxError(std::sync::Arc::new(error)))
}

/// Whether a driver error means the database cannot be reached (pool wait timed out, connection
/// refused, reset or closed), as opposed to a bad statement: the API answers these with 503.
pub fn is_outage(err: &DbErr) -> bool {
    use sea_orm::{RuntimeErr, sqlx};
    match err {
        DbErr::ConnectionAcquire(_) | DbErr::Conn(_) => true,
        DbErr::Exec(RuntimeErr::SqlxError(e)) | DbErr::Query(RuntimeErr::SqlxError(e)) => matches!(
            e.as_ref(),
            sqlx::Error::Io(_)
                | sqlx::Error::PoolTimedOut
                | sqlx::Error::PoolClosed
                | sqlx::Error::Tls(_)
                | sqlx::Error::Protocol(_)
                | sqlx::Error::WorkerCrashed
        ),
        _ => false,
    }
}

/// Whether a driver error is a unique-key violation (a duplicate the caller should hear about as 409).
pub fn is_unique_violation(err: &DbErr) -> bool {
    matches!(err.sql_err(), Some(SqlErr::UniqueConstraintViolation(_)))
}

/// The pool's connections, for the metrics: open, idle, and the most it may open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    pub open: u32,
    pub idle: u32,
    pub max: u32,
}

/// Reads the pool's counters (no query is sent).
pub fn pool_stats(db: &DatabaseConnection) -> PoolStats {
    match db.get_database_backend() {
        sea_orm::DbBackend::Postgres => {
            let pool = db.get_postgres_connection_pool();
            PoolStats {
                open: pool.size(),
                idle: u32::try_from(pool.num_idle()).unwrap_or(u32::MAX),
                max: pool.options().get_max_connections(),
            }
        }
        sea_orm::DbBackend::Sqlite => {
            let pool = db.get_sqlite_connection_pool();
            PoolStats {
                open: pool.size(),
                idle: u32::try_from(pool.num_idle()).unwrap_or(u32::MAX),
                max: pool.options().get_max_connections(),
            }
        }
        _ => PoolStats::default(),
    }
}

//! The one migration set runs up, down and up again on both backends.

use migration::{Migrator, MigratorTrait};

use crate::support::{Backend, TestDb};

async fn round_trip(backend: Backend) {
    let test = TestDb::new(backend).await;
    let db = &test.db;
    assert!(
        Migrator::get_pending_migrations(db)
            .await
            .expect("pending")
            .is_empty()
    );
    Migrator::up(db, None)
        .await
        .expect("migrating twice is a no-op");
    Migrator::down(db, None).await.expect("down");
    assert_eq!(
        Migrator::get_pending_migrations(db)
            .await
            .expect("pending")
            .len(),
        Migrator::migrations().len()
    );
    Migrator::up(db, None).await.expect("up again");
    assert!(
        Migrator::get_pending_migrations(db)
            .await
            .expect("pending")
            .is_empty()
    );
    test.cleanup().run().await;
}

#[tokio::test]
async fn migrations_round_trip_on_postgres() {
    round_trip(Backend::Postgres).await;
}

#[tokio::test]
async fn migrations_round_trip_on_sqlite() {
    round_trip(Backend::Sqlite).await;
}

/// A fresh, empty PostgreSQL schema and two pools on it, as two replicas would open.
async fn two_replicas_on_a_fresh_schema() -> (
    sea_orm::DatabaseConnection,
    sea_orm::DatabaseConnection,
    String,
) {
    use flow::db::{self, DbOptions};
    use sea_orm::ConnectionTrait;
    let url = crate::support::test_database_url();
    let schema = format!(
        "t_{}_{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
        uuid::Uuid::new_v4().simple()
    );
    let admin = db::connect(&DbOptions::new(&url)).await.unwrap();
    admin
        .execute_unprepared(&format!("CREATE SCHEMA {schema}"))
        .await
        .unwrap();
    admin.close().await.ok();
    let open = || {
        let mut options = DbOptions::new(&url);
        options.schema = Some(schema.clone());
        options.max_connections = 4;
        async move { db::connect(&options).await.unwrap() }
    };
    (open().await, open().await, schema)
}

async fn drop_schema(schema: &str) {
    use sea_orm::ConnectionTrait;
    let admin = flow::db::connect(&flow::db::DbOptions::new(
        crate::support::test_database_url(),
    ))
    .await
    .unwrap();
    let _ = admin
        .execute_unprepared(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .await;
    admin.close().await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_migrating_one_fresh_postgresql_database_at_once_both_succeed() {
    tokio::time::timeout(std::time::Duration::from_secs(180), async {
        // Each round races on a schema of its own; before the lock, one side failed every time
        // with a duplicate pg_type entry.
        for round in 0..3 {
            let (a, b, schema) = two_replicas_on_a_fresh_schema().await;
            let (ra, rb) = tokio::join!(flow::db::migrate(&a), flow::db::migrate(&b));
            ra.unwrap_or_else(|e| panic!("round {round}, replica a: {e}"));
            rb.unwrap_or_else(|e| panic!("round {round}, replica b: {e}"));
            assert!(
                Migrator::get_pending_migrations(&a)
                    .await
                    .unwrap()
                    .is_empty()
            );
            a.close().await.ok();
            b.close().await.ok();
            drop_schema(&schema).await;
        }
        // A rolling upgrade: the database has every migration but the newest, and two
        // replicas of the new version start at once.
        let (a, b, schema) = two_replicas_on_a_fresh_schema().await;
        let all = u32::try_from(Migrator::migrations().len()).unwrap();
        Migrator::up(&a, Some(all - 1)).await.unwrap();
        assert_eq!(Migrator::get_pending_migrations(&a).await.unwrap().len(), 1);
        let (ra, rb) = tokio::join!(flow::db::migrate(&a), flow::db::migrate(&b));
        ra.unwrap();
        rb.unwrap();
        assert!(
            Migrator::get_pending_migrations(&b)
                .await
                .unwrap()
                .is_empty()
        );
        a.close().await.ok();
        b.close().await.ok();
        drop_schema(&schema).await;
    })
    .await
    .expect("bounded in time");
}

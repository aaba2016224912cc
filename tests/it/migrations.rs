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

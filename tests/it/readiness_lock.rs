//! Issue 27: the readiness check and the hold it races with. A submission checks readiness
//! before it writes anything, then again under the rack's lock in the transaction that writes
//! the task; hold and health-report writers take the same lock. The window between the two
//! checks is opened on purpose here: another connection holds the rack's lock, the submission
//! waits on it (seen in `pg_stat_activity`), a hold is written in that window, and the
//! submission — which passed its first check — is refused `409 held` and creates nothing.
//! PostgreSQL only: there the lock is a row lock another connection can be seen waiting on
//! (on SQLite every write transaction already excludes every other).

use std::time::Duration;

use sea_orm::{ConnectionTrait, DatabaseConnection, Statement, TransactionTrait};
use serde_json::json;

use crate::support::Backend;
use crate::support::fixtures::gb200_rack;
use crate::support::ops::{Ops, OpsBuilder};

/// Waits (at most 30 s) until some statement of this database is waiting for a row lock on
/// `racks`: the submission (or hold) has passed its reads and queues behind the test's lock.
async fn a_writer_waits_on_the_rack(db: &DatabaseConnection) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let row = db
            .query_one_raw(Statement::from_string(
                db.get_database_backend(),
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
                 AND query LIKE 'UPDATE \"racks\"%'",
            ))
            .await
            .unwrap()
            .unwrap();
        let waiting: i64 = row.try_get_by_index(0).unwrap();
        if waiting > 0 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "nothing ever waited on the rack's lock"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn a_hold_written_while_a_submission_waits_for_the_rack_refuses_it(ops: Ops) {
    ops.app.create_rack(&gb200_rack(1, 1)).await;
    let other = ops.app.db.connect_again().await;
    const LOCK: &str = "UPDATE racks SET revision = revision WHERE name = 'rack-0001'";

    // A submission that passed its first check waits for the rack; a hold lands meanwhile.
    let txn = other.begin().await.unwrap();
    txn.execute_unprepared(LOCK).await.unwrap();
    let hold_id = uuid::Uuid::new_v4();
    let body = json!({"target_spec": {"racks": [{"name": "rack-0001"}]}});
    let (refused, ()) = tokio::join!(ops.operate("power-on", &body), async {
        a_writer_waits_on_the_rack(&ops.app.db.db).await;
        let insert = format!(
            "INSERT INTO holds (id, rack_id, owner, reason, created_by, created_at) \
             SELECT '{hold_id}', id, 'slurm', 'job 4711', 'test', now() FROM racks \
             WHERE name = 'rack-0001'"
        );
        txn.execute_unprepared(&insert).await.unwrap();
        txn.commit().await.unwrap();
    });
    refused.assert_problem(409, "held");
    assert!(
        refused.text.contains(&hold_id.to_string()),
        "{}",
        refused.text
    );
    assert_eq!(ops.app.count_rows("tasks").await, 0, "no task was created");

    // And the other way round: a hold waits for whoever holds the rack, then is written.
    ops.app.delete(&format!("/v1/holds/{hold_id}")).await;
    let txn = other.begin().await.unwrap();
    txn.execute_unprepared(LOCK).await.unwrap();
    let hold =
        json!({"target": {"rack": {"name": "rack-0001"}}, "owner": "slurm", "reason": "job 4712"});
    let (created, ()) = tokio::join!(ops.app.post("/v1/holds", &hold), async {
        a_writer_waits_on_the_rack(&ops.app.db.db).await;
        txn.commit().await.unwrap();
    });
    assert_eq!(created.status, 201, "{}", created.text);
    ops.operate("power-on", &body)
        .await
        .assert_problem(409, "held");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_written_while_a_submission_waits_for_the_rack_refuses_it_on_postgres() {
    tokio::time::timeout(
        Duration::from_secs(120),
        OpsBuilder::new(Backend::Postgres)
            .run(a_hold_written_while_a_submission_waits_for_the_rack_refuses_it),
    )
    .await
    .expect("bounded in time");
}

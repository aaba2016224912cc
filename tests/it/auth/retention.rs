//! Audit retention: entries past `FLOW_AUDIT_RETENTION_DAYS` go, under a lease one process holds.

use chrono::{Duration, Utc};
use sea_orm::{ActiveValue::Set, EntityTrait};
use uuid::Uuid;

use crate::support::TestApp;

async fn entries_past_retention_are_pruned_by_the_lease_holder_only(app: TestApp) {
    use flow::db::entities::audit_log;
    let now = Utc::now();
    for (age, actor) in [(400, "old"), (10, "recent")] {
        audit_log::Entity::insert(audit_log::ActiveModel {
            id: Set(Uuid::now_v7()),
            at: Set(now - Duration::days(age)),
            actor: Set(actor.into()),
            role: Set(None),
            method: Set("POST".into()),
            route: Set("/v1/expected-racks".into()),
            resource_type: Set(None),
            resource_id: Set(None),
            status: Set(Some(201)),
            request_id: Set(None),
            before: Set(None),
            after: Set(None),
            client_addr: Set(None),
        })
        .exec_without_returning(&app.db.db)
        .await
        .unwrap();
    }
    let db = &app.db.db;
    assert_eq!(
        flow::audit::prune_with_lease(db, "a", 365, now)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        flow::audit::prune_with_lease(db, "b", 1, now)
            .await
            .unwrap(),
        0,
        "another process waits for the lease"
    );
    assert_eq!(
        flow::audit::prune_with_lease(db, "a", 1, now)
            .await
            .unwrap(),
        1
    );
    assert_eq!(app.count_rows("audit_log").await, 0);
}

crate::on_both_backends!(entries_past_retention_are_pruned_by_the_lease_holder_only);

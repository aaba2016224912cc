//! Optimistic concurrency: the `If-Match` check before a write and the compare-and-set after it.

use uuid::Uuid;

use crate::error::{Error, Result};

/// Fails with 412 when the client's `If-Match` revision is not the stored one.
pub(crate) fn check_revision(
    kind: &'static str,
    id: Uuid,
    current: i64,
    expected: Option<i64>,
) -> Result<()> {
    match expected {
        Some(expected) if expected != current => Err(Error::PreconditionFailed {
            kind,
            id: id.to_string(),
            expected: expected.to_string(),
            current: current.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Maps a compare-and-set that touched no row to 412: the stored revision moved on since
/// `read` was read (a concurrent writer won). Other errors pass through.
pub(crate) fn cas_failed(err: sea_orm::DbErr, kind: &'static str, id: Uuid, read: i64) -> Error {
    match err {
        sea_orm::DbErr::RecordNotUpdated => Error::PreconditionFailed {
            kind,
            id: id.to_string(),
            expected: read.to_string(),
            current: "newer".into(),
        },
        other => other.into(),
    }
}

/// [`cas_failed`] for an `update_many` compare-and-set, which reports a lost race as a count.
pub(crate) fn ensure_one(
    rows_affected: u64,
    kind: &'static str,
    id: Uuid,
    read: i64,
) -> Result<()> {
    if rows_affected == 1 {
        Ok(())
    } else {
        Err(cas_failed(sea_orm::DbErr::RecordNotUpdated, kind, id, read))
    }
}

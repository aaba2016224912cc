//! Lookups by serial, coalesced: on PostgreSQL, lookups that arrive while earlier ones are in
//! flight share one statement.
//!
//! A lookup is one indexed read, so what it costs is the round trip (two context switches on
//! each side, a protocol exchange) far more than the read. Under load the waiting lookups go
//! together in one statement; a lone lookup goes at once, alone, with no added wait.
//!
//! `FLOW_LOOKUP_BATCHING=false` turns the coalescing off (every lookup its own statement), so
//! that `scripts/bench` can measure what it brings; each shared statement records how many
//! lookups it carried in the `flow_lookup_batch_size` histogram.

use std::collections::HashMap;
use std::sync::OnceLock;

use sea_orm::{DatabaseConnection, DbBackend};
use tokio::sync::{mpsc, oneshot};

use super::lookup::{self, COMPONENTS_BY_SERIALS, Key, Looked};
use crate::db::kept::{KEEP, Kept};
use crate::error::Result;

/// Most lookups one statement carries.
const MAX_BATCH: usize = 128;

/// Statements in flight at once: one per two cores. Lookups arriving while all are busy go
/// together in the next one. On two cores (Flow, PostgreSQL and the load sharing them) one
/// statement at a time measured best: 18k lookups/s against 16k with two and 14k with four.
fn in_flight() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

/// What a queued lookup is answered: the component (or none), or its own error when it went
/// alone. When a shared statement fails its waiters get no answer (the sender is dropped) and
/// each looks up alone, so that it gets its own error — unless the database is unreachable:
/// then they all get `Unavailable` at once.
type Reply = Result<Option<Looked>>;

struct Pending {
    manufacturer_key: String,
    serial: String,
    reply: oneshot::Sender<Reply>,
}

/// Lookups by manufacturer key and serial number, batched on PostgreSQL.
pub struct SerialLookups {
    db: DatabaseConnection,
    /// Off (`FLOW_LOOKUP_BATCHING=false`): every lookup goes alone.
    batching: bool,
    /// Started on first use, inside whatever runtime serves requests.
    queue: OnceLock<mpsc::UnboundedSender<Pending>>,
}

impl SerialLookups {
    pub fn new(db: DatabaseConnection, batching: bool) -> Self {
        Self {
            db,
            batching,
            queue: OnceLock::new(),
        }
    }

    /// The live component with this manufacturer key and serial number, if any.
    pub async fn find(&self, manufacturer_key: &str, serial: &str) -> Result<Option<Looked>> {
        let alone = || {
            lookup::lookup_pooled(
                &self.db,
                Key::Serial {
                    manufacturer_key,
                    serial,
                },
            )
        };
        if !self.batching || self.db.get_database_backend() != DbBackend::Postgres {
            return alone().await;
        }
        let (reply, answer) = oneshot::channel();
        let pending = Pending {
            manufacturer_key: manufacturer_key.to_string(),
            serial: serial.to_string(),
            reply,
        };
        if self.queue().send(pending).is_err() {
            return alone().await;
        }
        match answer.await {
            Ok(answer) => answer,
            Err(_) => alone().await,
        }
    }

    fn queue(&self) -> &mpsc::UnboundedSender<Pending> {
        self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(dispatch(self.db.clone(), rx));
            tx
        })
    }
}

/// A lane (a statement slot and the connection it keeps while lookups keep coming, see
/// [`crate::db::kept`]) out on a statement: it comes back to the free lanes when dropped, even
/// by a panic.
struct Lent {
    lane: Kept,
    home: mpsc::UnboundedSender<Kept>,
}

impl Drop for Lent {
    fn drop(&mut self) {
        let _ = self.home.send(std::mem::take(&mut self.lane));
    }
}

/// Takes lookups off the queue as lanes become free: whatever queued meanwhile goes in the
/// next statement. Once no lookup came for [`KEEP`], the free lanes give their connections back.
async fn dispatch(db: DatabaseConnection, mut queue: mpsc::UnboundedReceiver<Pending>) {
    let lanes = in_flight();
    let (home, mut free) = mpsc::unbounded_channel();
    for _ in 0..lanes {
        let _ = home.send(Kept::default());
    }
    // Whether a lane may hold a connection: then the wait for lookups ends after KEEP.
    let mut holding = false;
    loop {
        let next = if holding {
            match tokio::time::timeout(KEEP, queue.recv()).await {
                Ok(next) => next,
                Err(_) => {
                    holding = !release(&mut free, &home, lanes);
                    continue;
                }
            }
        } else {
            queue.recv().await
        };
        let Some(first) = next else { return };
        let Some(lane) = free.recv().await else {
            return;
        };
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        holding = true;
        let (db, home) = (db.clone(), home.clone());
        tokio::spawn(async move {
            let mut lent = Lent { lane, home };
            answer(&db, &mut lent.lane, batch).await;
        });
    }
}

/// Gives the free lanes' connections back to the pool; whether every lane was free.
fn release(
    free: &mut mpsc::UnboundedReceiver<Kept>,
    home: &mpsc::UnboundedSender<Kept>,
    lanes: usize,
) -> bool {
    let mut back = Vec::new();
    while let Ok(mut lane) = free.try_recv() {
        lane.release();
        back.push(lane);
    }
    let all = back.len() == lanes;
    for lane in back {
        let _ = home.send(lane);
    }
    all
}

/// Answers a batch on the lane's connection: a lone lookup by the single-key statement, more
/// by the shared one.
async fn answer(db: &DatabaseConnection, lane: &mut Kept, batch: Vec<Pending>) {
    crate::telemetry::metrics::lookup_batch(batch.len());
    let pool = db.get_postgres_connection_pool();
    if batch.len() == 1 {
        for one in batch {
            let found = match lane.get(pool).await {
                Ok(conn) => {
                    let key = Key::Serial {
                        manufacturer_key: &one.manufacturer_key,
                        serial: &one.serial,
                    };
                    lookup::lookup_on(conn, key).await
                }
                Err(error) => Err(error.into()),
            };
            if found.is_err() {
                lane.discard();
            }
            let _ = one.reply.send(found);
        }
        return;
    }
    let (keys, serials): (Vec<&str>, Vec<&str>) = batch
        .iter()
        .map(|p| (p.manufacturer_key.as_str(), p.serial.as_str()))
        .unzip();
    let rows = match lane.get(pool).await {
        Ok(conn) => sea_orm::sqlx::query(COMPONENTS_BY_SERIALS)
            .bind(keys)
            .bind(serials)
            .fetch_all(conn)
            .await
            .map_err(crate::db::sqlx_error),
        Err(error) => Err(error),
    };
    let rows = match rows {
        Ok(rows) => rows,
        Err(error) => {
            lane.discard();
            if crate::db::is_outage(&error) {
                // The database is out of reach: every waiter hears so now. Running each alone
                // would queue them behind one another's connection timeouts.
                for pending in batch {
                    let _ = pending.reply.send(Err(crate::error::Error::Unavailable {
                        service: "database",
                        message: error.to_string(),
                    }));
                }
            } else {
                tracing::debug!(%error, "batched lookup failed; each lookup runs alone");
            }
            return;
        }
    };
    let found = match lookup::assemble_many(&rows) {
        Ok(found) => found,
        Err(error) => {
            tracing::debug!(%error, "batched lookup unreadable; each lookup runs alone");
            return;
        }
    };
    hand_out(batch, found);
}

/// Gives each waiter its component: moved out to the last (usually only) one who asked for it,
/// copied for the others (the same serial may be asked twice in one batch).
fn hand_out(batch: Vec<Pending>, found: Vec<(String, Looked)>) {
    let index: HashMap<(&str, &str), usize> = found
        .iter()
        .enumerate()
        .map(|(i, (key, l))| ((key.as_str(), l.component.serial_number.as_str()), i))
        .collect();
    let wanted: Vec<Option<usize>> = batch
        .iter()
        .map(|p| {
            index
                .get(&(p.manufacturer_key.as_str(), p.serial.as_str()))
                .copied()
        })
        .collect();
    drop(index);
    let mut askers = vec![0usize; found.len()];
    for i in wanted.iter().flatten() {
        askers[*i] += 1;
    }
    let mut found: Vec<Option<Looked>> = found.into_iter().map(|(_, c)| Some(c)).collect();
    for (pending, wanted) in batch.into_iter().zip(wanted) {
        let component = wanted.and_then(|i| {
            askers[i] -= 1;
            if askers[i] == 0 {
                found[i].take()
            } else {
                found[i].clone()
            }
        });
        let _ = pending.reply.send(Ok(component));
    }
}

//! Live validation: compare expected devices with what their managers report right now. Reads
//! only; the periodic sync is what records drift and observed values.

use sea_orm::ConnectionTrait;

use super::compare::{self, Comparison};
use super::observe::{Observed, Observer};
use super::walk::{PAGE, Walk};
use super::{Validation, expected};
use crate::domain::operation::TargetSpec;
use crate::error::Result;

/// Validates the given targets, or everything (including devices Flow does not know about)
/// when there are none.
pub async fn validate(
    db: &impl ConnectionTrait,
    observer: &Observer,
    targets: Option<&TargetSpec>,
) -> Result<Validation> {
    let Some(targets) = targets else {
        return everything(db, observer).await;
    };
    let devices = expected::target_devices(db, targets).await?;
    Ok(assemble(&observer.observe(devices, false).await))
}

/// Every expected device, page by page, and every device the managers have that Flow does
/// not know about.
async fn everything(db: &impl ConnectionTrait, observer: &Observer) -> Result<Validation> {
    let mut walk = Walk::start(db, observer, PAGE).await;
    while walk.next_page().await?.is_some() {}
    let outcome = walk.finish();
    let mut validation = Validation::new(outcome.unchecked);
    for source in outcome.sources {
        validation.add(source.matched, source.diffs);
    }
    Ok(validation)
}

/// Validates one rack's devices (404 when the rack does not exist).
pub async fn validate_rack(
    db: &impl ConnectionTrait,
    observer: &Observer,
    rack_id: crate::ids::RackId,
) -> Result<Validation> {
    let devices = expected::rack_devices(db, rack_id).await?;
    Ok(assemble(&observer.observe(devices, false).await))
}

/// Compares every source's answer; a source that did not answer makes its devices unreachable.
pub fn assemble(observed: &Observed) -> Validation {
    let mut validation = Validation::new(observed.unchecked.len() as u64);
    for source in &observed.sources {
        match &source.outcome {
            Ok(report) => {
                let Comparison { matched, diffs, .. } =
                    compare::compare(source.kind, &source.devices, report);
                validation.add(matched, diffs);
            }
            Err(error) => validation.add(0, compare::unreachable(&source.devices, error)),
        }
    }
    validation
}

//! Live validation: compare expected devices with what their managers report right now. Reads
//! only; the periodic sync is what records drift and observed values. The NVLink domains of the
//! validated racks are checked for mixed firmware with the versions just seen.

use sea_orm::ConnectionTrait;
use uuid::Uuid;

use super::compare::{self, Comparison, Sighting};
use super::domains::FreshVersions;
use super::observe::{Observed, Observer};
use super::walk::{PAGE, Walk};
use super::{Validation, domains, expected};
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
    let ids: Vec<Uuid> = devices.iter().map(|d| d.component_id).collect();
    let observed = observer.observe(devices, false).await;
    let mut validation = assemble(&observed);
    let mut fresh = FreshVersions::new();
    domains::add_fresh(&mut fresh, sightings(&observed).iter(), None);
    let mixes = domains::mixed_around(db, &ids, &fresh).await?;
    validation.add(0, mixes.iter().map(domains::DomainMix::diff).collect());
    Ok(validation)
}

/// What the managers reported of the devices they saw.
fn sightings(observed: &Observed) -> Vec<Sighting> {
    observed
        .sources
        .iter()
        .filter_map(|source| {
            let report = source.outcome.as_ref().ok()?;
            Some(compare::compare(source.kind, &source.devices, report).sightings)
        })
        .flatten()
        .collect()
}

/// Every expected device, page by page, and every device the managers have that Flow does
/// not know about.
async fn everything(db: &impl ConnectionTrait, observer: &Observer) -> Result<Validation> {
    // Only racks in a domain are kept, per rack and type: memory stays a page of devices plus
    // one small entry per such rack, whatever the number of components.
    let in_domains = domains::racks_in_domains(db).await?;
    let mut walk = Walk::start(db, observer, PAGE).await;
    let mut fresh = FreshVersions::new();
    while let Some(page) = walk.next_page().await? {
        domains::add_fresh(&mut fresh, page.iter(), Some(&in_domains));
    }
    let outcome = walk.finish();
    let mut validation = Validation::new(outcome.unchecked);
    for source in outcome.sources {
        validation.add(source.matched, source.diffs);
    }
    let mixes = domains::mixed(db, None, &fresh).await?;
    validation.add(0, mixes.iter().map(domains::DomainMix::diff).collect());
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

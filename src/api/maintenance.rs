//! Maintenance marks on read answers: each component under a running task says so with the
//! task (`in_maintenance`, `maintenance_task_id`), each rack with its running tasks. One query
//! per answer, over the racks it shows.

use std::collections::HashSet;

use super::schema::component::ComponentDoc;
use super::schema::rack::RackDoc;
use crate::error::Result;
use crate::ids::RackId;
use crate::tasks::maintenance::{self, Running};

/// Marks the given components (and nothing else).
pub async fn mark_components(
    db: &impl sea_orm::ConnectionTrait,
    components: &mut [&mut ComponentDoc],
) -> Result<()> {
    let racks: HashSet<RackId> = components
        .iter()
        .filter_map(|c| c.rack_id.map(RackId::from))
        .collect();
    let racks: Vec<RackId> = racks.into_iter().collect();
    let running = maintenance::running(db, Some(&racks)).await?;
    mark(&running, components);
    Ok(())
}

/// Marks the racks, and their components when listed.
pub async fn mark_racks(db: &impl sea_orm::ConnectionTrait, racks: &mut [RackDoc]) -> Result<()> {
    let ids: Vec<RackId> = racks.iter().map(|r| r.id.into()).collect();
    let running = maintenance::running(db, Some(&ids)).await?;
    for rack in racks {
        rack.maintenance_task_ids = running
            .iter()
            .filter(|t| t.rack_id == RackId::from(rack.id))
            .map(|t| t.task_id.into())
            .collect();
        rack.in_maintenance = !rack.maintenance_task_ids.is_empty();
        if let Some(components) = &mut rack.components {
            mark(&running, &mut components.iter_mut().collect::<Vec<_>>());
        }
    }
    Ok(())
}

fn mark(running: &[Running], components: &mut [&mut ComponentDoc]) {
    let under = maintenance::by_component(running);
    for c in components {
        let task = under.get(&c.id.into());
        c.in_maintenance = task.is_some();
        c.maintenance_task_id = task.map(|t| (*t).into());
    }
}

//! Advice on schedules that would touch the same racks in a conflicting way: the task conflict
//! rule of the task service, applied to whole-rack templates (component types, not components).

use super::model::{Schedule, ScheduleTargets};
use super::service::ScheduleService;
use super::store;
use crate::domain::ComponentType;
use crate::domain::operation::{Operation, TaskType};
use crate::error::Result;
use crate::ids::{RackId, ScheduleId};
use crate::inventory::targets::DRIVEN_TYPES;

/// The driven component types a scope filter covers (empty = all of them).
fn covered(types: &[ComponentType]) -> Vec<ComponentType> {
    if types.is_empty() {
        DRIVEN_TYPES.to_vec()
    } else {
        types
            .iter()
            .copied()
            .filter(|t| DRIVEN_TYPES.contains(t))
            .collect()
    }
}

/// Whether tasks of these two operations on these parts of one rack could not run together:
/// a bring-up or ingest takes the whole rack; power work on power shelves excludes any other
/// power or firmware work; otherwise they clash when they drive a common component type.
pub fn overlaps(
    a: &Operation,
    a_types: &[ComponentType],
    b: &Operation,
    b_types: &[ComponentType],
) -> bool {
    let (a_types, b_types) = (covered(a_types), covered(b_types));
    if a_types.is_empty() || b_types.is_empty() {
        return false;
    }
    if a.task_type() == TaskType::BringUp || b.task_type() == TaskType::BringUp {
        return true;
    }
    let shelf_power = |op: &Operation, types: &[ComponentType]| {
        op.task_type() == TaskType::PowerControl && types.contains(&ComponentType::PowerShelf)
    };
    if shelf_power(a, &a_types) || shelf_power(b, &b_types) {
        return true;
    }
    a_types.iter().any(|t| b_types.contains(t))
}

/// An existing schedule that would clash, and on which racks.
#[derive(Debug, Clone)]
pub struct ScheduleConflict {
    pub schedule: Schedule,
    pub rack_ids: Vec<RackId>,
}

impl ScheduleService {
    /// Enabled schedules that share a rack with the proposed one and whose operation would
    /// conflict with it there. Advisory: nothing stops creating a conflicting schedule.
    pub async fn conflicts(
        &self,
        operation: &Operation,
        targets: &ScheduleTargets,
        exclude: Option<ScheduleId>,
    ) -> Result<Vec<ScheduleConflict>> {
        let racks: Vec<(RackId, Vec<ComponentType>)> = self
            .resolve_racks(targets)
            .await?
            .into_iter()
            .map(|r| (r.rack_id, r.component_types))
            .collect();
        let ids: Vec<RackId> = racks.iter().map(|(id, _)| *id).collect();
        let mut out = Vec::new();
        for (schedule, scopes) in store::on_racks(&self.db, &ids).await? {
            if !schedule.enabled || Some(schedule.id) == exclude {
                continue;
            }
            let rack_ids: Vec<RackId> = scopes
                .iter()
                .filter(|scope| {
                    racks.iter().any(|(rack, types)| {
                        *rack == scope.rack_id
                            && overlaps(
                                operation,
                                types,
                                &schedule.template.operation,
                                &scope.component_types,
                            )
                    })
                })
                .map(|scope| scope.rack_id)
                .collect();
            if !rack_ids.is_empty() {
                out.push(ScheduleConflict { schedule, rack_ids });
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ComponentType::*;

    #[test]
    fn whole_rack_templates_clash_like_tasks_do() {
        let on = Operation::PowerOn;
        let fw = Operation::FirmwareUpgrade {
            firmware: Default::default(),
            start_time: None,
            end_time: None,
            direction: Default::default(),
        };
        assert!(overlaps(&Operation::BringUp, &[Compute], &fw, &[NvSwitch]));
        assert!(
            overlaps(&on, &[], &fw, &[NvSwitch]),
            "shelf power takes the rack"
        );
        assert!(overlaps(&on, &[Compute], &fw, &[Compute]));
        assert!(!overlaps(&on, &[Compute], &fw, &[NvSwitch]));
        assert!(!overlaps(&fw, &[PowerShelf], &fw, &[Compute]));
        assert!(
            !overlaps(&on, &[Cdu], &on, &[Cdu]),
            "nothing driven, nothing shared"
        );
    }
}

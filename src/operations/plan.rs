//! A rack's plan: the resolved rule's stages, each with the rack's targeted devices of its types,
//! the power operation and firmware request filled in, and a workflow timeout that always fits.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::domain::ComponentType;
use crate::domain::operation::Operation;
use crate::domain::{Device, FirmwareRequest};
use crate::rules::model::{Action, AppliedRule, OnFailure, PowerCode, Retry, Rule, RuleSource};

/// One stage of a rack's run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    pub number: u32,
    pub name: String,
    pub component_types: Vec<ComponentType>,
    /// What each device goes through, in order; every `power_control` names its operation.
    pub actions: Vec<Action>,
    pub devices: Vec<Device>,
    /// At most this many devices of the stage in flight at once.
    pub max_parallel: u32,
    /// Limit for one attempt of one device's action list.
    pub timeout_ms: u64,
    pub retry: Retry,
    pub on_failure: OnFailure,
    /// Pause after the stage, before the next one.
    pub delay_after_ms: u64,
    /// Runs only under this condition (`ac_cycle`: a tray staged an image for the rack's AC
    /// cycle); always when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<crate::rules::model::StageWhen>,
}

impl Stage {
    /// Upper bound of the stage's duration: every wave of `max_parallel` devices takes its full
    /// timeout on every attempt, plus back-off, plus the pause after it.
    pub fn max_duration(&self) -> Duration {
        let waves = self
            .devices
            .len()
            .div_ceil(self.max_parallel.max(1) as usize) as u32;
        let per_device = Duration::from_millis(self.timeout_ms) * self.retry.max_attempts
            + self.retry.total_backoff();
        per_device * waves + Duration::from_millis(self.delay_after_ms)
    }

    /// The action that characterises the stage in reports (the first that changes the device).
    pub fn summary(&self) -> String {
        self.actions
            .iter()
            .find(|a| a.acts())
            .or(self.actions.first())
            .map(Action::label)
            .unwrap_or_default()
    }
}

/// The stages a rack's task runs, in order, and the rule they came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub rule: AppliedRule,
    /// What `firmware_start` installs (per-type versions are picked per device).
    pub firmware: Option<FirmwareRequest>,
    pub stages: Vec<Stage>,
}

impl Plan {
    /// Workflow execution timeout: the sum of the stages' upper bounds plus 10% and five minutes
    /// for bookkeeping, so a rule never outlives its workflow.
    pub fn workflow_timeout(&self) -> Duration {
        let total: Duration = self.stages.iter().map(Stage::max_duration).sum();
        total + total / 10 + Duration::from_secs(300)
    }

    /// The firmware request a device of `kind` gets.
    pub fn firmware_for(&self, kind: ComponentType) -> FirmwareRequest {
        for_type(&self.firmware.clone().unwrap_or_default(), kind)
    }
}

/// The request one component type gets: its own entry of a per-type version object, or the
/// single version every type shares.
pub fn for_type(request: &FirmwareRequest, kind: ComponentType) -> FirmwareRequest {
    let target_version = match crate::domain::operation::per_type(request) {
        Some(per_type) => per_type
            .into_iter()
            .find(|(k, _)| *k == kind)
            .and_then(|(_, v)| v),
        None => request.target_version.clone(),
    };
    FirmwareRequest {
        target_version,
        sub_targets: request.sub_targets.clone(),
    }
}

/// The plan for one rack: the rule's stages, each with the rack's targeted devices of its types.
/// Stages with no device are left out and the rest numbered from 1, so the plan shows exactly
/// what will run.
pub fn build(rule: &Rule, source: RuleSource, operation: &Operation, devices: &[Device]) -> Plan {
    let inherited = PowerCode::inherited(operation.code());
    let mut stages = Vec::new();
    for stage in &rule.definition.stages {
        let of_types: Vec<Device> = devices
            .iter()
            // An AC cycle is the rack's: its stages take every targeted device of their types,
            // also those of types the request installs nothing on (the shelves that cut power).
            .filter(|d| {
                stage.component_types.contains(&d.kind)
                    && (stage.when.is_some() || operation.touches(d.kind))
            })
            .cloned()
            .collect();
        if of_types.is_empty() {
            continue;
        }
        let actions = stage
            .actions
            .iter()
            .map(|a| match a {
                Action::PowerControl { operation: None } => Action::PowerControl {
                    operation: inherited,
                },
                other => other.clone(),
            })
            .collect();
        stages.push(Stage {
            number: stages.len() as u32 + 1,
            name: stage.name.clone(),
            component_types: stage.component_types.clone(),
            actions,
            devices: of_types,
            max_parallel: stage.max_parallel,
            timeout_ms: stage.timeout.as_millis() as u64,
            retry: stage.retry,
            on_failure: stage.on_failure,
            delay_after_ms: stage.delay_after.as_millis() as u64,
            when: stage.when,
        });
    }
    let firmware = match operation {
        Operation::FirmwareUpgrade { firmware, .. } => Some(firmware.clone()),
        _ => None,
    };
    Plan {
        rule: rule.applied(source),
        firmware,
        stages,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::builtin;

    fn device(kind: ComponentType, n: u8) -> Device {
        Device {
            component_id: uuid::Uuid::from_bytes([n; 16]),
            kind,
            name: format!("{kind}-{n}"),
            manufacturer: "NVIDIA".into(),
            model: None,
            serial_number: format!("SN{n}"),
            external_id: None,
            bmc_mac: None,
            bmc_ip: None,
            firmware_version: None,
            rack_id: None,
            rack_name: None,
        }
    }

    fn rack() -> Vec<Device> {
        vec![
            device(ComponentType::Compute, 1),
            device(ComponentType::NvSwitch, 2),
            device(ComponentType::PowerShelf, 3),
            device(ComponentType::TorSwitch, 4),
        ]
    }

    fn builtin_plan(operation: &Operation, devices: &[Device]) -> Plan {
        let rule = builtin::for_operation(operation.code()).unwrap();
        build(rule, RuleSource::Builtin, operation, devices)
    }

    fn kinds(plan: &Plan) -> Vec<ComponentType> {
        plan.stages
            .iter()
            .flat_map(|s| s.component_types.clone())
            .collect()
    }

    #[test]
    fn power_on_goes_shelves_switches_compute_and_off_the_reverse() {
        use ComponentType::*;
        assert_eq!(
            kinds(&builtin_plan(&Operation::PowerOn, &rack())),
            vec![PowerShelf, NvSwitch, Compute]
        );
        assert_eq!(
            kinds(&builtin_plan(
                &Operation::PowerOff { forced: false },
                &rack()
            )),
            vec![Compute, NvSwitch, PowerShelf]
        );
        let reset = builtin_plan(&Operation::PowerReset { forced: true }, &rack());
        assert_eq!(
            kinds(&reset),
            vec![Compute, NvSwitch, PowerShelf, PowerShelf, NvSwitch, Compute]
        );
        assert_eq!(
            reset.stages.iter().map(|s| s.number).collect::<Vec<_>>(),
            vec![1, 2, 3, 4, 5, 6]
        );
    }

    #[test]
    fn inherited_power_operations_are_filled_in() {
        let plan = builtin_plan(&Operation::PowerOff { forced: true }, &rack());
        assert!(plan.stages.iter().all(|s| s.actions[0]
            == Action::PowerControl {
                operation: Some(PowerCode::ForcePowerOff)
            }));
    }

    #[test]
    fn stages_without_devices_are_dropped_and_inventory_only_types_never_driven() {
        let only_compute = vec![
            device(ComponentType::Compute, 1),
            device(ComponentType::Cdu, 9),
        ];
        let plan = builtin_plan(&Operation::PowerOn, &only_compute);
        assert_eq!(kinds(&plan), vec![ComponentType::Compute]);
        assert_eq!(plan.stages[0].number, 1);
        assert!(
            builtin_plan(&Operation::PowerOn, &[device(ComponentType::TorSwitch, 4)])
                .stages
                .is_empty()
        );
    }

    #[test]
    fn a_per_type_version_object_gives_each_type_its_own_version() {
        let request = FirmwareRequest {
            target_version: Some(r#"{"compute":"2.1.0"}"#.into()),
            sub_targets: vec![],
        };
        assert_eq!(
            for_type(&request, ComponentType::Compute)
                .target_version
                .as_deref(),
            Some("2.1.0")
        );
        assert_eq!(
            for_type(&request, ComponentType::PowerShelf).target_version,
            None
        );
        let plain = FirmwareRequest {
            target_version: Some("3.0".into()),
            sub_targets: vec![],
        };
        assert_eq!(
            for_type(&plain, ComponentType::NvSwitch)
                .target_version
                .as_deref(),
            Some("3.0")
        );
    }

    #[test]
    fn the_workflow_timeout_covers_every_stage_on_every_attempt() {
        let mut devices: Vec<Device> = (0..18).map(|n| device(ComponentType::Compute, n)).collect();
        devices.push(device(ComponentType::PowerShelf, 30));
        let plan = builtin_plan(&Operation::PowerReset { forced: false }, &devices);
        let compute = plan
            .stages
            .iter()
            .find(|s| s.component_types == [ComponentType::Compute])
            .unwrap();
        // 18 trays, 6 at a time: three waves of three attempts of six minutes, plus back-off.
        assert_eq!(
            compute.max_duration(),
            (Duration::from_secs(3 * 360) + Duration::from_secs(15)) * 3
        );
        let sum: Duration = plan.stages.iter().map(Stage::max_duration).sum();
        assert!(plan.workflow_timeout() > sum);
    }
}

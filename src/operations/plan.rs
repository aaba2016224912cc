//! Built-in stage plans: the order in which a rack's components are driven for each operation,
//! with per-stage parallelism, timeouts and retries, and a workflow timeout that always fits.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::model::Operation;
use crate::components::{Device, DevicePower, FirmwareRequest, PowerOp};
use crate::inventory::model::ComponentType;

/// What each device of a stage goes through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Send a power operation, then poll until the device reports `verify` (when set).
    Power {
        op: PowerOp,
        verify: Option<DevicePower>,
        verify_timeout_secs: u64,
        poll_interval_ms: u64,
    },
    /// Start a firmware update, then poll until it completes or fails.
    Firmware {
        request: FirmwareRequest,
        timeout_secs: u64,
        poll_interval_ms: u64,
    },
    /// Register the device with its manager.
    Register,
}

impl Action {
    /// Short name for reports (`power_on`, `firmware`, `register`).
    pub fn label(&self) -> String {
        match self {
            Self::Power { op, .. } => format!(
                "power_{}",
                serde_json::to_value(op)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default()
            ),
            Self::Firmware { .. } => "firmware".into(),
            Self::Register => "register".into(),
        }
    }
}

/// Retry policy for one device's step: only transient errors are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryPlan {
    pub max_attempts: u32,
    pub initial_interval_ms: u64,
    pub backoff_coefficient_x10: u32,
    pub max_interval_ms: u64,
}

impl RetryPlan {
    /// The longest total back-off between all attempts.
    pub fn total_backoff(&self) -> Duration {
        let mut total = 0u64;
        let mut interval = self.initial_interval_ms;
        for _ in 1..self.max_attempts {
            total += interval.min(self.max_interval_ms);
            interval = interval * u64::from(self.backoff_coefficient_x10) / 10;
        }
        Duration::from_millis(total)
    }
}

/// One stage: a single component type, one action, bounded parallelism.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stage {
    pub number: u32,
    pub name: String,
    pub kind: ComponentType,
    pub action: Action,
    pub devices: Vec<Device>,
    /// At most this many devices of the stage in flight at once.
    pub max_parallel: u32,
    /// Limit for one attempt on one device.
    pub step_timeout_secs: u64,
    pub retry: RetryPlan,
}

impl Stage {
    /// Upper bound of the stage's duration: every wave of `max_parallel` devices takes its full
    /// timeout on every attempt, plus back-off.
    pub fn max_duration(&self) -> Duration {
        let waves = self
            .devices
            .len()
            .div_ceil(self.max_parallel.max(1) as usize) as u64;
        let per_device = Duration::from_secs(self.step_timeout_secs) * self.retry.max_attempts
            + self.retry.total_backoff();
        per_device * waves as u32
    }
}

/// The stages a rack's task runs, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub stages: Vec<Stage>,
}

impl Plan {
    /// Workflow execution timeout: the sum of the stages' upper bounds plus 10% and five minutes
    /// for bookkeeping, so a rule never outlives its workflow.
    pub fn workflow_timeout(&self) -> Duration {
        let total: Duration = self.stages.iter().map(Stage::max_duration).sum();
        total + total / 10 + Duration::from_secs(300)
    }
}

const POWER_ORDER_ON: [ComponentType; 3] = [
    ComponentType::PowerShelf,
    ComponentType::NvSwitch,
    ComponentType::Compute,
];
const POWER_ORDER_OFF: [ComponentType; 3] = [
    ComponentType::Compute,
    ComponentType::NvSwitch,
    ComponentType::PowerShelf,
];

fn power_retry() -> RetryPlan {
    RetryPlan {
        max_attempts: 3,
        initial_interval_ms: 5_000,
        backoff_coefficient_x10: 20,
        max_interval_ms: 60_000,
    }
}

/// Inrush and switch-fabric limits: how many devices of a type to drive at once.
fn power_parallelism(kind: ComponentType) -> u32 {
    match kind {
        ComponentType::PowerShelf => 2,
        ComponentType::NvSwitch => 9,
        _ => 6,
    }
}

fn power_stage(kind: ComponentType, op: PowerOp) -> (ComponentType, Action, u32, u64, RetryPlan) {
    let action = Action::Power {
        op,
        verify: Some(op.settles_to()),
        verify_timeout_secs: 300,
        poll_interval_ms: 2_000,
    };
    (kind, action, power_parallelism(kind), 360, power_retry())
}

/// The request one component type gets: a per-type version object (`{"compute": "2.1.0", ...}`)
/// gives each type its own entry, and a type it leaves out the manager's desired version.
fn for_type(request: &FirmwareRequest, kind: ComponentType) -> FirmwareRequest {
    let target_version = match request
        .target_version
        .as_deref()
        .map(serde_json::from_str::<serde_json::Map<String, serde_json::Value>>)
    {
        Some(Ok(per_type)) => per_type
            .get(kind.as_str())
            .and_then(|v| v.as_str())
            .map(String::from),
        _ => request.target_version.clone(),
    };
    FirmwareRequest {
        target_version,
        sub_targets: request.sub_targets.clone(),
    }
}

fn firmware_stage(
    kind: ComponentType,
    request: &FirmwareRequest,
    parallel: u32,
) -> (ComponentType, Action, u32, u64, RetryPlan) {
    let action = Action::Firmware {
        request: for_type(request, kind),
        timeout_secs: 45 * 60,
        poll_interval_ms: 5_000,
    };
    let retry = RetryPlan {
        max_attempts: 2,
        initial_interval_ms: 30_000,
        backoff_coefficient_x10: 15,
        max_interval_ms: 120_000,
    };
    (kind, action, parallel, 46 * 60, retry)
}

fn register_stage(kind: ComponentType) -> (ComponentType, Action, u32, u64, RetryPlan) {
    let retry = RetryPlan {
        max_attempts: 3,
        initial_interval_ms: 5_000,
        backoff_coefficient_x10: 20,
        max_interval_ms: 60_000,
    };
    (kind, Action::Register, 16, 120, retry)
}

/// The built-in sequence for an operation, before devices are assigned.
fn template(operation: &Operation) -> Vec<(ComponentType, Action, u32, u64, RetryPlan)> {
    let on = |op| POWER_ORDER_ON.iter().map(move |k| power_stage(*k, op));
    let off = |op| POWER_ORDER_OFF.iter().map(move |k| power_stage(*k, op));
    match operation {
        Operation::PowerOn => on(PowerOp::On).collect(),
        Operation::PowerOff { forced } => off(if *forced {
            PowerOp::ForceOff
        } else {
            PowerOp::Off
        })
        .collect(),
        // A reset is off then on in safe order: managers such as PSM have no atomic reset.
        Operation::PowerReset { forced } => off(if *forced {
            PowerOp::ForceOff
        } else {
            PowerOp::Off
        })
        .chain(on(PowerOp::On))
        .collect(),
        Operation::FirmwareUpgrade { firmware, .. } => vec![
            firmware_stage(ComponentType::Compute, firmware, 18),
            firmware_stage(ComponentType::NvSwitch, firmware, 9),
            firmware_stage(ComponentType::PowerShelf, firmware, 1),
        ],
        Operation::BringUp => {
            let desired = FirmwareRequest::default();
            on(PowerOp::On)
                .chain([
                    firmware_stage(ComponentType::NvSwitch, &desired, 9),
                    firmware_stage(ComponentType::Compute, &desired, 18),
                ])
                .collect()
        }
        Operation::Ingest => POWER_ORDER_ON.iter().map(|k| register_stage(*k)).collect(),
    }
}

/// The plan for one rack: the operation's built-in stages, each with the rack's targeted devices
/// of its type. Stages with no device are left out; types no stage drives (ToR, UMS, CDU) are
/// inventory-only and never touched.
pub fn build(operation: &Operation, devices: &[Device]) -> Plan {
    let mut stages = Vec::new();
    for (kind, action, max_parallel, step_timeout_secs, retry) in template(operation) {
        let of_kind: Vec<Device> = devices.iter().filter(|d| d.kind == kind).cloned().collect();
        if of_kind.is_empty() {
            continue;
        }
        let number = stages.len() as u32 + 1;
        let name = format!("{} {}", action.label(), kind);
        stages.push(Stage {
            number,
            name,
            kind,
            action,
            devices: of_kind,
            max_parallel,
            step_timeout_secs,
            retry,
        });
    }
    Plan { stages }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn kinds(plan: &Plan) -> Vec<ComponentType> {
        plan.stages.iter().map(|s| s.kind).collect()
    }

    #[test]
    fn power_on_goes_shelves_switches_compute_and_off_the_reverse() {
        use ComponentType::*;
        assert_eq!(
            kinds(&build(&Operation::PowerOn, &rack())),
            vec![PowerShelf, NvSwitch, Compute]
        );
        assert_eq!(
            kinds(&build(&Operation::PowerOff { forced: false }, &rack())),
            vec![Compute, NvSwitch, PowerShelf]
        );
        let reset = build(&Operation::PowerReset { forced: true }, &rack());
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
    fn stages_without_devices_are_dropped_and_inventory_only_types_never_driven() {
        let only_compute = vec![
            device(ComponentType::Compute, 1),
            device(ComponentType::Cdu, 9),
        ];
        let plan = build(&Operation::PowerOn, &only_compute);
        assert_eq!(kinds(&plan), vec![ComponentType::Compute]);
        assert_eq!(plan.stages[0].number, 1);
        assert!(
            build(&Operation::PowerOn, &[device(ComponentType::TorSwitch, 4)])
                .stages
                .is_empty()
        );
    }

    #[test]
    fn every_operation_has_a_plan_including_power_shelf_firmware() {
        let fw = Operation::FirmwareUpgrade {
            firmware: FirmwareRequest::default(),
            start_time: None,
            end_time: None,
        };
        for op in [
            Operation::PowerOn,
            Operation::PowerOff { forced: true },
            Operation::PowerReset { forced: false },
            fw.clone(),
            Operation::BringUp,
            Operation::Ingest,
        ] {
            assert!(!build(&op, &rack()).stages.is_empty(), "{op:?}");
        }
        assert!(
            build(&fw, &rack())
                .stages
                .iter()
                .any(|s| s.kind == ComponentType::PowerShelf)
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
        let plan = build(&Operation::PowerReset { forced: false }, &devices);
        let compute = plan
            .stages
            .iter()
            .find(|s| s.kind == ComponentType::Compute)
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

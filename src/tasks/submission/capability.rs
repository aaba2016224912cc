//! Whether the configured component managers can do what a plan asks: a gap refuses the rack
//! at submission (and shows in a dry run) instead of failing each of its devices at run time.

use std::collections::BTreeSet;

use crate::components::registry::Registry;
use crate::domain::ComponentType;
use crate::operations::plan::Plan;
use crate::rules::model::Action;

/// One line per stage, component type and action the managers cannot serve; empty when the
/// plan can run.
pub(super) fn gaps(plan: &Plan, registry: &Registry) -> Vec<String> {
    let mut out = Vec::new();
    for stage in &plan.stages {
        let kinds: BTreeSet<ComponentType> = stage.devices.iter().map(|d| d.kind).collect();
        for kind in kinds {
            let set = registry.get(kind);
            for action in &stage.actions {
                let (needed, offered) = match action {
                    Action::PowerControl { operation } => (
                        "power control",
                        set.and_then(|s| s.power.as_ref()).is_some_and(|power| {
                            operation.is_none_or(|code| power.supports(code.op()))
                        }),
                    ),
                    Action::VerifyPower { .. } | Action::VerifyReachable { .. } => {
                        ("power status", set.is_some_and(|s| s.status.is_some()))
                    }
                    Action::FirmwareStart { .. }
                    | Action::FirmwareWait { .. }
                    | Action::FirmwareActivate { .. }
                    | Action::FirmwareVerify { .. }
                    | Action::FirmwareRecipe { .. } => (
                        "firmware updates",
                        set.is_some_and(|s| s.firmware.is_some()),
                    ),
                    Action::Register => (
                        "registration",
                        set.is_some_and(|s| s.registration.is_some()),
                    ),
                    Action::Sleep { .. } => continue,
                };
                if offered {
                    continue;
                }
                let who = match set {
                    Some(s) => format!("the {kind} manager ({}) does not offer it", s.name),
                    None => {
                        format!("no manager is configured for {kind} (FLOW_COMPONENT_MANAGERS)")
                    }
                };
                let line = format!(
                    "stage {} ({}): {} on {kind} needs {needed}; {who}",
                    stage.number,
                    stage.name,
                    action.label()
                );
                if !out.contains(&line) {
                    out.push(line);
                }
            }
        }
        device_gaps(plan, stage, registry, &mut out);
    }
    ac_cycle_gap(plan, registry, &mut out);
    out
}

/// A tray whose recipe stages images for the rack's AC cycle, in a task with no power shelf to
/// cut the power (the request left them out): the images would never go live and the trays'
/// verification could only time out, so the rack is refused up front.
fn ac_cycle_gap(plan: &Plan, registry: &Registry, out: &mut Vec<String>) {
    let shelves_cut = plan.stages.iter().any(|s| {
        s.when.is_some()
            && s.devices
                .iter()
                .any(|d| d.kind == ComponentType::PowerShelf)
    });
    if shelves_cut {
        return;
    }
    for stage in &plan.stages {
        if !stage
            .actions
            .iter()
            .any(|a| matches!(a, Action::FirmwareRecipe { .. }))
        {
            continue;
        }
        for device in &stage.devices {
            let Some(firmware) = registry.get(device.kind).and_then(|s| s.firmware.as_ref()) else {
                continue;
            };
            let Some(recipe) = firmware.recipe(device, &plan.firmware_for(device.kind)) else {
                continue;
            };
            if recipe.needs_ac_cycle() {
                out.push(format!(
                    "stage {} ({}): recipe {} on {} stages images that only the rack's AC cycle makes live, but the task has no power shelf to cut the power (target the whole rack, power shelves included)",
                    stage.number, stage.name, recipe.version, device.name
                ));
                return;
            }
        }
    }
}

/// What each device's manager says about the plan's power and firmware actions, asking the
/// device where it can (a BMC's allowed reset types, its update paths); one line per device and
/// action it cannot do.
pub(super) async fn power_gaps(
    spec: &crate::domain::operation::OperationSpec,
    rack: &crate::inventory::targets::RackWork,
    rule: Option<&super::planner::ResolvedRule>,
    registry: Option<&Registry>,
) -> Vec<String> {
    let (Some((rule, source)), Some(registry)) = (rule, registry) else {
        return Vec::new();
    };
    let plan = crate::operations::plan::build(rule, *source, &spec.operation, &rack.devices);
    let mut out = Vec::new();
    for stage in &plan.stages {
        for action in &stage.actions {
            let code = match action {
                Action::PowerControl {
                    operation: Some(code),
                } => Some(*code),
                Action::FirmwareStart { .. } | Action::FirmwareRecipe { .. } => None,
                _ => continue,
            };
            for device in &stage.devices {
                let Some(preflight) = registry.get(device.kind).and_then(|s| s.preflight.clone())
                else {
                    continue;
                };
                let gap = match code {
                    Some(code) => preflight.power_gap(device, code.op()).await,
                    None => {
                        let request = plan.firmware_for(device.kind);
                        preflight.update_gap(device, &request).await
                    }
                };
                if let Some(why) = gap {
                    let line = format!("stage {} ({}): {why}", stage.number, stage.name);
                    if !out.contains(&line) {
                        out.push(line);
                    }
                }
            }
        }
    }
    out
}

/// What the managers can tell per device before any call: a device they cannot address (no
/// BMC address) or a firmware version they have no image for.
fn device_gaps(
    plan: &Plan,
    stage: &crate::operations::plan::Stage,
    registry: &Registry,
    out: &mut Vec<String>,
) {
    let acts = stage
        .actions
        .iter()
        .any(|a| !matches!(a, Action::Sleep { .. }));
    let installs = stage.actions.iter().any(|a| {
        matches!(
            a,
            Action::FirmwareStart { .. } | Action::FirmwareRecipe { .. }
        )
    });
    for device in &stage.devices {
        let Some(preflight) = registry.get(device.kind).and_then(|s| s.preflight.clone()) else {
            continue;
        };
        let mut found = Vec::new();
        if acts && let Some(why) = preflight.device_gap(device) {
            found.push(why);
        } else if installs
            && let Some(why) = preflight.firmware_gap(device, &plan.firmware_for(device.kind))
        {
            found.push(why);
        }
        for why in found {
            let line = format!("stage {} ({}): {why}", stage.number, stage.name);
            if !out.contains(&line) {
                out.push(line);
            }
        }
    }
}

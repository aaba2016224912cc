//! The dry run's view of a firmware upgrade: per component the recipe it would run, each
//! bundle with the part versions it expects and those the device runs now (where its manager
//! can read them), the activation each needs, and whether the rack will be AC-cycled.

use std::time::Duration;

use serde::Serialize;
use uuid::Uuid;

use crate::components::registry::Registry;
use crate::components::{Activation, Device};
use crate::domain::ComponentType;
use crate::operations::plan::Plan;
use crate::rules::model::Action;

/// Bound on reading one device's part versions for a dry run.
const OBSERVE_TIMEOUT: Duration = Duration::from_secs(5);

/// What the upgrade would do on each component, and whether the rack is AC-cycled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FirmwarePlan {
    pub ac_cycle: bool,
    pub components: Vec<ComponentRecipe>,
}

/// How a component gets its version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecipeStatus {
    /// The version's recipe, bundle by bundle.
    Recipe,
    /// The manager installs the version whole (no recipes, e.g. PSM).
    Whole,
    /// The catalog has no entry for this component's type and model.
    Unsupported,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ComponentRecipe {
    pub component_id: Uuid,
    pub name: String,
    pub kind: ComponentType,
    pub version: Option<String>,
    pub status: RecipeStatus,
    /// Why it is `unsupported`.
    pub reason: Option<String>,
    pub bundles: Vec<PlannedBundle>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedBundle {
    pub index: u32,
    pub activate: Activation,
    pub parts: Vec<PlannedPart>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedPart {
    pub part: String,
    pub expected: String,
    /// What the part runs now; `None` where the manager cannot tell.
    pub observed: Option<String>,
}

/// The firmware view of `plan`; `None` when the plan installs no firmware.
pub async fn firmware_plan(plan: &Plan, registry: &Registry) -> Option<FirmwarePlan> {
    let installs = |a: &Action| {
        matches!(
            a,
            Action::FirmwareStart { .. } | Action::FirmwareRecipe { .. }
        )
    };
    let mut components: Vec<ComponentRecipe> = Vec::new();
    for stage in plan
        .stages
        .iter()
        .filter(|s| s.actions.iter().any(installs))
    {
        for device in &stage.devices {
            if components
                .iter()
                .any(|c| c.component_id == device.component_id)
            {
                continue;
            }
            components.push(component(plan, registry, device).await);
        }
    }
    if components.is_empty() {
        return None;
    }
    let ac_cycle = components
        .iter()
        .flat_map(|c| &c.bundles)
        .any(|b| b.activate == Activation::AcCycle);
    Some(FirmwarePlan {
        ac_cycle,
        components,
    })
}

async fn component(plan: &Plan, registry: &Registry, device: &Device) -> ComponentRecipe {
    let request = plan.firmware_for(device.kind);
    let set = registry.get(device.kind);
    let mut out = ComponentRecipe {
        component_id: device.component_id,
        name: device.name.clone(),
        kind: device.kind,
        version: request.target_version.clone(),
        status: RecipeStatus::Whole,
        reason: None,
        bundles: Vec::new(),
    };
    let gap = set
        .and_then(|s| s.preflight.clone())
        .and_then(|p| p.firmware_gap(device, &request));
    let recipe = set
        .and_then(|s| s.firmware.clone())
        .and_then(|f| f.recipe(device, &request).map(|r| (f, r)));
    let Some((firmware, recipe)) = recipe else {
        if let Some(why) = gap {
            out.status = RecipeStatus::Unsupported;
            out.reason = Some(why);
        }
        return out;
    };
    out.status = RecipeStatus::Recipe;
    let parts: Vec<String> = recipe.expected().into_keys().collect();
    let seen = tokio::time::timeout(OBSERVE_TIMEOUT, firmware.part_versions(device, &parts))
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    out.bundles = recipe
        .bundles
        .into_iter()
        .map(|b| PlannedBundle {
            index: b.index,
            activate: b.activate,
            parts: b
                .expect
                .into_iter()
                .map(|(part, expected)| PlannedPart {
                    observed: seen.get(&part).cloned().flatten(),
                    part,
                    expected,
                })
                .collect(),
        })
        .collect();
    out
}

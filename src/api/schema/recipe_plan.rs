//! The dry run's firmware view: per component the recipe, its bundles with the part versions
//! each expects and those observed now, the activation each needs, and the rack's AC cycle.

use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::common::ComponentTypeDoc;
use crate::tasks::submission::recipes::{FirmwarePlan, RecipeStatus};

/// A firmware upgrade as it would run on the rack.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FirmwarePlanDoc {
    /// Whether the rack will be AC-cycled through its power shelves (a bundle of some tray's
    /// recipe has `activate = "ac_cycle"`).
    pub ac_cycle: bool,
    pub components: Vec<ComponentRecipeDoc>,
}

/// One component's recipe.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ComponentRecipeDoc {
    pub id: Uuid,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ComponentTypeDoc,
    /// The recipe (version) asked for.
    pub recipe: Option<String>,
    /// `recipe` (bundle by bundle), `whole` (the manager installs the version in one update)
    /// or `unsupported` (the catalog has no entry for this type and model).
    pub status: String,
    pub reason: Option<String>,
    pub bundles: Vec<PlannedBundleDoc>,
}

/// One bundle, in install order.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PlannedBundleDoc {
    pub index: u32,
    /// `none`, `bmc_reset`, `power_cycle` or `ac_cycle`.
    pub activate: String,
    pub parts: Vec<PlannedPartDoc>,
}

/// A part (FirmwareInventory member): the version the bundle installs and what runs now.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PlannedPartDoc {
    pub part: String,
    pub expected: String,
    /// `null` where the manager cannot read it.
    pub observed: Option<String>,
}

impl From<FirmwarePlan> for FirmwarePlanDoc {
    fn from(p: FirmwarePlan) -> Self {
        Self {
            ac_cycle: p.ac_cycle,
            components: p
                .components
                .into_iter()
                .map(|c| ComponentRecipeDoc {
                    id: c.component_id,
                    name: c.name,
                    kind: c.kind.into(),
                    recipe: c.version,
                    status: match c.status {
                        RecipeStatus::Recipe => "recipe",
                        RecipeStatus::Whole => "whole",
                        RecipeStatus::Unsupported => "unsupported",
                    }
                    .into(),
                    reason: c.reason,
                    bundles: c
                        .bundles
                        .into_iter()
                        .map(|b| PlannedBundleDoc {
                            index: b.index,
                            activate: b.activate.as_str().into(),
                            parts: b
                                .parts
                                .into_iter()
                                .map(|p| PlannedPartDoc {
                                    part: p.part,
                                    expected: p.expected,
                                    observed: p.observed,
                                })
                                .collect(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

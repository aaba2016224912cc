//! Firmware recipes as the managers hand them to the rack workflow: the ordered bundles a
//! component type's catalog entry installs, each with the activation that makes its images
//! live and the part versions that prove it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What makes a bundle's staged images live, in the order of their reach: a BMC restart, a
/// power cycle of the tray, or a full AC cycle of the rack through its power shelves.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    /// Live once the push ends.
    #[default]
    None,
    /// Live once the BMC has restarted (`Manager.Reset`).
    BmcReset,
    /// Live once the tray's power was cycled.
    PowerCycle,
    /// Live only after the rack's shelves cut and restored power (once per rack).
    AcCycle,
}

impl Activation {
    pub const ALL: [Activation; 4] = [Self::None, Self::BmcReset, Self::PowerCycle, Self::AcCycle];

    /// The catalog's and the API's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::BmcReset => "bmc_reset",
            Self::PowerCycle => "power_cycle",
            Self::AcCycle => "ac_cycle",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == text)
    }
}

/// One bundle of a recipe, as the workflow and the dry run see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleView {
    /// Position in the recipe, from 0: the order bundles are installed in.
    pub index: u32,
    pub activate: Activation,
    /// FirmwareInventory member (part) → the version it runs once the bundle is live.
    pub expect: BTreeMap<String, String>,
}

/// A recipe: the version operators ask for, and its bundles in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecipeView {
    pub version: String,
    pub bundles: Vec<BundleView>,
}

impl RecipeView {
    /// Whether the rack must be AC-cycled for this recipe's images to go live.
    pub fn needs_ac_cycle(&self) -> bool {
        self.bundles
            .iter()
            .any(|b| b.activate == Activation::AcCycle)
    }

    /// Every part the recipe names, with the version it must run in the end (a later bundle's
    /// word wins).
    pub fn expected(&self) -> BTreeMap<String, String> {
        let mut all = BTreeMap::new();
        for bundle in &self.bundles {
            all.extend(bundle.expect.clone());
        }
        all
    }
}

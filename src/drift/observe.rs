//! The actual side: asks every configured manager, in parallel, one batch per component type,
//! each bounded by a deadline so a silent manager costs no more than that.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::components::registry::Registry;
use crate::components::{Device, DeviceError, InventoryReport};
use crate::inventory::model::ComponentType;

/// One manager's answer for one component type.
#[derive(Debug, Clone)]
pub struct SourceResult {
    /// `<type>/<provider>`, e.g. `powershelf/psm`: the unit drift is replaced (or kept) by.
    pub source: String,
    pub kind: ComponentType,
    pub devices: Vec<Device>,
    pub outcome: Result<InventoryReport, DeviceError>,
}

/// Everything observed in one pass.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    pub sources: Vec<SourceResult>,
    /// Expected devices whose type has no manager that reports what it sees.
    pub unchecked: Vec<Device>,
}

/// Asks the managers of a [`Registry`] what they see.
#[derive(Debug, Clone)]
pub struct Observer {
    registry: Arc<Registry>,
    timeout: Duration,
}

impl Observer {
    pub fn new(registry: Arc<Registry>, timeout: Duration) -> Self {
        Self { registry, timeout }
    }

    /// The sources this observer asks, whatever the devices.
    pub fn sources(&self) -> Vec<String> {
        self.registry
            .sets()
            .filter(|(_, set)| set.inventory.is_some())
            .map(|(kind, set)| source_name(kind, &set.name))
            .collect()
    }

    /// Observes `devices`; with `everything`, every configured type is asked even when no
    /// device of it is expected, so that devices Flow does not know about show up.
    pub async fn observe(&self, devices: Vec<Device>, everything: bool) -> Observed {
        let mut by_kind: BTreeMap<ComponentType, Vec<Device>> = BTreeMap::new();
        for device in devices {
            by_kind.entry(device.kind).or_default().push(device);
        }
        let mut observed = Observed::default();
        let mut calls = Vec::new();
        for (kind, set) in self.registry.sets() {
            let Some(inventory) = set.inventory.clone() else {
                continue;
            };
            let devices = by_kind.remove(&kind).unwrap_or_default();
            if devices.is_empty() && !everything {
                continue;
            }
            let (source, timeout) = (source_name(kind, &set.name), self.timeout);
            calls.push(async move {
                let outcome = match tokio::time::timeout(
                    timeout,
                    inventory.observe(kind, &devices, everything),
                )
                .await
                {
                    Ok(outcome) => outcome,
                    Err(_) => Err(DeviceError::Unreachable(format!(
                        "{source}: no answer within {timeout:?}"
                    ))),
                };
                SourceResult {
                    source,
                    kind,
                    devices,
                    outcome,
                }
            });
        }
        observed.sources = futures::future::join_all(calls).await;
        observed.unchecked = by_kind.into_values().flatten().collect();
        observed
    }
}

/// `<type>/<provider>`.
pub fn source_name(kind: ComponentType, provider: &str) -> String {
    format!("{kind}/{provider}")
}

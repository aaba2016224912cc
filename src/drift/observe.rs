//! The actual side: asks every configured manager, in parallel, one batch per component type,
//! each bounded by a deadline so a silent manager costs no more than that.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::components::registry::Registry;
use crate::components::{Device, DeviceError, Inventory, InventoryReport};
use crate::domain::ComponentType;

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

/// A manager that reports what it sees of one component type.
#[derive(Clone)]
pub struct Source {
    /// `<type>/<provider>`.
    pub name: String,
    pub kind: ComponentType,
    pub inventory: Arc<dyn Inventory>,
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

    /// Every manager that reports what it sees, one per component type.
    pub fn managers(&self) -> Vec<Source> {
        self.registry
            .sets()
            .filter_map(|(kind, set)| {
                Some(Source {
                    name: source_name(kind, &set.name),
                    kind,
                    inventory: set.inventory.clone()?,
                })
            })
            .collect()
    }

    /// The sources this observer asks, whatever the devices.
    pub fn sources(&self) -> Vec<String> {
        self.managers().into_iter().map(|s| s.name).collect()
    }

    /// One call to one manager, bounded by the observer's deadline.
    pub async fn ask(
        &self,
        source: &Source,
        devices: &[Device],
        everything: bool,
    ) -> Result<InventoryReport, DeviceError> {
        let call = source.inventory.observe(source.kind, devices, everything);
        match tokio::time::timeout(self.timeout, call).await {
            Ok(outcome) => outcome,
            Err(_) => Err(DeviceError::Unreachable(format!(
                "{}: no answer within {:?}",
                source.name, self.timeout
            ))),
        }
    }

    /// Observes `devices`; with `everything`, every configured type is asked even when no
    /// device of it is expected, so that devices Flow does not know about show up.
    pub async fn observe(&self, devices: Vec<Device>, everything: bool) -> Observed {
        let mut by_kind: BTreeMap<ComponentType, Vec<Device>> = BTreeMap::new();
        for device in devices {
            by_kind.entry(device.kind).or_default().push(device);
        }
        let mut calls = Vec::new();
        for source in self.managers() {
            let devices = by_kind.remove(&source.kind).unwrap_or_default();
            if devices.is_empty() && !everything {
                continue;
            }
            calls.push(async move {
                let outcome = self.ask(&source, &devices, everything).await;
                SourceResult {
                    source: source.name,
                    kind: source.kind,
                    devices,
                    outcome,
                }
            });
        }
        Observed {
            sources: futures::future::join_all(calls).await,
            unchecked: by_kind.into_values().flatten().collect(),
        }
    }
}

/// `<type>/<provider>`.
pub fn source_name(kind: ComponentType, provider: &str) -> String {
    format!("{kind}/{provider}")
}

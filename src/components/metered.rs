//! Every call into a component manager, counted, timed and traced in one place: the registry
//! wraps each capability of every manager set it holds (sim, psm, or any provider added later),
//! so a provider needs no instrumentation of its own.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use tracing::Instrument;

use super::{
    Device, DeviceError, DevicePower, FirmwareControl, FirmwareRequest, FirmwareStatus, Inventory,
    InventoryReport, ManagerSet, PowerControl, PowerOp, PowerStatus, RecipeView, Registration,
};
use crate::domain::ComponentType;
use crate::telemetry::metrics;

/// A capability of one manager, instrumented.
struct Metered<T: ?Sized> {
    manager: Arc<str>,
    inner: Arc<T>,
}

impl<T: ?Sized> Metered<T> {
    fn wrap(manager: &Arc<str>, inner: Arc<T>) -> Arc<Self> {
        Arc::new(Self {
            manager: manager.clone(),
            inner,
        })
    }

    /// Runs one call inside a `device_call` span, then records its outcome and latency.
    async fn call<R>(
        &self,
        action: &'static str,
        call: impl Future<Output = Result<R, DeviceError>>,
    ) -> Result<R, DeviceError> {
        let span = tracing::info_span!("device_call", manager = %self.manager, action, trace_id = tracing::field::Empty);
        if let Some(trace_id) = crate::telemetry::trace::trace_id(&span) {
            span.record("trace_id", tracing::field::display(trace_id));
        }
        let started = Instant::now();
        let result = call.instrument(span).await;
        let outcome = match &result {
            Ok(_) => "ok",
            Err(DeviceError::Unreachable(_)) => "unreachable",
            Err(DeviceError::Rejected(_)) => "rejected",
            Err(DeviceError::Unsupported(_)) => "unsupported",
        };
        metrics::device_call(&self.manager, action, outcome, started.elapsed());
        result
    }
}

/// The same set with every capability instrumented under the set's name.
pub fn metered(set: ManagerSet) -> ManagerSet {
    let name: Arc<str> = set.name.as_str().into();
    // Its series exist from the start, at zero, for the actions it offers.
    let actions: Vec<&str> = [
        (set.power.is_some(), "set_power"),
        (set.status.is_some(), "power_status"),
        (set.firmware.is_some(), "start_update"),
        (set.firmware.is_some(), "update_status"),
        (set.registration.is_some(), "register"),
        (set.inventory.is_some(), "observe"),
    ]
    .into_iter()
    .filter_map(|(offered, action)| offered.then_some(action))
    .collect();
    metrics::known::manager(&name, &actions);
    ManagerSet {
        power: set
            .power
            .map(|p| Metered::wrap(&name, p) as Arc<dyn PowerControl>),
        status: set
            .status
            .map(|p| Metered::wrap(&name, p) as Arc<dyn PowerStatus>),
        firmware: set
            .firmware
            .map(|p| Metered::wrap(&name, p) as Arc<dyn FirmwareControl>),
        registration: set
            .registration
            .map(|p| Metered::wrap(&name, p) as Arc<dyn Registration>),
        inventory: set
            .inventory
            .map(|p| Metered::wrap(&name, p) as Arc<dyn Inventory>),
        // Checks before any call, not calls: nothing to count.
        preflight: set.preflight,
        name: set.name,
    }
}

#[async_trait]
impl PowerControl for Metered<dyn PowerControl> {
    async fn set_power(&self, device: &Device, op: PowerOp) -> Result<(), DeviceError> {
        self.call("set_power", self.inner.set_power(device, op))
            .await
    }

    fn supports(&self, op: PowerOp) -> bool {
        self.inner.supports(op)
    }
}

#[async_trait]
impl PowerStatus for Metered<dyn PowerStatus> {
    async fn power_status(&self, device: &Device) -> Result<DevicePower, DeviceError> {
        self.call("power_status", self.inner.power_status(device))
            .await
    }
}

#[async_trait]
impl FirmwareControl for Metered<dyn FirmwareControl> {
    async fn start_update(
        &self,
        device: &Device,
        request: &FirmwareRequest,
    ) -> Result<(), DeviceError> {
        self.call("start_update", self.inner.start_update(device, request))
            .await
    }

    async fn update_status(&self, device: &Device) -> Result<FirmwareStatus, DeviceError> {
        self.call("update_status", self.inner.update_status(device))
            .await
    }

    fn update_handle(&self, device: &Device) -> Option<String> {
        self.inner.update_handle(device)
    }

    fn resume_update(&self, device: &Device, handle: &str) -> bool {
        self.inner.resume_update(device, handle)
    }

    fn recipe(&self, device: &Device, request: &FirmwareRequest) -> Option<RecipeView> {
        self.inner.recipe(device, request)
    }

    async fn start_bundle(
        &self,
        device: &Device,
        request: &FirmwareRequest,
        index: u32,
    ) -> Result<(), DeviceError> {
        self.call(
            "start_update",
            self.inner.start_bundle(device, request, index),
        )
        .await
    }

    async fn part_versions(
        &self,
        device: &Device,
        parts: &[String],
    ) -> Result<BTreeMap<String, Option<String>>, DeviceError> {
        self.call("part_versions", self.inner.part_versions(device, parts))
            .await
    }
}

#[async_trait]
impl Registration for Metered<dyn Registration> {
    async fn register(&self, device: &Device) -> Result<Option<String>, DeviceError> {
        self.call("register", self.inner.register(device)).await
    }
}

#[async_trait]
impl Inventory for Metered<dyn Inventory> {
    async fn observe(
        &self,
        kind: ComponentType,
        devices: &[Device],
        everything: bool,
    ) -> Result<InventoryReport, DeviceError> {
        self.call("observe", self.inner.observe(kind, devices, everything))
            .await
    }

    fn address(&self, device: &Device) -> Option<String> {
        self.inner.address(device)
    }
}

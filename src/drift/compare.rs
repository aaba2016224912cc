//! The comparison itself, pure: the expected devices of one type against one manager's report.

use uuid::Uuid;

use super::{Diff, DiffKind, FieldDiff};
use crate::components::{Device, DeviceError, DevicePower, InventoryReport, Observation};
use crate::domain::ComponentType;

/// What a manager reported of a device it saw, to record as the component's observed state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sighting {
    pub component_id: Uuid,
    pub external_id: Option<String>,
    pub firmware_version: Option<String>,
    pub power: Option<DevicePower>,
    /// The component's rack and type, when the comparison knew them: a whole-site validation
    /// keeps the versions it sees per rack and type for the NVLink-domain check.
    pub tray: Option<(Uuid, ComponentType)>,
}

/// The outcome of comparing one type's devices with its manager's report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Expected devices seen with no differing field.
    pub matched: u64,
    pub diffs: Vec<Diff>,
    pub sightings: Vec<Sighting>,
}

fn same(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

/// The fields an operator states and a manager can contradict. Firmware is compared only when
/// the inventory names a version; power state has no expected value and is only recorded.
fn field_diffs(device: &Device, seen: &Observation) -> Vec<FieldDiff> {
    let mut diffs = Vec::new();
    if let Some(actual) = &seen.serial_number
        && !same(actual, &device.serial_number)
    {
        diffs.push(FieldDiff {
            field: "serial_number".into(),
            expected: device.serial_number.clone(),
            actual: actual.clone(),
        });
    }
    if let (Some(expected), Some(actual)) = (&device.firmware_version, &seen.firmware_version)
        && expected.trim() != actual.trim()
    {
        diffs.push(FieldDiff {
            field: "firmware_version".into(),
            expected: expected.clone(),
            actual: actual.clone(),
        });
    }
    if let Some(expected) = &device.bmc_mac {
        let expected = crate::clients::redfish::normal_mac(expected);
        if !seen.macs.is_empty() && !seen.macs.contains(&expected) {
            diffs.push(FieldDiff {
                field: "bmc_mac".into(),
                expected,
                actual: seen.macs.join(","),
            });
        }
    }
    diffs
}

fn diff(kind: DiffKind, device: &Device, external_id: Option<String>) -> Diff {
    Diff {
        kind,
        component_type: device.kind,
        component_id: Some(device.component_id),
        rack_id: device.rack_id,
        external_id,
        address: None,
        fields: Vec::new(),
        message: None,
    }
}

/// Compares `devices` (all of type `kind`) with what their manager reported.
pub fn compare(kind: ComponentType, devices: &[Device], report: &InventoryReport) -> Comparison {
    let mut out = Comparison::default();
    for device in devices {
        if let Some(error) = report.failed.get(&device.component_id) {
            let mut d = diff(failed_kind(error), device, device.external_id.clone());
            d.message = Some(error.to_string());
            out.diffs.push(d);
            continue;
        }
        let Some(seen) = report.seen.get(&device.component_id) else {
            out.diffs
                .push(diff(DiffKind::Missing, device, device.external_id.clone()));
            continue;
        };
        out.sightings.push(Sighting {
            component_id: device.component_id,
            external_id: seen.external_id.clone(),
            firmware_version: seen.firmware_version.clone(),
            power: seen.power,
            tray: device.rack_id.map(|rack| (rack, device.kind)),
        });
        let fields = field_diffs(device, seen);
        if fields.is_empty() {
            out.matched += 1;
        } else {
            let external = seen.external_id.clone().or(device.external_id.clone());
            let mut d = diff(DiffKind::Mismatch, device, external);
            d.fields = fields;
            out.diffs.push(d);
        }
    }
    out.diffs
        .extend(report.unlisted.iter().map(|extra| unexpected(kind, extra)));
    out
}

/// A device a manager has (of type `kind`) that Flow does not expect.
pub fn unexpected(kind: ComponentType, extra: &Observation) -> Diff {
    Diff {
        kind: DiffKind::Unexpected,
        component_type: kind,
        component_id: None,
        rack_id: None,
        external_id: extra.external_id.clone(),
        address: Some(extra.address.clone()),
        fields: Vec::new(),
        message: None,
    }
}

/// How a device its manager could not report on differs: `rejected` when it answered but
/// refused (credentials, discovery), else `unreachable`.
fn failed_kind(error: &DeviceError) -> DiffKind {
    match error {
        DeviceError::Rejected(_) => DiffKind::Rejected,
        _ => DiffKind::Unreachable,
    }
}

/// Every device of a manager that did not answer (or refused), as unreachable (or rejected):
/// not as missing.
pub fn unreachable(devices: &[Device], error: &DeviceError) -> Vec<Diff> {
    devices
        .iter()
        .map(|device| {
            let mut d = diff(failed_kind(error), device, device.external_id.clone());
            d.message = Some(error.to_string());
            d
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(serial: &str, firmware: Option<&str>) -> Device {
        Device {
            component_id: Uuid::new_v4(),
            kind: ComponentType::PowerShelf,
            name: format!("shelf-{serial}"),
            manufacturer: "LITEON".into(),
            model: None,
            serial_number: serial.into(),
            external_id: None,
            bmc_mac: Some("02:00:00:00:00:01".into()),
            bmc_ip: None,
            firmware_version: firmware.map(String::from),
            rack_id: None,
            rack_name: None,
        }
    }

    fn seen(serial: Option<&str>, firmware: Option<&str>) -> Observation {
        Observation {
            address: "02:00:00:00:00:01".into(),
            external_id: Some("02:00:00:00:00:01".into()),
            serial_number: serial.map(String::from),
            firmware_version: firmware.map(String::from),
            power: Some(DevicePower::Off),
            macs: Vec::new(),
            ..Observation::default()
        }
    }

    #[test]
    fn each_device_is_matched_missing_mismatched_or_unreachable_and_extras_are_unexpected() {
        let (ok, gone, old, broken) = (
            device("A", Some("1.0")),
            device("B", None),
            device("C", Some("1.0")),
            device("D", None),
        );
        let mut report = InventoryReport::default();
        report
            .seen
            .insert(ok.component_id, seen(Some(" a "), Some("1.0")));
        report
            .seen
            .insert(old.component_id, seen(None, Some("1.1")));
        report.failed.insert(
            broken.component_id,
            DeviceError::Unreachable("PMC did not respond".into()),
        );
        report.unlisted.push(seen(Some("Z"), None));
        let devices = [ok, gone.clone(), old.clone(), broken];
        let c = compare(ComponentType::PowerShelf, &devices, &report);
        assert_eq!(c.matched, 1);
        let kinds: Vec<_> = c.diffs.iter().map(|d| d.kind).collect();
        assert_eq!(
            kinds,
            [
                DiffKind::Missing,
                DiffKind::Mismatch,
                DiffKind::Unreachable,
                DiffKind::Unexpected
            ]
        );
        assert_eq!(c.diffs[0].component_id, Some(gone.component_id));
        assert_eq!(
            c.diffs[1].fields,
            [FieldDiff {
                field: "firmware_version".into(),
                expected: "1.0".into(),
                actual: "1.1".into()
            }]
        );
        assert!(c.diffs[2].message.as_deref().unwrap().contains("PMC"));
        assert_eq!(c.diffs[3].component_id, None);
        assert_eq!(
            c.sightings.len(),
            2,
            "seen devices are recorded, mismatched or not"
        );
    }

    #[test]
    fn a_silent_manager_makes_its_devices_unreachable_not_missing() {
        let devices = [device("A", None), device("B", None)];
        let diffs = unreachable(&devices, &DeviceError::Unreachable("timeout".into()));
        assert!(diffs.iter().all(|d| d.kind == DiffKind::Unreachable));
        assert_eq!(diffs.len(), 2);
        let refused = unreachable(&devices, &DeviceError::Rejected("credentials".into()));
        assert!(refused.iter().all(|d| d.kind == DiffKind::Rejected));
    }
}

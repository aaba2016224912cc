//! Inventory value types: component, BMC and power-state kinds, and canonical MAC addresses.

use std::fmt;

/// What kind of device a component is. Only compute, NVSwitch and power shelves are driven by
/// operations; the others are kept for inventory.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ComponentType {
    Compute,
    NvSwitch,
    PowerShelf,
    TorSwitch,
    Ums,
    Cdu,
}

impl ComponentType {
    pub const ALL: [ComponentType; 6] = [
        Self::Compute,
        Self::NvSwitch,
        Self::PowerShelf,
        Self::TorSwitch,
        Self::Ums,
        Self::Cdu,
    ];

    /// The canonical lower-case name used in JSON and in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Compute => "compute",
            Self::NvSwitch => "nvswitch",
            Self::PowerShelf => "powershelf",
            Self::TorSwitch => "torswitch",
            Self::Ums => "ums",
            Self::Cdu => "cdu",
        }
    }

    /// Parses any spelling operators use: canonical names in any case, the original proto names
    /// (`COMPONENT_TYPE_COMPUTE`), and the hyphenated or gateway aliases (`power-shelf`, `switch`).
    pub fn parse(input: &str) -> Option<Self> {
        let lower = input.trim().to_ascii_lowercase();
        let key = lower
            .strip_prefix("component_type_")
            .unwrap_or(&lower)
            .replace(['-', '_'], "");
        match key.as_str() {
            "compute" => Some(Self::Compute),
            "nvswitch" | "nvlswitch" | "switch" => Some(Self::NvSwitch),
            "powershelf" => Some(Self::PowerShelf),
            "torswitch" => Some(Self::TorSwitch),
            "ums" => Some(Self::Ums),
            "cdu" => Some(Self::Cdu),
            _ => None,
        }
    }
}

impl fmt::Display for ComponentType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which controller a BMC is: the tray's host BMC (for a power shelf, its PMC) or a DPU's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BmcType {
    Host,
    Dpu,
}

impl BmcType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Dpu => "dpu",
        }
    }

    /// Accepts `host`/`dpu` in any case and the proto names `BMC_TYPE_HOST`/`BMC_TYPE_DPU`.
    pub fn parse(input: &str) -> Option<Self> {
        let lower = input.trim().to_ascii_lowercase();
        match lower.strip_prefix("bmc_type_").unwrap_or(&lower) {
            "host" => Some(Self::Host),
            "dpu" => Some(Self::Dpu),
            _ => None,
        }
    }
}

/// Last observed power state of a component (written by device sync, never by clients).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PowerState {
    Unknown,
    Off,
    On,
    Disabled,
}

impl PowerState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Off => "off",
            Self::On => "on",
            Self::Disabled => "disabled",
        }
    }

    pub fn parse(input: &str) -> Option<Self> {
        match input {
            "unknown" => Some(Self::Unknown),
            "off" => Some(Self::Off),
            "on" => Some(Self::On),
            "disabled" => Some(Self::Disabled),
            _ => None,
        }
    }
}

/// A MAC address in canonical lower-case colon form (`aa:bb:cc:dd:ee:ff`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MacAddress(String);

impl MacAddress {
    /// Accepts colon, hyphen, Cisco dotted (`aabb.ccdd.eeff`) and bare 12-digit forms.
    pub fn parse(input: &str) -> Option<Self> {
        let trimmed = input.trim();
        let digits: String = match trimmed.len() {
            17 => {
                let sep = trimmed.as_bytes()[2];
                if sep != b':' && sep != b'-' {
                    return None;
                }
                let groups: Vec<&str> = trimmed.split(sep as char).collect();
                if groups.len() != 6 || groups.iter().any(|g| g.len() != 2) {
                    return None;
                }
                groups.concat()
            }
            14 => {
                let groups: Vec<&str> = trimmed.split('.').collect();
                if groups.len() != 3 || groups.iter().any(|g| g.len() != 4) {
                    return None;
                }
                groups.concat()
            }
            12 => trimmed.to_string(),
            _ => return None,
        };
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let lower = digits.to_ascii_lowercase();
        let pairs: Vec<&str> = (0..6).map(|i| &lower[i * 2..i * 2 + 2]).collect();
        Some(Self(pairs.join(":")))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for MacAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_addresses_in_every_common_notation_become_canonical() {
        for input in [
            "D8:19:09:00:04:AF",
            "d8-19-09-00-04-af",
            "d819.0900.04af",
            "D819090004AF",
        ] {
            assert_eq!(
                MacAddress::parse(input).map(|m| m.0),
                Some("d8:19:09:00:04:af".into()),
                "{input}"
            );
        }
        for bad in [
            "",
            "d8:19:09:00:04",
            "d8:19:09:00:04:ag",
            "d8:19-09:00:04:af",
            "d81.909.0004af",
        ] {
            assert_eq!(MacAddress::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn component_types_accept_proto_names_and_aliases() {
        for (name, kind) in [
            ("COMPONENT_TYPE_COMPUTE", ComponentType::Compute),
            ("NVSwitch", ComponentType::NvSwitch),
            ("power-shelf", ComponentType::PowerShelf),
            ("ToRSwitch", ComponentType::TorSwitch),
        ] {
            assert_eq!(ComponentType::parse(name), Some(kind), "{name}");
        }
        assert_eq!(ComponentType::parse("gpu"), None);
        for t in ComponentType::ALL {
            assert_eq!(ComponentType::parse(t.as_str()), Some(t));
        }
    }

    #[test]
    fn bmc_types_accept_proto_names() {
        assert_eq!(BmcType::parse("BMC_TYPE_DPU"), Some(BmcType::Dpu));
        assert_eq!(BmcType::parse("Host"), Some(BmcType::Host));
        assert_eq!(BmcType::parse("bmc"), None);
    }
}

//! `FLOW_COMPONENT_MANAGERS` parsed once, at load: the provider of each component type, as plain
//! values the component registry builds its managers from.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::domain::ComponentType;

/// A provider name as it appears in the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    Sim,
    Psm,
    Redfish,
}

impl ProviderKind {
    /// The spec spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sim => "sim",
            Self::Psm => "psm",
            Self::Redfish => "redfish",
        }
    }

    /// Case-insensitive; `None` for providers Flow does not have.
    pub fn parse(input: &str) -> Option<Self> {
        match input.trim().to_ascii_lowercase().as_str() {
            "sim" => Some(Self::Sim),
            "psm" => Some(Self::Psm),
            "redfish" => Some(Self::Redfish),
            _ => None,
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parses `powershelf=psm,nvswitch=sim,compute=sim` (empty = nothing configured), rejecting
/// unknown types or providers, duplicates, and providers that cannot drive the type.
pub fn parse_spec(spec: &str) -> Result<Vec<(ComponentType, ProviderKind)>, String> {
    let mut entries: Vec<(ComponentType, ProviderKind)> = Vec::new();
    for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = |why: String| format!("component manager entry {entry:?}: {why}");
        let (kind, provider) = entry
            .split_once('=')
            .ok_or_else(|| bad("expected <type>=<provider>".into()))?;
        let kind = ComponentType::parse(kind)
            .ok_or_else(|| bad(format!("unknown component type {:?}", kind.trim())))?;
        let provider = ProviderKind::parse(provider).ok_or_else(|| {
            bad(format!(
                "unknown provider {:?} (expected sim, psm or redfish)",
                provider.trim()
            ))
        })?;
        if provider == ProviderKind::Psm && kind != ComponentType::PowerShelf {
            return Err(bad("psm drives power shelves only".into()));
        }
        if entries.iter().any(|(k, _)| *k == kind) {
            return Err(bad(format!("{kind} is configured more than once")));
        }
        entries.push((kind, provider));
    }
    Ok(entries)
}

/// `powershelf=psm,compute=sim`, as (type, provider) pairs in the order written; empty = none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Managers(Vec<(ComponentType, ProviderKind)>);

impl Managers {
    /// The (type, provider) pairs, in the order written.
    pub fn entries(&self) -> &[(ComponentType, ProviderKind)] {
        &self.0
    }

    /// Whether some component type is managed by `provider`.
    pub fn uses(&self, provider: ProviderKind) -> bool {
        self.0.iter().any(|(_, p)| *p == provider)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromStr for Managers {
    type Err = String;

    fn from_str(spec: &str) -> Result<Self, String> {
        parse_spec(spec).map(Self)
    }
}

impl fmt::Display for Managers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (kind, provider)) in self.0.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(f, "{sep}{}={provider}", kind.as_str())?;
        }
        Ok(())
    }
}

/// Compares with the spec as written in a variable (tests, `flow dev`'s defaults).
impl PartialEq<&str> for Managers {
    fn eq(&self, other: &&str) -> bool {
        other.parse::<Managers>().is_ok_and(|m| m == *self)
    }
}

impl Serialize for Managers {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Managers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

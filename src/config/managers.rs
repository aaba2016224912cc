//! `FLOW_COMPONENT_MANAGERS` parsed once, at load: the provider of each component type.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::components::registry::{ProviderKind, parse_spec};
use crate::inventory::model::ComponentType;

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

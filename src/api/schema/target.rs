//! What an operation targets, as request bodies give it (racks or NVLink domains by id or name,
//! components by Flow id or by their id in their manager), and its translation into the
//! domain's targets, naming each bad entry.

use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::common::ComponentTypeDoc;
use crate::domain::ComponentType;
use crate::domain::operation::{ComponentTarget, DomainRef, RackRef, RackTarget, TargetSpec};
use crate::error::Violations;

/// Which components an operation touches: whole racks (optionally only some component types),
/// single components, or every live rack of some NVLink domains (resolved when submitted, one
/// task per rack). Exactly one of `racks`, `components` and `nvl_domains`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"racks": [{"name": "g10"}, {"name": "g11", "component_types": ["compute"]}]}))]
pub struct TargetSpecDoc {
    pub racks: Option<Vec<RackTargetDoc>>,
    pub components: Option<Vec<ComponentTargetDoc>>,
    /// NVLink domains by id or name: every live rack attached to each (an unknown one is a 404).
    pub nvl_domains: Option<Vec<DomainTargetDoc>>,
}

/// An NVLink domain by id or name (exactly one).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DomainTargetDoc {
    pub id: Option<Uuid>,
    pub name: Option<String>,
}

/// A rack by id or name; `component_types` narrows it (empty = all).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RackTargetDoc {
    pub id: Option<Uuid>,
    pub name: Option<String>,
    #[serde(default)]
    pub component_types: Vec<ComponentTypeDoc>,
}

/// A component by Flow id, or by its id in its manager.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ComponentTargetDoc {
    pub id: Option<Uuid>,
    pub external: Option<ExternalRefDoc>,
}

/// A component's id in the manager of its type.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExternalRefDoc {
    #[serde(rename = "type")]
    pub kind: ComponentTypeDoc,
    pub id: String,
}

impl TargetSpecDoc {
    /// The domain targets; problems go to `v` under `target_spec`.
    pub fn to_domain(&self, v: &mut Violations) -> TargetSpec {
        let given = [
            self.racks.is_some(),
            self.components.is_some(),
            self.nvl_domains.is_some(),
        ];
        match given.iter().filter(|g| **g).count() {
            0 => v.push("target_spec", "give racks, components or nvl_domains"),
            1 => {}
            _ => v.push(
                "target_spec",
                "give exactly one of racks, components and nvl_domains",
            ),
        }
        if let (Some(racks), None, None) = (&self.racks, &self.components, &self.nvl_domains) {
            return TargetSpec::Racks(rack_targets(racks, v));
        }
        if let (None, Some(components), None) = (&self.racks, &self.components, &self.nvl_domains) {
            return TargetSpec::Components(component_targets(components, v));
        }
        if let (None, None, Some(domains)) = (&self.racks, &self.components, &self.nvl_domains) {
            return TargetSpec::NvlDomains(domain_targets(domains, v));
        }
        TargetSpec::Racks(Vec::new())
    }
}

fn rack_targets(racks: &[RackTargetDoc], v: &mut Violations) -> Vec<RackTarget> {
    racks
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let rack = match (
                r.id,
                r.name.as_deref().map(str::trim).filter(|n| !n.is_empty()),
            ) {
                (Some(id), None) => RackRef::Id(id),
                (None, Some(name)) => RackRef::Name(name.to_string()),
                _ => {
                    v.push(
                        format!("target_spec.racks[{i}]"),
                        "give exactly one of id or name",
                    );
                    return None;
                }
            };
            let component_types = r
                .component_types
                .iter()
                .map(|t| ComponentType::from(*t))
                .collect();
            Some(RackTarget {
                rack,
                component_types,
            })
        })
        .collect()
}

fn component_targets(
    components: &[ComponentTargetDoc],
    v: &mut Violations,
) -> Vec<ComponentTarget> {
    components
        .iter()
        .enumerate()
        .filter_map(|(i, c)| match (c.id, &c.external) {
            (Some(id), None) => Some(ComponentTarget::Id(id)),
            (None, Some(ext)) => Some(ComponentTarget::External {
                kind: ext.kind.into(),
                id: ext.id.trim().to_string(),
            }),
            _ => {
                v.push(
                    format!("target_spec.components[{i}]"),
                    "give exactly one of id or external",
                );
                None
            }
        })
        .collect()
}

/// NVLink domain references by id or name; problems go to `v` under `target_spec.nvl_domains`.
pub fn domain_targets(domains: &[DomainTargetDoc], v: &mut Violations) -> Vec<DomainRef> {
    domains
        .iter()
        .enumerate()
        .filter_map(|(i, d)| {
            match (
                d.id,
                d.name.as_deref().map(str::trim).filter(|n| !n.is_empty()),
            ) {
                (Some(id), None) => Some(DomainRef::Id(id)),
                (None, Some(name)) => Some(DomainRef::Name(name.to_string())),
                _ => {
                    v.push(
                        format!("target_spec.nvl_domains[{i}]"),
                        "give exactly one of id or name",
                    );
                    None
                }
            }
        })
        .collect()
}

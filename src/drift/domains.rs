//! NVLink-domain consistency: every rack of a domain should run the same firmware on its trays
//! of one type. A domain whose racks' observed versions differ on one type is a `domain_mixed`
//! difference, recorded by the drift sync under the pseudo-source [`SOURCE`] (one per domain
//! and type) and reported by validation; its fields are the versions by rack.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use uuid::Uuid;

use super::{Diff, DiffKind, FieldDiff};
use crate::db::entities::{components, nvl_domains, racks};
use crate::domain::ComponentType;
use crate::error::Result;
use crate::inventory::targets::DRIVEN_TYPES;

/// The source name `domain_mixed` records are kept under.
pub const SOURCE: &str = "nvl-domains";

/// One domain whose racks run different firmware on trays of one type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainMix {
    pub domain_id: Uuid,
    pub domain: String,
    pub component_type: ComponentType,
    /// Rack name -> the distinct versions its trays of this type run.
    pub versions: BTreeMap<String, BTreeSet<String>>,
}

impl DomainMix {
    /// The address a record is kept by across syncs (one per domain and type).
    pub fn address(&self) -> String {
        format!(
            "nvl-domain/{}/{}",
            self.domain_id,
            self.component_type.as_str()
        )
    }

    /// The version most racks run (ties: the highest by text), which the others are shown
    /// against.
    fn usual(&self) -> String {
        let mut count: BTreeMap<&str, usize> = BTreeMap::new();
        for versions in self.versions.values() {
            for v in versions {
                *count.entry(v.as_str()).or_default() += 1;
            }
        }
        count
            .into_iter()
            .max_by_key(|(v, n)| (*n, *v))
            .map(|(v, _)| v.to_string())
            .unwrap_or_default()
    }

    /// As a difference: one field per rack (`rack:<name>`), the usual version expected.
    pub fn diff(&self) -> Diff {
        let usual = self.usual();
        let fields = self
            .versions
            .iter()
            .map(|(rack, versions)| FieldDiff {
                field: format!("rack:{rack}"),
                expected: usual.clone(),
                actual: versions.iter().cloned().collect::<Vec<_>>().join(", "),
            })
            .collect();
        let by_rack: Vec<String> = self
            .versions
            .iter()
            .map(|(rack, v)| {
                format!(
                    "{rack}: {}",
                    v.iter().cloned().collect::<Vec<_>>().join("/")
                )
            })
            .collect();
        Diff {
            kind: DiffKind::DomainMixed,
            component_type: self.component_type,
            component_id: None,
            rack_id: None,
            external_id: None,
            address: Some(self.address()),
            fields,
            message: Some(format!(
                "NVLink domain {} runs different {} firmware across its racks ({})",
                self.domain,
                self.component_type.as_str(),
                by_rack.join("; ")
            )),
        }
    }
}

/// The mixed domains (all, or only `only`), from the observed firmware versions of the live
/// driven trays of their live racks; `fresh` (component id -> version just seen) overrides what
/// the last sync recorded.
pub async fn mixed(
    db: &impl ConnectionTrait,
    only: Option<&[Uuid]>,
    fresh: &HashMap<Uuid, String>,
) -> Result<Vec<DomainMix>> {
    let mut query = racks::Entity::find()
        .filter(racks::Column::DeletedAt.is_null())
        .filter(racks::Column::NvlDomainId.is_not_null());
    if let Some(ids) = only {
        query = query.filter(racks::Column::NvlDomainId.is_in(ids.iter().copied()));
    }
    let rack_rows = query.all(db).await?;
    if rack_rows.is_empty() {
        return Ok(Vec::new());
    }
    let rack_of: HashMap<Uuid, &racks::Model> = rack_rows.iter().map(|r| (r.id, r)).collect();
    // (domain, type) -> rack name -> versions
    let mut seen: BTreeMap<(Uuid, ComponentType), BTreeMap<String, BTreeSet<String>>> =
        BTreeMap::new();
    for chunk in rack_rows.chunks(200) {
        let rows = components::Entity::find()
            .filter(components::Column::DeletedAt.is_null())
            .filter(components::Column::RackId.is_in(chunk.iter().map(|r| r.id)))
            .all(db)
            .await?;
        for row in rows {
            let Some(kind) = ComponentType::parse(&row.r#type).filter(|k| DRIVEN_TYPES.contains(k))
            else {
                continue;
            };
            let version = fresh
                .get(&row.id)
                .cloned()
                .or(row.observed_firmware_version);
            let (Some(version), Some(rack)) = (version, row.rack_id.and_then(|r| rack_of.get(&r)))
            else {
                continue;
            };
            let Some(domain) = rack.nvl_domain_id else {
                continue;
            };
            seen.entry((domain, kind))
                .or_default()
                .entry(rack.name.clone())
                .or_default()
                .insert(version.trim().to_string());
        }
    }
    let mut out = Vec::new();
    for ((domain_id, kind), versions) in seen {
        let distinct: BTreeSet<&String> = versions.values().flatten().collect();
        if versions.len() < 2 || distinct.len() < 2 {
            continue;
        }
        let domain = nvl_domains::Entity::find_by_id(domain_id)
            .one(db)
            .await?
            .map_or_else(|| domain_id.to_string(), |d| d.name);
        out.push(DomainMix {
            domain_id,
            domain,
            component_type: kind,
            versions,
        });
    }
    Ok(out)
}

/// The mixed domains among those of `component_ids`' racks, with `fresh` versions (validation
/// of some targets).
pub async fn mixed_around(
    db: &impl ConnectionTrait,
    component_ids: &[Uuid],
    fresh: &HashMap<Uuid, String>,
) -> Result<Vec<DomainMix>> {
    let mut domains = BTreeSet::new();
    for chunk in component_ids.chunks(500) {
        let rows = components::Entity::find()
            .filter(components::Column::Id.is_in(chunk.iter().copied()))
            .all(db)
            .await?;
        let rack_ids: BTreeSet<Uuid> = rows.iter().filter_map(|r| r.rack_id).collect();
        let found = racks::Entity::find()
            .filter(racks::Column::Id.is_in(rack_ids))
            .all(db)
            .await?;
        domains.extend(found.into_iter().filter_map(|r| r.nvl_domain_id));
    }
    if domains.is_empty() {
        return Ok(Vec::new());
    }
    let domains: Vec<Uuid> = domains.into_iter().collect();
    mixed(db, Some(&domains), fresh).await
}

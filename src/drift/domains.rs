//! NVLink-domain consistency: every rack of a domain should run the same firmware on its trays
//! of one type. A domain whose racks' observed versions differ on one type is a `domain_mixed`
//! difference, recorded by the drift sync under the pseudo-source [`SOURCE`] (one per domain
//! and type) and reported by validation; its fields are the versions by rack.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect};
use uuid::Uuid;

use super::compare::Sighting;
use super::{Diff, DiffKind, FieldDiff};
use crate::db::entities::{components, racks};
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

/// Rack and tray type -> the versions a validation just saw there: one entry per rack and
/// type, never one per component, so a whole-site validation holds no more than its racks.
pub type FreshVersions = HashMap<(Uuid, ComponentType), BTreeSet<String>>;

/// Adds what `sightings` saw to `fresh`, for racks in `racks` (every rack when `None`) and the
/// types the domain rule looks at.
pub fn add_fresh<'a>(
    fresh: &mut FreshVersions,
    sightings: impl Iterator<Item = &'a Sighting>,
    racks: Option<&HashSet<Uuid>>,
) {
    for s in sightings {
        let (Some((rack, kind)), Some(version)) = (s.tray, &s.firmware_version) else {
            continue;
        };
        if DRIVEN_TYPES.contains(&kind) && racks.is_none_or(|r| r.contains(&rack)) {
            fresh
                .entry((rack, kind))
                .or_default()
                .insert(version.trim().to_string());
        }
    }
}

/// The live racks that belong to an NVLink domain (ids only).
pub async fn racks_in_domains(db: &impl ConnectionTrait) -> Result<HashSet<Uuid>> {
    let ids: Vec<Uuid> = racks::Entity::find()
        .select_only()
        .column(racks::Column::Id)
        .filter(racks::Column::DeletedAt.is_null())
        .filter(racks::Column::NvlDomainId.is_not_null())
        .into_tuple()
        .all(db)
        .await?;
    Ok(ids.into_iter().collect())
}

/// The mixed domains (all, or only `only`), from the observed firmware versions of the live
/// driven trays of their live racks; what `fresh` holds for a rack and type replaces what the
/// last sync recorded there.
pub async fn mixed(
    db: &impl ConnectionTrait,
    only: Option<&[Uuid]>,
    fresh: &FreshVersions,
) -> Result<Vec<DomainMix>> {
    let mut query = racks::Entity::find()
        .select_only()
        .columns([
            racks::Column::Id,
            racks::Column::Name,
            racks::Column::NvlDomainId,
        ])
        .filter(racks::Column::DeletedAt.is_null())
        .filter(racks::Column::NvlDomainId.is_not_null());
    if let Some(ids) = only {
        query = query.filter(racks::Column::NvlDomainId.is_in(ids.iter().copied()));
    }
    let rack_rows: Vec<(Uuid, String, Uuid)> = query.into_tuple().all(db).await?;
    let mut seen = Seen::new();
    for chunk in rack_rows.chunks(200) {
        let rack_of: HashMap<Uuid, (&str, Uuid)> = chunk
            .iter()
            .map(|(id, name, domain)| (*id, (name.as_str(), *domain)))
            .collect();
        for (rack, (name, domain)) in &rack_of {
            for kind in DRIVEN_TYPES {
                if let Some(versions) = fresh.get(&(*rack, kind)) {
                    seen.add(*domain, kind, name, versions.iter().cloned());
                }
            }
        }
        let rows: Vec<(Option<Uuid>, String, Option<String>)> = components::Entity::find()
            .select_only()
            .columns([
                components::Column::RackId,
                components::Column::Type,
                components::Column::ObservedFirmwareVersion,
            ])
            .filter(components::Column::DeletedAt.is_null())
            .filter(components::Column::RackId.is_in(rack_of.keys().copied()))
            .into_tuple()
            .all(db)
            .await?;
        for (rack, kind, version) in rows {
            let Some(kind) = ComponentType::parse(&kind).filter(|k| DRIVEN_TYPES.contains(k))
            else {
                continue;
            };
            let (Some(rack), Some(version)) = (rack, version) else {
                continue;
            };
            if fresh.contains_key(&(rack, kind)) {
                continue;
            }
            if let Some((name, domain)) = rack_of.get(&rack) {
                seen.add(*domain, kind, name, [version.trim().to_string()]);
            }
        }
    }
    seen.mixes(db).await
}

/// (domain, type) -> rack name -> versions, as the racks are read.
struct Seen(BTreeMap<(Uuid, ComponentType), BTreeMap<String, BTreeSet<String>>>);

impl Seen {
    fn new() -> Self {
        Self(BTreeMap::new())
    }

    fn add(
        &mut self,
        domain: Uuid,
        kind: ComponentType,
        rack: &str,
        versions: impl IntoIterator<Item = String>,
    ) {
        self.0
            .entry((domain, kind))
            .or_default()
            .entry(rack.to_string())
            .or_default()
            .extend(versions);
    }

    /// The (domain, type) pairs whose racks run more than one version, named.
    async fn mixes(self, db: &impl ConnectionTrait) -> Result<Vec<DomainMix>> {
        let mut out = Vec::new();
        for ((domain_id, kind), versions) in self.0 {
            let distinct: BTreeSet<&String> = versions.values().flatten().collect();
            if versions.len() < 2 || distinct.len() < 2 {
                continue;
            }
            let domain = crate::inventory::nvl::name_of(db, domain_id).await?;
            out.push(DomainMix {
                domain_id,
                domain,
                component_type: kind,
                versions,
            });
        }
        Ok(out)
    }
}

/// The mixed domains among those of `component_ids`' racks, with `fresh` versions (validation
/// of some targets).
pub async fn mixed_around(
    db: &impl ConnectionTrait,
    component_ids: &[Uuid],
    fresh: &FreshVersions,
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

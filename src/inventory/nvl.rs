//! NVL domains: create, look up by id or name, list, and attach or detach racks.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter,
};
use uuid::Uuid;

use super::live::{domain_row, resolve_rack};
use super::query::text_matches;
use super::revision::ensure_one;
use super::uniqueness::{
    DomainSlot, attached_elsewhere, domain_slot, ensure_attachable, on_unique,
};
use crate::db::entities::{nvl_domains, racks as rack_rows};
use crate::db::page::{Cursor, Page, PageRequest, keyset_rows};
use crate::error::{Error, FieldError, Result};
use crate::ids::NvlDomainId;

/// An NVLink domain: the set of racks joined by one NVLink fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvlDomain {
    pub id: NvlDomainId,
    pub name: String,
    pub created_at: DateTime<Utc>,
}

impl From<nvl_domains::Model> for NvlDomain {
    fn from(m: nvl_domains::Model) -> Self {
        Self {
            id: m.id.into(),
            name: m.name,
            created_at: m.created_at,
        }
    }
}

/// A domain by id (when the text is a UUID) or by name.
pub async fn find(db: &impl ConnectionTrait, id_or_name: &str) -> Result<Option<NvlDomain>> {
    Ok(domain_row(db, id_or_name).await?.map(Into::into))
}

/// A domain's name by id, or the id itself when it is gone (reports name domains; a domain
/// deleted meanwhile must not fail them).
pub async fn name_of(db: &impl ConnectionTrait, id: Uuid) -> Result<String> {
    Ok(nvl_domains::Entity::find_by_id(id)
        .one(db)
        .await?
        .map_or_else(|| id.to_string(), |d| d.name))
}

/// Like [`find`], but a missing domain is a 404.
pub async fn get(db: &impl ConnectionTrait, id_or_name: &str) -> Result<NvlDomain> {
    find(db, id_or_name)
        .await?
        .ok_or_else(|| Error::not_found("nvl domain", id_or_name))
}

/// Creates a domain. Creating one that exists with the same name (and id, if given) returns it
/// unchanged with `false`, so provisioning scripts can be re-run.
pub async fn create(
    db: &impl ConnectionTrait,
    id: Option<NvlDomainId>,
    name: &str,
    now: DateTime<Utc>,
) -> Result<(NvlDomain, bool)> {
    let id = match domain_slot(db, id.map(Uuid::from), name).await? {
        DomainSlot::Same(existing) => return Ok((existing.into(), false)),
        DomainSlot::Free(id) => id,
    };
    let row = nvl_domains::ActiveModel {
        id: Set(id),
        name: Set(name.to_string()),
        created_at: Set(now),
    };
    nvl_domains::Entity::insert(row)
        .exec_without_returning(db)
        .await
        .map_err(|e| on_unique(e, "the nvl domain"))?;
    crate::audit::row_changed::<nvl_domains::Entity>(db, "nvl_domain", id, None, now).await?;
    Ok((
        NvlDomain {
            id: id.into(),
            name: name.to_string(),
            created_at: now,
        },
        true,
    ))
}

/// One page of domains in `(name, id)` order, optionally filtered by name.
pub async fn list(
    db: &impl ConnectionTrait,
    name: Option<&str>,
    page: &PageRequest,
) -> Result<Page<NvlDomain>> {
    use nvl_domains::Column as C;
    let mut query = nvl_domains::Entity::find();
    if let Some(name) = name {
        query = query.filter(text_matches(C::Name, name));
    }
    let (rows, total) = keyset_rows(db, query, C::Name, C::Id, page).await?;
    let items = rows.into_iter().map(NvlDomain::from).collect();
    Ok(Page::from_rows(
        items,
        page.limit,
        total,
        |d: &NvlDomain| Cursor {
            name: d.name.clone(),
            id: d.id.into(),
        },
    ))
}

/// [`create`] in a transaction of its own, so the domain and its audit entry commit together.
pub async fn create_audited(
    db: &DatabaseConnection,
    id: Option<NvlDomainId>,
    name: &str,
    now: DateTime<Utc>,
) -> Result<(NvlDomain, bool)> {
    let txn = crate::db::begin_write(db).await?;
    let created = create(&txn, id, name, now).await?;
    txn.commit().await?;
    Ok(created)
}

/// Attaches racks (by id or name) to a domain, all or nothing. Racks already in this domain are
/// left as they are; a rack in another domain is a 409 naming it.
pub async fn attach(
    db: &DatabaseConnection,
    domain: &str,
    racks_wanted: &[String],
    now: DateTime<Utc>,
) -> Result<NvlDomain> {
    let txn = crate::db::begin_write(db).await?;
    let domain = get(&txn, domain).await?;
    let mut missing = Vec::new();
    let mut found = Vec::new();
    for (i, wanted) in racks_wanted.iter().enumerate() {
        match resolve_rack(&txn, wanted).await {
            Ok(rack) => found.push((i, rack)),
            Err(Error::NotFound { .. }) => missing.push(FieldError::new(
                format!("racks[{i}]"),
                format!("rack {wanted} not found"),
            )),
            Err(e) => return Err(e),
        }
    }
    if !missing.is_empty() {
        return Err(Error::Invalid(missing));
    }
    let to_attach = ensure_attachable(found, domain.id.into())?;
    let attached: Vec<Uuid> = to_attach.iter().map(|r| r.id).collect();
    for rack in to_attach {
        set_domain(&txn, rack, Some(domain.id.into()), now).await?;
    }
    if !attached.is_empty() {
        let doc = serde_json::json!({"attached_racks": attached});
        let change = crate::audit::Change::new("nvl_domain", domain.id).after(Some(doc));
        crate::audit::record(&txn, change, now).await?;
    }
    txn.commit().await?;
    Ok(domain)
}

/// Detaches one rack from the domain. Detaching a rack that is in no domain is a no-op; one that
/// is in another domain is a 409.
pub async fn detach(
    db: &DatabaseConnection,
    domain: &str,
    rack: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let txn = crate::db::begin_write(db).await?;
    let domain = get(&txn, domain).await?;
    let rack = resolve_rack(&txn, rack).await?;
    match rack.nvl_domain_id {
        Some(d) if d == domain.id => {
            let doc = serde_json::json!({"attached_racks": [rack.id]});
            let change = crate::audit::Change::new("nvl_domain", domain.id).before(Some(doc));
            crate::audit::record(&txn, change, now).await?;
            set_domain(&txn, rack, None, now).await?
        }
        Some(other) => return Err(attached_elsewhere(&rack, other, &domain.name)),
        None => {}
    }
    txn.commit().await?;
    Ok(())
}

async fn set_domain(
    db: &impl ConnectionTrait,
    rack: rack_rows::Model,
    domain: Option<Uuid>,
    now: DateTime<Utc>,
) -> Result<()> {
    let updated = rack_rows::Entity::update_many()
        .col_expr(rack_rows::Column::NvlDomainId, Expr::value(domain))
        .col_expr(rack_rows::Column::Revision, Expr::value(rack.revision + 1))
        .col_expr(rack_rows::Column::UpdatedAt, Expr::value(now))
        .filter(rack_rows::Column::Id.eq(rack.id))
        .filter(rack_rows::Column::Revision.eq(rack.revision))
        .exec(db)
        .await?;
    ensure_one(updated.rows_affected, "rack", rack.id, rack.revision)
}

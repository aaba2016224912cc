//! A whole-site comparison, page by page: what the drift sync and an unscoped validation share.
//! Memory is one page of expected devices, the managers' lists of what they have, and the
//! differences found, never the whole inventory.

use std::collections::{BTreeMap, HashMap};

use sea_orm::ConnectionTrait;
use uuid::Uuid;

use super::Diff;
use super::compare::{self, Sighting};
use super::expected;
use super::observe::{Observer, Source};
use crate::components::{Device, DeviceError, Observation};
use crate::domain::ComponentType;
use crate::error::Result;

/// Expected devices compared per round of manager calls.
pub const PAGE: u64 = 500;

/// What one manager said over the whole walk.
#[derive(Debug)]
pub struct SourceWalk {
    /// `<type>/<provider>`.
    pub source: String,
    pub kind: ComponentType,
    /// Expected devices it reported with no differing field.
    pub matched: u64,
    /// Missing, mismatched and unreachable devices, then (at the end) unexpected ones.
    pub diffs: Vec<Diff>,
    /// Set once the manager failed to answer: its devices from then on are unreachable, and
    /// the sync keeps what it recorded before instead of replacing it.
    pub error: Option<DeviceError>,
}

/// The outcome of a finished walk.
#[derive(Debug, Default)]
pub struct Outcome {
    pub sources: Vec<SourceWalk>,
    /// Expected devices whose type has no manager that reports what it sees.
    pub unchecked: u64,
}

struct State {
    manager: Source,
    walk: SourceWalk,
    /// What the manager has that no expected device claimed yet, by address.
    unclaimed: HashMap<String, Observation>,
}

/// A walk in progress; [`Walk::next_page`] until it returns `None`, then [`Walk::finish`].
pub struct Walk<'a, C: ConnectionTrait> {
    db: &'a C,
    observer: &'a Observer,
    states: Vec<State>,
    page: u64,
    after: Option<Uuid>,
    done: bool,
    unchecked: u64,
}

impl<'a, C: ConnectionTrait> Walk<'a, C> {
    /// Asks every manager for everything it has (one call each, in parallel): the devices no
    /// expected one claims by the end are the unexpected ones. `page` expected devices are
    /// compared per round ([`PAGE`] unless a test wants many rounds).
    pub async fn start(db: &'a C, observer: &'a Observer, page: u64) -> Walk<'a, C> {
        let managers = observer.managers();
        let lists =
            futures::future::join_all(managers.iter().map(|m| observer.ask(m, &[], true))).await;
        let states = managers
            .into_iter()
            .zip(lists)
            .map(|(manager, list)| {
                let (unclaimed, error) = match list {
                    Ok(report) => (
                        report
                            .unlisted
                            .into_iter()
                            .map(|o| (o.address.clone(), o))
                            .collect(),
                        None,
                    ),
                    Err(e) => (HashMap::new(), Some(e)),
                };
                State {
                    walk: SourceWalk {
                        source: manager.name.clone(),
                        kind: manager.kind,
                        matched: 0,
                        diffs: Vec::new(),
                        error,
                    },
                    manager,
                    unclaimed,
                }
            })
            .collect();
        Walk {
            db,
            observer,
            states,
            page: page.max(1),
            after: None,
            done: false,
            unchecked: 0,
        }
    }

    /// Compares the next page of expected devices; returns what managers reported of the
    /// devices they saw (to record), or `None` when every device has been compared.
    pub async fn next_page(&mut self) -> Result<Option<Vec<Sighting>>> {
        if self.done {
            return Ok(None);
        }
        let page = expected::devices_page(self.db, self.after, self.page).await?;
        if (page.len() as u64) < self.page {
            self.done = true;
        }
        let Some(last) = page.last() else {
            return Ok(None);
        };
        self.after = Some(last.component_id);
        let mut by_kind: BTreeMap<ComponentType, Vec<Device>> = BTreeMap::new();
        for device in page {
            by_kind.entry(device.kind).or_default().push(device);
        }
        let observer = self.observer;
        let asks = self.states.iter().map(|state| {
            let devices = by_kind.remove(&state.manager.kind).unwrap_or_default();
            async move {
                let answer = match (&state.walk.error, devices.is_empty()) {
                    (None, false) => Some(observer.ask(&state.manager, &devices, false).await),
                    _ => None,
                };
                (devices, answer)
            }
        });
        let answers = futures::future::join_all(asks).await;
        self.unchecked += by_kind.values().map(|d| d.len() as u64).sum::<u64>();
        let mut sightings = Vec::new();
        for (state, (devices, answer)) in self.states.iter_mut().zip(answers) {
            match answer {
                Some(Ok(report)) => {
                    let c = compare::compare(state.walk.kind, &devices, &report);
                    state.walk.matched += c.matched;
                    state.walk.diffs.extend(c.diffs);
                    sightings.extend(c.sightings);
                    for device in &devices {
                        if let Some(address) = state.manager.inventory.address(device) {
                            state.unclaimed.remove(&address);
                        }
                    }
                }
                Some(Err(error)) => {
                    tracing::warn!(source = %state.walk.source, %error, "manager stopped answering during a whole-site comparison");
                    state
                        .walk
                        .diffs
                        .extend(compare::unreachable(&devices, &error));
                    state.walk.error = Some(error);
                }
                None => {
                    if let Some(error) = &state.walk.error {
                        state
                            .walk
                            .diffs
                            .extend(compare::unreachable(&devices, error));
                    }
                }
            }
        }
        Ok(Some(sightings))
    }

    /// What each manager said; devices no expected one claimed are added as unexpected.
    pub fn finish(self) -> Outcome {
        let sources = self
            .states
            .into_iter()
            .map(|mut state| {
                if state.walk.error.is_none() {
                    let mut unlisted: Vec<Observation> = state.unclaimed.into_values().collect();
                    unlisted.sort_by(|a, b| a.address.cmp(&b.address));
                    let kind = state.walk.kind;
                    state.walk.diffs.extend(
                        unlisted
                            .iter()
                            .map(|extra| compare::unexpected(kind, extra)),
                    );
                }
                state.walk
            })
            .collect();
        Outcome {
            sources,
            unchecked: self.unchecked,
        }
    }
}

//! A device step's heartbeats: how it reports liveness to Temporal, what it learnt on the way,
//! and the firmware update it follows, carried in the beats so a later attempt finds it.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use temporalio_sdk::activities::ActivityContext;

use super::steps::Progress;
use crate::clock::Clock;

/// What a step learnt of its device on the way: an external id from registration, a firmware
/// version from a finished update.
#[derive(Default)]
pub(super) struct Learnt {
    pub external_id: Option<String>,
    pub firmware_version: Option<String>,
    /// Firmware images wait for the rack's AC cycle.
    pub ac_cycle: bool,
}

/// What a step's heartbeats carry (as JSON text): a note for people, and the firmware update
/// the step follows with when it was started. Temporal keeps the last one and hands it to the
/// next attempt, so a retried or re-scheduled step resumes that update instead of pushing again.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Beat {
    note: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    update: Option<FollowedUpdate>,
    /// The recipe in progress and how many of its bundles are finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    recipe: Option<RecipeMark>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct RecipeMark {
    version: String,
    done: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct FollowedUpdate {
    /// The manager's handle ([`crate::components::FirmwareControl::update_handle`]).
    handle: String,
    started_at: chrono::DateTime<chrono::Utc>,
}

pub(super) struct Heartbeat<'a> {
    ctx: &'a ActivityContext,
    clock: &'a dyn Clock,
    pub learnt: std::sync::Mutex<Learnt>,
    update: std::sync::Mutex<Option<FollowedUpdate>>,
    recipe: std::sync::Mutex<Option<RecipeMark>>,
    /// What the previous attempt's last heartbeat carried.
    earlier: Option<FollowedUpdate>,
    earlier_recipe: Option<RecipeMark>,
}

impl<'a> Heartbeat<'a> {
    pub fn new(ctx: &'a ActivityContext, clock: &'a dyn Clock) -> Self {
        let last = ctx
            .heartbeat_details()
            .deserialize::<String>()
            .ok()
            .flatten()
            .and_then(|text| serde_json::from_str::<Beat>(&text).ok())
            .unwrap_or_default();
        Self {
            ctx,
            clock,
            learnt: std::sync::Mutex::new(Learnt::default()),
            // Carried on until this attempt moves past them.
            update: std::sync::Mutex::new(last.update.clone()),
            recipe: std::sync::Mutex::new(last.recipe.clone()),
            earlier: last.update,
            earlier_recipe: last.recipe,
        }
    }

    async fn record(&self, note: &str) {
        let beat = Beat {
            note: note.to_string(),
            update: self.update.lock().ok().and_then(|u| u.clone()),
            recipe: self.recipe.lock().ok().and_then(|r| r.clone()),
        };
        let text = serde_json::to_string(&beat).unwrap_or_default();
        // A lost heartbeat only delays noticing a dead worker; the step goes on.
        let _ = self.ctx.record_heartbeat(text).await;
    }
}

#[async_trait]
impl Progress for Heartbeat<'_> {
    fn registered(&self, external_id: &str) {
        if let Ok(mut learnt) = self.learnt.lock() {
            learnt.external_id = Some(external_id.to_string());
        }
    }

    fn firmware_reported(&self, version: &str) {
        if let Ok(mut learnt) = self.learnt.lock() {
            learnt.firmware_version = Some(version.to_string());
        }
    }

    fn ac_cycle_staged(&self) {
        if let Ok(mut learnt) = self.learnt.lock() {
            learnt.ac_cycle = true;
        }
    }

    async fn beat(&self, note: &str) {
        self.record(note).await;
    }

    fn cancelled(&self) -> bool {
        self.ctx.is_cancelled()
    }

    async fn update_started(&self, handle: &str) {
        // A resumed update keeps the time it was first started.
        let started_at = self
            .earlier
            .as_ref()
            .filter(|e| e.handle == handle)
            .map_or_else(|| self.clock.now(), |e| e.started_at);
        if let Ok(mut slot) = self.update.lock() {
            *slot = Some(FollowedUpdate {
                handle: handle.to_string(),
                started_at,
            });
        }
        self.record("firmware update started").await;
    }

    fn earlier_update(&self) -> Option<String> {
        self.earlier.as_ref().map(|e| e.handle.clone())
    }

    async fn recipe_done(&self, version: &str, done: u32) {
        if let Ok(mut slot) = self.update.lock() {
            *slot = None;
        }
        if let Ok(mut slot) = self.recipe.lock() {
            *slot = Some(RecipeMark {
                version: version.to_string(),
                done,
            });
        }
        self.record(&format!("recipe {version}: {done} bundle(s) done"))
            .await;
    }

    fn earlier_recipe(&self, version: &str) -> u32 {
        self.earlier_recipe
            .as_ref()
            .filter(|r| r.version == version)
            .map_or(0, |r| r.done)
    }
}

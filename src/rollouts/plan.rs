//! The wave planner: orders the targeted racks and cuts them into a canary wave and batches,
//! keeping groups spread. Pure, so a dry run and the executed rollout get the same waves.
//! Also when a window lets waves start.

use std::collections::HashSet;

use super::model::{BatchSize, Order, RackInfo, SpreadBy, Strategy, Window};
use crate::ids::RackId;
use chrono::{DateTime, Duration, Utc};

/// Racks per batch for `total` racks.
pub fn batch_len(size: BatchSize, total: usize) -> usize {
    match size {
        BatchSize::Racks(n) => n as usize,
        BatchSize::Percent(p) => (total * p as usize).div_ceil(100),
    }
    .max(1)
}

/// The group a rack may share a wave with no other rack of; `None` never clashes.
fn group(rack: &RackInfo, spread: SpreadBy) -> Option<String> {
    match spread {
        SpreadBy::None => None,
        SpreadBy::NvlDomain => rack.nvl_domain.map(|d| d.to_string()),
        // A room is only unique within its datacenter.
        SpreadBy::Room => rack
            .room
            .as_ref()
            .map(|room| format!("{}/{room}", rack.datacenter.as_deref().unwrap_or_default())),
    }
}

fn sort(racks: &mut [RackInfo], order: Order) {
    match order {
        Order::Name => racks.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id))),
        Order::Location => racks.sort_by(|a, b| {
            (&a.datacenter, &a.room, &a.position, &a.name, a.id).cmp(&(
                &b.datacenter,
                &b.room,
                &b.position,
                &b.name,
                b.id,
            ))
        }),
    }
}

/// The racks that must share a wave: an NVLink domain's targeted racks (in order, placed where
/// its first rack comes) unless `split_domains`, else each rack alone.
fn units(racks: Vec<RackInfo>, split_domains: bool) -> Vec<Vec<RackInfo>> {
    let mut units: Vec<Vec<RackInfo>> = Vec::new();
    let mut of_domain: std::collections::HashMap<_, usize> = std::collections::HashMap::new();
    for rack in racks {
        match rack.nvl_domain.filter(|_| !split_domains) {
            Some(domain) => match of_domain.get(&domain) {
                Some(&i) => units[i].push(rack),
                None => {
                    of_domain.insert(domain, units.len());
                    units.push(vec![rack]);
                }
            },
            None => units.push(vec![rack]),
        }
    }
    units
}

/// The waves, in run order: a canary wave of `strategy.canary` racks (when above zero), then
/// batches. A wave takes units (see `units`) in order, passing over one that does not fit or
/// one of whose groups it already holds; the passed-over unit goes into a later wave. An empty
/// wave takes the next unit whatever its size, so a domain larger than a wave stays whole.
pub fn plan(mut racks: Vec<RackInfo>, strategy: &Strategy) -> Vec<Vec<RackInfo>> {
    sort(&mut racks, strategy.order);
    let batch = batch_len(strategy.batch_size, racks.len());
    let mut remaining = units(racks, strategy.split_domains);
    let mut waves = Vec::new();
    let mut capacity = if strategy.canary > 0 {
        strategy.canary as usize
    } else {
        batch
    };
    while !remaining.is_empty() {
        let mut groups = HashSet::new();
        let mut wave: Vec<RackInfo> = Vec::new();
        let mut rest = Vec::new();
        for unit in remaining {
            let own: HashSet<String> = unit
                .iter()
                .filter_map(|r| group(r, strategy.spread_by))
                .collect();
            let fits = (wave.is_empty() || wave.len() + unit.len() <= capacity)
                && own.is_disjoint(&groups);
            if fits {
                groups.extend(own);
                wave.extend(unit);
            } else {
                rest.push(unit);
            }
        }
        waves.push(wave);
        remaining = rest;
        capacity = batch;
    }
    waves
}

/// Rack ids per wave, for comparing plans.
pub fn ids(waves: &[Vec<RackInfo>]) -> Vec<Vec<RackId>> {
    waves
        .iter()
        .map(|w| w.iter().map(|r| r.id).collect())
        .collect()
}

/// Whether a window lets a wave start at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowState {
    Open,
    OpensAt(DateTime<Utc>),
    /// A one-time window that has ended: it never opens again.
    Over,
}

/// The window's state at `now`. A daily window opens every day at `start`'s time of day for
/// `end - start`.
pub fn window_state(window: &Window, now: DateTime<Utc>) -> WindowState {
    if now < window.start {
        return WindowState::OpensAt(window.start);
    }
    if !window.daily {
        return if now < window.end {
            WindowState::Open
        } else {
            WindowState::Over
        };
    }
    let length = window.end - window.start;
    let days = (now - window.start).num_days();
    let opened = window.start + Duration::days(days);
    if now < opened + length {
        WindowState::Open
    } else {
        WindowState::OpensAt(opened + Duration::days(1))
    }
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;
    use crate::rollouts::model::{FailureBudget, Verify};

    fn rack(name: &str, domain: Option<u128>) -> RackInfo {
        RackInfo {
            id: Uuid::from_u128(name.bytes().map(u128::from).sum()).into(),
            name: name.into(),
            datacenter: Some("dc1".into()),
            room: Some(format!("room-{}", &name[..1])),
            position: None,
            nvl_domain: domain.map(|d| Uuid::from_u128(d).into()),
        }
    }

    fn strategy(canary: u32, batch: BatchSize, spread: SpreadBy) -> Strategy {
        Strategy {
            order: Order::Name,
            canary,
            batch_size: batch,
            max_concurrent_racks: None,
            pause_between_secs: 0,
            approval_after_canary: false,
            failure_budget: FailureBudget::default(),
            spread_by: spread,
            verify: Verify::None,
            split_domains: true,
        }
    }

    fn names(waves: &[Vec<RackInfo>]) -> Vec<Vec<&str>> {
        waves
            .iter()
            .map(|w| w.iter().map(|r| r.name.as_str()).collect())
            .collect()
    }

    #[test]
    fn canary_first_then_batches_in_name_order() {
        let racks = ["f", "b", "a", "e", "c", "d"]
            .map(|n| rack(n, None))
            .to_vec();
        let waves = plan(racks, &strategy(1, BatchSize::Racks(2), SpreadBy::None));
        assert_eq!(
            names(&waves),
            [vec!["a"], vec!["b", "c"], vec!["d", "e"], vec!["f"]]
        );
    }

    #[test]
    fn a_percentage_rounds_up_and_never_to_zero() {
        assert_eq!(batch_len(BatchSize::Percent(10), 6), 1);
        assert_eq!(batch_len(BatchSize::Percent(10), 400), 40);
        assert_eq!(batch_len(BatchSize::Percent(34), 6), 3);
    }

    #[test]
    fn spread_keeps_one_rack_of_a_domain_per_wave() {
        let racks = vec![
            rack("a", Some(1)),
            rack("b", Some(1)),
            rack("c", Some(2)),
            rack("d", Some(2)),
            rack("e", None),
        ];
        let waves = plan(
            racks,
            &strategy(0, BatchSize::Racks(3), SpreadBy::NvlDomain),
        );
        assert_eq!(names(&waves), [vec!["a", "c", "e"], vec!["b", "d"]]);
    }

    #[test]
    fn a_domain_stays_in_one_wave_unless_told_to_split() {
        let racks = vec![
            rack("a", Some(1)),
            rack("b", None),
            rack("c", Some(1)),
            rack("d", Some(2)),
            rack("e", Some(2)),
            rack("f", Some(2)),
        ];
        let mut whole = strategy(1, BatchSize::Racks(2), SpreadBy::None);
        whole.split_domains = false;
        // The canary takes domain 1 whole (two racks), b follows alone, domain 2 (three racks)
        // overflows a batch of two rather than split.
        assert_eq!(
            names(&plan(racks.clone(), &whole)),
            [vec!["a", "c"], vec!["b"], vec!["d", "e", "f"]]
        );
        whole.spread_by = SpreadBy::NvlDomain;
        assert_eq!(
            names(&plan(racks.clone(), &whole)),
            [vec!["a", "c"], vec!["b"], vec!["d", "e", "f"]]
        );
        let split = strategy(1, BatchSize::Racks(2), SpreadBy::None);
        assert_eq!(
            names(&plan(racks, &split)),
            [vec!["a"], vec!["b", "c"], vec!["d", "e"], vec!["f"]]
        );
    }

    #[test]
    fn daily_windows_reopen_the_next_day() {
        let start = DateTime::parse_from_rfc3339("2026-12-01T22:00:00Z")
            .unwrap()
            .to_utc();
        let w = Window {
            start,
            end: start + Duration::hours(4),
            daily: true,
        };
        let at = |h| start + Duration::hours(h);
        assert_eq!(window_state(&w, at(-1)), WindowState::OpensAt(start));
        assert_eq!(window_state(&w, at(1)), WindowState::Open);
        assert_eq!(window_state(&w, at(5)), WindowState::OpensAt(at(24)));
        assert_eq!(window_state(&w, at(25)), WindowState::Open);
        let once = Window { daily: false, ..w };
        assert_eq!(window_state(&once, at(5)), WindowState::Over);
    }

    #[test]
    fn the_budget_counts_racks_and_shares() {
        let b = FailureBudget {
            max_failed_racks: Some(1),
            max_failed_fraction: Some(0.25),
        };
        assert!(!b.exceeded(1, 10));
        assert!(b.exceeded(2, 10));
        assert!(b.exceeded(1, 3));
    }
}

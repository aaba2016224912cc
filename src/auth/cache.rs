//! Credentials already checked, by the SHA-256 digest of the whole presented credential: a
//! bounded map that evicts the least recently used entry when full. Only successful checks
//! go in, so a forged or altered credential (another digest) is always checked afresh.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

/// SHA-256 of a presented credential: the cache key. The whole credential is hashed, so two
/// credentials share an entry only if they are byte for byte the same.
pub type Digest = [u8; 32];

/// The digest of a credential as presented.
pub fn digest(credential: &str) -> Digest {
    let d = ring::digest::digest(&ring::digest::SHA256, credential.as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(d.as_ref());
    out
}

/// A map of at most `capacity` entries; a full map drops its least recently used entry to make
/// room. Every operation is O(log n) under one short lock (no await inside).
#[derive(Debug)]
pub struct Lru<V> {
    capacity: usize,
    inner: Mutex<Inner<V>>,
}

#[derive(Debug)]
struct Inner<V> {
    /// Entry and the tick it was last used at.
    entries: HashMap<Digest, (V, u64)>,
    /// Ticks in use order, oldest first: the next to evict is the first.
    order: BTreeMap<u64, Digest>,
    tick: u64,
}

impl<V: Clone> Lru<V> {
    /// A map holding at most `capacity` entries (0: holds nothing, every lookup misses).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Mutex::new(Inner {
                entries: HashMap::new(),
                order: BTreeMap::new(),
                tick: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner<V>> {
        // Entries are whole values written under the lock: a panic elsewhere leaves none half-made.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The entry under `key`, marked as just used.
    pub fn get(&self, key: &Digest) -> Option<V> {
        let mut inner = self.lock();
        inner.tick += 1;
        let tick = inner.tick;
        let Inner { entries, order, .. } = &mut *inner;
        let (value, used) = entries.get_mut(key)?;
        order.remove(used);
        order.insert(tick, *key);
        *used = tick;
        Some(value.clone())
    }

    /// Stores `value` under `key`, evicting the least recently used entry when full.
    pub fn insert(&self, key: Digest, value: V) {
        if self.capacity == 0 {
            return;
        }
        let mut inner = self.lock();
        inner.tick += 1;
        let tick = inner.tick;
        let Inner { entries, order, .. } = &mut *inner;
        if let Some((_, used)) = entries.insert(key, (value, tick)) {
            order.remove(&used);
        }
        order.insert(tick, key);
        while entries.len() > self.capacity {
            let Some((_, oldest)) = order.pop_first() else {
                break;
            };
            entries.remove(&oldest);
        }
    }

    /// Drops the entry under `key`, if any.
    pub fn remove(&self, key: &Digest) {
        let mut inner = self.lock();
        if let Some((_, used)) = inner.entries.remove(key) {
            inner.order.remove(&used);
        }
    }

    /// Keeps only the entries `keep` says yes to.
    pub fn retain(&self, mut keep: impl FnMut(&V) -> bool) {
        let mut inner = self.lock();
        let Inner { entries, order, .. } = &mut *inner;
        entries.retain(|_, (value, used)| {
            let kept = keep(value);
            if !kept {
                order.remove(used);
            }
            kept
        });
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> Digest {
        [n; 32]
    }

    #[test]
    fn a_full_cache_evicts_the_least_recently_used_entry() {
        let lru = Lru::new(2);
        lru.insert(key(1), "one");
        lru.insert(key(2), "two");
        assert_eq!(lru.get(&key(1)), Some("one"), "1 is now the most recent");
        lru.insert(key(3), "three");
        assert_eq!(lru.len(), 2);
        assert_eq!(lru.get(&key(2)), None, "2 was the least recently used");
        assert_eq!(lru.get(&key(1)), Some("one"));
        assert_eq!(lru.get(&key(3)), Some("three"));
        lru.insert(key(3), "again");
        assert_eq!(lru.len(), 2, "replacing an entry does not grow the map");
        assert_eq!(lru.get(&key(3)), Some("again"));
    }

    #[test]
    fn entries_can_be_removed_one_by_one_or_by_a_test() {
        let lru = Lru::new(10);
        for n in 0..6 {
            lru.insert(key(n), n);
        }
        lru.remove(&key(0));
        lru.retain(|v| v % 2 == 0);
        assert_eq!(lru.len(), 2);
        assert_eq!(lru.get(&key(2)), Some(2));
        assert_eq!(lru.get(&key(3)), None);
        // The order map stayed consistent: filling up evicts what is oldest among the rest.
        for n in 10..18 {
            lru.insert(key(n), n);
        }
        assert_eq!(lru.len(), 10);
        assert_eq!(lru.get(&key(17)), Some(17));
    }

    #[test]
    fn a_zero_sized_cache_holds_nothing() {
        let lru = Lru::new(0);
        lru.insert(key(1), 1);
        assert!(lru.is_empty());
        assert_eq!(lru.get(&key(1)), None);
    }

    #[test]
    fn the_digest_covers_every_byte_of_the_credential() {
        assert_ne!(digest("a.b.c"), digest("a.b.d"));
        assert_ne!(digest("a.b.c"), digest("a.b.c "));
        assert_eq!(digest("a.b.c"), digest("a.b.c"));
    }
}

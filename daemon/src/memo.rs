//! A sharded memo of values by string key: whole-root calls look up the redacted path of
//! every file in scope from all workers at once, and one lock over one map made them
//! queue on each other. Each shard is dropped wholesale when full (the values are cheap
//! to recompute; the bound is what matters).

use foldhash::HashMap;
use std::hash::BuildHasher;
use std::sync::Mutex;

const SHARDS: usize = 16;

pub struct Memo<V> {
    hasher: foldhash::fast::FixedState,
    shards: [Mutex<HashMap<Box<str>, V>>; SHARDS],
    /// Entries a shard holds before it is cleared.
    per_shard: usize,
}

impl<V: Clone> Memo<V> {
    /// A memo of at most about `capacity` entries.
    pub fn new(capacity: usize) -> Memo<V> {
        Memo {
            hasher: foldhash::fast::FixedState::default(),
            shards: std::array::from_fn(|_| Mutex::new(HashMap::default())),
            per_shard: capacity.div_ceil(SHARDS).max(1),
        }
    }

    fn shard(&self, key: &str) -> &Mutex<HashMap<Box<str>, V>> {
        &self.shards[self.hasher.hash_one(key) as usize % SHARDS]
    }

    /// The value held for `key`, if any.
    pub fn get(&self, key: &str) -> Option<V> {
        self.shard(key).lock().ok()?.get(key).cloned()
    }

    /// Keeps `value` for `key`.
    pub fn insert(&self, key: &str, value: V) {
        if let Ok(mut shard) = self.shard(key).lock() {
            if shard.len() >= self.per_shard {
                shard.clear();
            }
            shard.insert(key.into(), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_values_and_stays_within_its_bound() {
        let memo = Memo::new(32);
        for i in 0..1000 {
            memo.insert(&format!("k{i}"), i);
        }
        assert_eq!(memo.get("k999"), Some(999));
        assert_eq!(memo.get("absent"), None);
        let held: usize = memo.shards.iter().map(|s| s.lock().unwrap().len()).sum();
        assert!(held <= 32, "{held} entries held");
    }
}

//! The index's table of files: one value per path, kept in the order the build listed
//! them (the walk's), found by path through a hash table of their places.
//!
//! Why not a `HashMap` from path to value: a whole-root search screens every file of a
//! 100k-file root, and a lookup in a map that large is three cache misses (control
//! bytes, bucket, the key's string), about half of such a search's time. A call's walk
//! lists files in the order the build did, so [`SlotTable::get`] first tries the entry
//! after the one this thread found last: consecutive in memory, paths included (they
//! were allocated in that order). Any other order, or a file added since, falls back to
//! the hash table; a guess is only ever taken when its path is equal.

use foldhash::fast::FixedState;
use hashbrown::HashTable;
use std::cell::Cell;
use std::hash::BuildHasher;

pub struct SlotTable<T> {
    paths: Vec<Box<str>>,
    values: Vec<T>,
    /// Places in `paths` / `values`, hashed by path.
    places: HashTable<u32>,
    hasher: FixedState,
}

impl<T: std::fmt::Debug> std::fmt::Debug for SlotTable<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlotTable")
            .field("len", &self.values.len())
            .finish()
    }
}

impl<T> Default for SlotTable<T> {
    fn default() -> Self {
        SlotTable {
            paths: Vec::new(),
            values: Vec::new(),
            places: HashTable::new(),
            hasher: FixedState::default(),
        }
    }
}

thread_local! {
    /// The place after the one this thread found last (in whichever table).
    static NEXT: Cell<usize> = const { Cell::new(0) };
}

impl<T> SlotTable<T> {
    /// Adds `value` for `path` after the others, or replaces the value `path` has.
    pub fn insert(&mut self, path: Box<str>, value: T) {
        let hash = self.hasher.hash_one(&*path);
        let paths = &self.paths;
        if let Some(&at) = self.places.find(hash, |&at| paths[at as usize] == path) {
            self.values[at as usize] = value;
            return;
        }
        let at = u32::try_from(self.values.len()).expect("fewer than 2^32 files");
        let (paths, hasher) = (&self.paths, &self.hasher);
        self.places
            .insert_unique(hash, at, |&at| hasher.hash_one(&*paths[at as usize]));
        self.paths.push(path);
        self.values.push(value);
    }

    /// The value of `path`.
    pub fn get(&self, path: &str) -> Option<&T> {
        let guess = NEXT.get();
        let at = if self.paths.get(guess).is_some_and(|p| **p == *path) {
            guess
        } else {
            let hash = self.hasher.hash_one(path);
            *self
                .places
                .find(hash, |&at| *self.paths[at as usize] == *path)? as usize
        };
        NEXT.set(at + 1);
        Some(&self.values[at])
    }

    /// Paths and values, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &T)> {
        self.paths.iter().map(|p| &**p).zip(&self.values)
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Drops spare capacity (a table lives as long as its index).
    pub fn shrink_to_fit(&mut self) {
        self.paths.shrink_to_fit();
        self.values.shrink_to_fit();
        let (paths, hasher) = (&self.paths, &self.hasher);
        self.places
            .shrink_to_fit(|&at| hasher.hash_one(&*paths[at as usize]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_path_in_any_order_and_only_its_own() {
        let mut table = SlotTable::default();
        for i in 0..1000 {
            table.insert(format!("dir/{i}.rs").into(), i);
        }
        assert_eq!(table.len(), 1000);
        // In order (the guess path), backwards and strided (the hash path), repeated.
        for i in (0..1000).chain((0..1000).rev()).chain((0..1000).step_by(7)) {
            assert_eq!(table.get(&format!("dir/{i}.rs")), Some(&i), "{i}");
        }
        // Right after a hit, the next place holds another path: not taken.
        assert_eq!(table.get("dir/5.rs"), Some(&5));
        assert_eq!(table.get("dir/absent.rs"), None);
        assert_eq!(table.get("dir/6.rs"), Some(&6));
        assert_eq!(table.get("dir/6.r"), None);
        // Another table right after: the guess made on the first is checked, not trusted.
        let mut other = SlotTable::default();
        other.insert("dir/8.rs".into(), 80);
        other.insert("x".into(), 1);
        assert_eq!(table.get("dir/7.rs"), Some(&7));
        assert_eq!(other.get("dir/8.rs"), Some(&80));
        assert_eq!(other.get("dir/9.rs"), None);
    }

    #[test]
    fn inserting_a_path_again_replaces_its_value_in_place() {
        let mut table = SlotTable::default();
        table.insert("a".into(), 1);
        table.insert("b".into(), 2);
        table.insert("a".into(), 3);
        table.shrink_to_fit();
        assert_eq!(table.len(), 2);
        assert_eq!(table.get("a"), Some(&3));
        let listed: Vec<(&str, &i32)> = table.iter().collect();
        assert_eq!(listed, vec![("a", &3), ("b", &2)]);
    }
}

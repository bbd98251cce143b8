//! Redacted GitHub answers, per (repo alias set-up, request), shared by every session of
//! the daemon.
//!
//! An entry is younger than the freshness window: served without asking GitHub. Older
//! and with an Etag: asked again with `If-None-Match`, and a `304` (which GitHub does not
//! count against the rate limit) serves it and starts a new window. Entries hold
//! redacted records only (see `records`), keyed by a hash that covers the policy (salt
//! included), the alias's owner, repo, API URL and token, and the request; nothing raw
//! is kept, not even the key's parts. Memory only, bounded in entries and bytes (the
//! oldest go first).

use super::records::{Comment, Detail, Item, Size, Summary};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long an answer is served without a request (GitHub's own `max-age` is 60 s).
pub const FRESH: Duration = Duration::from_secs(30);
const MAX_ENTRIES: usize = 1024;
const MAX_BYTES: usize = 64 * 1024 * 1024;

/// One request's redacted answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// A page of `/issues`: `None` when the answer was no array.
    IssuePage(Option<Vec<Item<Summary>>>),
    /// `/search/issues`'s `items` (empty when absent).
    Search(Vec<Item<Summary>>),
    /// `/issues/<n>`: `None` when it was no issue (a pull request, not an object).
    Issue(Option<Box<Detail>>),
    /// `/issues/<n>/comments`.
    Comments(Vec<Item<Comment>>),
}

impl Answer {
    fn size(&self) -> usize {
        match self {
            Answer::IssuePage(p) => p.as_ref().map_or(0, Size::size),
            Answer::Search(items) => items.size(),
            Answer::Issue(i) => i.as_deref().map_or(8, Size::size),
            Answer::Comments(c) => c.size(),
        }
    }
}

struct Entry {
    answer: Arc<Answer>,
    etag: Option<String>,
    checked: Instant,
    size: usize,
}

/// What the cache knows of a request.
pub enum Lookup {
    /// Within the freshness window: serve it.
    Fresh(Arc<Answer>),
    /// Ask again with this Etag; on `304`, [`Cache::revalidated`] serves the answer.
    Stale {
        etag: String,
    },
    Miss,
}

/// The cache.
pub struct Cache {
    fresh: Duration,
    entries: Mutex<HashMap<[u8; 32], Entry>>,
}

impl Default for Cache {
    fn default() -> Self {
        Cache::new(test_fresh().unwrap_or(FRESH))
    }
}

/// TEST ONLY: `REDCTX_TEST_GITHUB_FRESH_MS` sets the freshness window (0: every call
/// revalidates), so tests see the conditional requests.
fn test_fresh() -> Option<Duration> {
    let ms: u64 = std::env::var("REDCTX_TEST_GITHUB_FRESH_MS")
        .ok()?
        .parse()
        .ok()?;
    tracing::warn!("GitHub cache freshness is {ms} ms (REDCTX_TEST_GITHUB_FRESH_MS, test only)");
    Some(Duration::from_millis(ms))
}

impl Cache {
    pub fn new(fresh: Duration) -> Cache {
        Cache {
            fresh,
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub fn lookup(&self, key: &[u8; 32]) -> Lookup {
        let entries = self.entries.lock().expect("github cache lock");
        match entries.get(key) {
            Some(e) if e.checked.elapsed() < self.fresh => Lookup::Fresh(e.answer.clone()),
            Some(Entry {
                etag: Some(etag), ..
            }) => Lookup::Stale { etag: etag.clone() },
            _ => Lookup::Miss,
        }
    }

    /// After a `304`: the stored answer, fresh again (`None` if it was evicted meanwhile).
    pub fn revalidated(&self, key: &[u8; 32]) -> Option<Arc<Answer>> {
        let mut entries = self.entries.lock().expect("github cache lock");
        let e = entries.get_mut(key)?;
        e.checked = Instant::now();
        Some(e.answer.clone())
    }

    /// Stores a new answer (replacing any older one).
    pub fn store(&self, key: [u8; 32], answer: Arc<Answer>, etag: Option<String>) {
        let size = answer.size() + 128;
        if size > MAX_BYTES / 4 {
            return;
        }
        let mut entries = self.entries.lock().expect("github cache lock");
        entries.insert(
            key,
            Entry {
                answer,
                etag,
                checked: Instant::now(),
                size,
            },
        );
        let mut total: usize = entries.values().map(|e| e.size).sum();
        while entries.len() > MAX_ENTRIES || total > MAX_BYTES {
            let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, e)| e.checked)
                .map(|(k, _)| *k)
            else {
                break;
            };
            total -= entries.remove(&oldest).map_or(0, |e| e.size);
        }
    }

    /// Number of entries (tests).
    pub fn len(&self) -> usize {
        self.entries.lock().expect("github cache lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_then_stale_with_its_etag_then_fresh_again() {
        let cache = Cache::new(Duration::ZERO);
        let key = [7u8; 32];
        assert!(matches!(cache.lookup(&key), Lookup::Miss));
        cache.store(
            key,
            Arc::new(Answer::Search(Vec::new())),
            Some("\"e1\"".into()),
        );
        assert!(matches!(cache.lookup(&key), Lookup::Stale { etag } if etag == "\"e1\""));
        assert_eq!(
            *cache.revalidated(&key).unwrap(),
            Answer::Search(Vec::new())
        );
        // Without an Etag a stale entry is a miss.
        cache.store(key, Arc::new(Answer::Search(Vec::new())), None);
        assert!(matches!(cache.lookup(&key), Lookup::Miss));
        let long = Cache::new(Duration::from_secs(3600));
        long.store(key, Arc::new(Answer::Comments(Vec::new())), None);
        assert!(matches!(long.lookup(&key), Lookup::Fresh(_)));
    }

    #[test]
    fn bounded_in_entries() {
        let cache = Cache::new(FRESH);
        for i in 0..(MAX_ENTRIES + 10) {
            let mut key = [0u8; 32];
            key[..8].copy_from_slice(&(i as u64).to_le_bytes());
            cache.store(key, Arc::new(Answer::Search(Vec::new())), None);
        }
        assert_eq!(cache.len(), MAX_ENTRIES);
    }
}

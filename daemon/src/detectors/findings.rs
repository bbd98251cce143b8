//! An external detector's findings, cached by what they depend on: the text and the
//! detector's identity (name, version, argument). A text the detector has seen under
//! this identity is never sent again, whatever policy asks (a policy edit re-redacts
//! but does not re-detect); a new version misses every entry and re-runs. Nothing here
//! is served: spans still go through the engine's checks, and only answers the
//! detector gave are stored (a refusal is asked again next time).

use super::ExecDetector;
use crate::cache::{self, Cache};
use crate::engine::plugged::{CharSpan, PluggedError, SpanSource};
use std::sync::Arc;

/// One external detector as a policy reaches it.
pub struct Findings {
    detector: Arc<ExecDetector>,
    cache: Option<Arc<Cache>>,
    /// Keys the text hash (the policy salt's content-hash key, so a plain UTF-8 file's
    /// entry shares the file record's hash and lives as long as it).
    hash_key: [u8; 32],
    identity: [u8; 32],
}

impl std::fmt::Debug for Findings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Findings")
            .field("detector", &self.detector)
            .finish_non_exhaustive()
    }
}

/// The digest of a detector's identity in findings keys.
pub fn identity(name: &str, version: &str, argument: &str) -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key("redctx 2026 detector identity v1");
    for part in [name, version, argument] {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    *h.finalize().as_bytes()
}

impl Findings {
    pub fn new(
        detector: Arc<ExecDetector>,
        argument: &str,
        cache: Option<Arc<Cache>>,
        salt: &str,
    ) -> Findings {
        let hello = detector.hello();
        let identity = identity(&hello.name, &hello.version, argument);
        Findings {
            detector,
            cache,
            hash_key: cache::content_hash_key(salt),
            identity,
        }
    }
}

impl SpanSource for Findings {
    fn spans(&self, text: &str) -> Result<Vec<CharSpan>, PluggedError> {
        let hash = cache::content_hash(&self.hash_key, text.as_bytes());
        if let Some(found) = self
            .cache
            .as_ref()
            .and_then(|c| c.get_findings(&hash, &self.identity))
        {
            return Ok(found);
        }
        let spans = self.detector.detect(text)?;
        if let Some(cache) = &self.cache {
            cache.put_findings(&hash, &self.identity, &spans);
        }
        Ok(spans)
    }
}

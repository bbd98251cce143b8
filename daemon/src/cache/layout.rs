//! How records are laid out in redb: the keys of content, file and root records
//! (keyed hashes, never raw values), and the page-sized chunks a content record is
//! stored in.

use super::*;

/// The content table's key of chunk `chunk` of the record under `key`.
pub(super) fn chunk_key(key: &ContentKey, chunk: u32) -> [u8; CONTENT_DB_KEY] {
    chunk_key_at(&content_digest(key), chunk)
}

/// The digest that opens every content table key of the record under `key`.
pub(super) fn content_digest(key: &ContentKey) -> [u8; 32] {
    *blake3::hash(key).as_bytes()
}

/// [`chunk_key`] from the record's [`content_digest`].
pub(super) fn chunk_key_at(digest: &[u8; 32], chunk: u32) -> [u8; CONTENT_DB_KEY] {
    let mut out = [0u8; CONTENT_DB_KEY];
    out[..32].copy_from_slice(digest);
    out[32..].copy_from_slice(&chunk.to_be_bytes());
    out
}

/// Reads the content value under `key` by joining its chunks (numbered from 0, in key
/// order); `Some(None)` when chunks exist but do not make up one whole value.
pub(super) fn read_chunks(
    table: &impl ReadableTable<&'static [u8], &'static [u8]>,
    key: &ContentKey,
) -> Result<Option<Option<Vec<u8>>>, redb::Error> {
    let first = chunk_key(key, 0);
    let last = chunk_key(key, u32::MAX);
    let mut value: Vec<u8> = Vec::new();
    let mut expected = None;
    for (n, item) in table
        .range::<&[u8]>(first.as_slice()..=last.as_slice())?
        .enumerate()
    {
        let (k, v) = item?;
        if k.value()[32..] != (n as u32).to_be_bytes() {
            return Ok(Some(None));
        }
        let chunk = v.value();
        if n == 0 {
            let Some(len) = record::content_value_len(chunk) else {
                return Ok(Some(None));
            };
            // The header is only trusted so far: a bogus length must not allocate much.
            value.reserve_exact(len.min(1 << 20));
            expected = Some(len);
        }
        value.extend_from_slice(chunk);
        if Some(value.len()) >= expected {
            break;
        }
    }
    Ok(match expected {
        None => None,
        Some(len) if len == value.len() => Some(Some(value)),
        Some(_) => Some(None),
    })
}

/// Removes every chunk stored under `key`.
pub(super) fn remove_chunks(
    table: &mut redb::Table<'_, &'static [u8], &'static [u8]>,
    digest: &[u8; 32],
) -> Result<(), redb::Error> {
    let first = chunk_key_at(digest, 0);
    let last = chunk_key_at(digest, u32::MAX);
    table.retain_in::<&[u8], _>(first.as_slice()..=last.as_slice(), |_, _| false)?;
    Ok(())
}

/// redb page cache (the OS page cache holds the rest). A cold index fills it whatever
/// its size (the search build reads every content record back), so it is a fixed part
/// of the daemon's memory. At 24 MiB rather than 32 the real 106k-file corpus's cold
/// index peaked 12 MB lower, at the same latency on the 100k tree (search 36.5 vs
/// 38.5 ms, retrieve 71 vs 78 ms p50, back to back); at 16 MiB retrieve was 20% slower.
pub(super) const DB_CACHE_BYTES: usize = 24 << 20;

/// Key of the content table.
pub type ContentKey = [u8; 96];

/// Builds a content key: content hash, policy fingerprint, and a digest of the per-file
/// context the engine reads besides the bytes (prose flag, the path when detectors use it).
pub fn content_key(hash: &[u8; 32], fingerprint: &[u8; 32], prose: bool, path: &str) -> ContentKey {
    let mut key = [0u8; 96];
    key[..32].copy_from_slice(hash);
    key[32..64].copy_from_slice(fingerprint);
    let mut context = blake3::Hasher::new();
    context.update(&[u8::from(prose)]);
    context.update(path.as_bytes());
    key[64..].copy_from_slice(context.finalize().as_bytes());
    key
}

/// The content key of a file's text: [`content_key`] with the prose flag of `rel` and, as
/// the path context, `rel` itself when the policy runs the detectors (they read the path:
/// file kind, lockfile exemptions) or nothing when it does not, so that the same bytes
/// anywhere in the tree share one record. The sweep derives the live keys of the file
/// table from this, so every file's content must be stored under it.
pub fn file_content_key(
    hash: &[u8; 32],
    fingerprint: &[u8; 32],
    rel: &str,
    path_context: bool,
) -> ContentKey {
    let context = if path_context { rel } else { "" };
    content_key(hash, fingerprint, crate::fs::is_prose_path(rel), context)
}

/// Fingerprint of everything that determines redacted output: the policy (with the
/// engine version), the detector rules, and this build's cache layout epoch.
pub fn policy_fingerprint(policy: &Policy) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new_derive_key("redctx 2025 policy fingerprint v1");
    hasher.update(&ENGINE_EPOCH.to_le_bytes());
    hasher.update(&policy.fingerprint());
    hasher.update(crate::engine::detect::DETECTOR_VERSION.as_bytes());
    *hasher.finalize().as_bytes()
}

/// Key of the keyed content hash for one salt.
pub fn content_hash_key(salt: &str) -> [u8; 32] {
    blake3::derive_key("redctx 2025 content hash v1", salt.as_bytes())
}

/// Keyed blake3 of raw bytes.
pub fn content_hash(key: &[u8; 32], bytes: &[u8]) -> [u8; 32] {
    *blake3::keyed_hash(key, bytes).as_bytes()
}

/// Namespace of one root in the file table.
pub fn root_key(canonical_root: &Path) -> [u8; 32] {
    use std::os::unix::ffi::OsStrExt;
    blake3::derive_key(
        "redctx 2025 root key v1",
        canonical_root.as_os_str().as_bytes(),
    )
}

pub(super) fn file_key(root: &[u8; 32], rel: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(32 + rel.len());
    key.extend_from_slice(root);
    key.extend_from_slice(rel.as_bytes());
    key
}

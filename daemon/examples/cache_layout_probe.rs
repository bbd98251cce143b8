//! Dev tool: how big a cache file different value encodings make. Loads every content
//! record of an existing `cache.redb` of the current format (a copy: the daemon holds the
//! lock on the live file),
//! then replays them into fresh databases the way a cold index pass writes (random key
//! order, commits of `MAX_BATCH_OPS` operations, half of them file records), once per
//! encoding, and prints file size, allocated pages and encode/decode times.
//!
//! `cargo run --release -p redctx-daemon --example cache_layout_probe -- <cache.redb> <out dir> [variant…]`
//! Variants: `lz4` or `zstd<level>`, then `-chunk` (values split into one-per-page
//! chunks) and/or `-k32` (32-byte keys instead of the 96-byte content key). The daemon
//! stores `zstd3-chunk-k32`. Measured on the 100k-file bench tree (388 MB of stored text):
//! `lz4` 389 MB allocated, file 570 MB; `zstd3` 283 / 570; `zstd3-chunk` 265 / 285;
//! `zstd3-chunk-k32` 254 / 285.

use redb::{
    Database, Durability, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition,
};
use redctx_daemon::cache::record::{ContentRecord, PlainVariant, decode_content};
use std::time::Instant;

const CONTENT: TableDefinition<&[u8], &[u8]> = TableDefinition::new("content");
const FILES: TableDefinition<&[u8], &[u8]> = TableDefinition::new("files");

fn body(rec: &ContentRecord) -> Vec<u8> {
    // Same information as the stored body: both texts (when they differ) and counts.
    let mut out = Vec::new();
    out.extend_from_slice(rec.preserved.text.as_bytes());
    if let PlainVariant::Different(p) = &rec.plain {
        out.extend_from_slice(p.text.as_bytes());
    }
    out
}

fn main() {
    let mut args = std::env::args().skip(1);
    let src = args
        .next()
        .expect("usage: cache_layout_probe <cache.redb> <out dir> [variant…]");
    let out = std::path::PathBuf::from(args.next().expect("out dir"));
    let mut variants: Vec<String> = args.collect();
    if variants.is_empty() {
        variants = ["lz4", "zstd1", "zstd3", "zstd1-chunk", "zstd3-chunk"]
            .map(String::from)
            .to_vec();
    }
    std::fs::create_dir_all(&out).unwrap();
    let db = Database::open(&src).expect("open source");
    let r = db.begin_read().unwrap();
    let mut contents: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    // Chunks of one value share the first 32 key bytes and come in order.
    let mut value: Vec<u8> = Vec::new();
    let mut last: Option<Vec<u8>> = None;
    for item in r.open_table(CONTENT).unwrap().iter().unwrap() {
        let (k, v) = item.unwrap();
        let prefix = k.value()[..32].to_vec();
        if last.as_ref() != Some(&prefix) {
            if let Some(key) = last.take() {
                let rec = decode_content(&value).expect("decodes");
                contents.push((key, body(&rec)));
            }
            value.clear();
            last = Some(prefix);
        }
        value.extend_from_slice(v.value());
    }
    if let Some(key) = last {
        contents.push((key, body(&decode_content(&value).expect("decodes"))));
    }
    let mut files: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for item in r.open_table(FILES).unwrap().iter().unwrap() {
        let (k, v) = item.unwrap();
        files.push((k.value().to_vec(), v.value().to_vec()));
    }
    drop(r);
    drop(db);
    // Deterministic shuffle (xorshift): a cold pass writes in walk order, not key order.
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    for i in (1..contents.len()).rev() {
        contents.swap(i, (next() % (i as u64 + 1)) as usize);
    }
    for i in (1..files.len()).rev() {
        files.swap(i, (next() % (i as u64 + 1)) as usize);
    }
    let text: u64 = contents.iter().map(|(_, b)| b.len() as u64).sum();
    println!(
        "{} content records, {:.1} MB of stored text; {} file records",
        contents.len(),
        text as f64 / 1e6,
        files.len()
    );
    for variant in variants {
        let codec: i32 = match variant.split('-').next() {
            Some("lz4") => 0,
            Some(z) if z.starts_with("zstd") => z[4..].parse().expect("zstd level"),
            _ => panic!("unknown variant {variant}"),
        };
        let chunked = variant.contains("-chunk");
        let short_keys = variant.contains("-k32");
        let t = Instant::now();
        let mut compressor = zstd::bulk::Compressor::new(codec.max(1)).unwrap();
        let encoded: Vec<Vec<u8>> = contents
            .iter()
            .map(|(_, b)| {
                if codec == 0 {
                    lz4_flex::block::compress_prepend_size(b)
                } else {
                    compressor.compress(b).unwrap()
                }
            })
            .collect();
        let encode_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut decoded = 0usize;
        let mut decompressor = zstd::bulk::Decompressor::new().unwrap();
        for (e, (_, b)) in encoded.iter().zip(&contents) {
            let d = if codec == 0 {
                lz4_flex::block::decompress_size_prepended(e).unwrap()
            } else {
                decompressor.decompress(e, b.len()).unwrap()
            };
            decoded += d.len();
        }
        let decode_s = t.elapsed().as_secs_f64();
        let values: u64 = encoded.iter().map(|e| e.len() as u64).sum();
        let path = out.join(format!("{variant}.redb"));
        let _ = std::fs::remove_file(&path);
        let db = Database::builder()
            .set_cache_size(32 << 20)
            .create(&path)
            .unwrap();
        let t = Instant::now();
        let per_batch = 1024;
        let mut fi = files.iter();
        for chunk in contents.chunks(per_batch).zip(encoded.chunks(per_batch)) {
            let mut w = db.begin_write().unwrap();
            w.set_durability(Durability::Immediate).unwrap();
            {
                let mut ft = w.open_table(FILES).unwrap();
                let mut ct = w.open_table(CONTENT).unwrap();
                for ((key, _), value) in chunk.0.iter().zip(chunk.1) {
                    // The source holds 32-byte digests; the 96-byte layout is simulated by
                    // repeating one.
                    let key = if short_keys {
                        key.clone()
                    } else {
                        key.repeat(3)
                    };
                    if let Some((fk, fv)) = fi.next() {
                        ft.insert(fk.as_slice(), fv.as_slice()).unwrap();
                    }
                    if chunked {
                        // One chunk per leaf page: 4096 minus the leaf header, the two
                        // offsets and the key.
                        let size = 4096 - 4 - 8 - (key.len() + 4);
                        for (i, piece) in value.chunks(size).enumerate() {
                            let mut k = key.clone();
                            k.extend_from_slice(&(i as u32).to_be_bytes());
                            ct.insert(k.as_slice(), piece).unwrap();
                        }
                    } else {
                        ct.insert(key.as_slice(), value.as_slice()).unwrap();
                    }
                }
            }
            w.commit().unwrap();
        }
        let write_s = t.elapsed().as_secs_f64();
        let len = std::fs::metadata(&path).unwrap().len();
        let w = db.begin_write().unwrap();
        let st = w.stats().unwrap();
        let ct = w.open_table(CONTENT).unwrap();
        let cs = ct.stats().unwrap();
        println!(
            "{variant}: values {:.1} MB ({:.3} of text), encode {:.2}s decode {:.2}s ({} B), write {:.1}s; \
             file {:.1} MB ({:.3} of text), allocated {:.1} MB, stored {:.1}, metadata {:.1}, fragmented {:.1}; \
             content leaves {} fragmented {:.1} MB",
            values as f64 / 1e6,
            values as f64 / text as f64,
            encode_s,
            decode_s,
            decoded,
            write_s,
            len as f64 / 1e6,
            len as f64 / text as f64,
            (st.allocated_pages() * st.page_size() as u64) as f64 / 1e6,
            st.stored_bytes() as f64 / 1e6,
            st.metadata_bytes() as f64 / 1e6,
            st.fragmented_bytes() as f64 / 1e6,
            cs.leaf_pages(),
            cs.fragmented_bytes() as f64 / 1e6,
        );
    }
}

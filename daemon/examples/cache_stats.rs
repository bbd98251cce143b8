//! Dev tool: what a `cache.redb` holds (redb page accounting, value sizes per table; for
//! `content` the entries are chunks, see `cache::CHUNK_BYTES`).
//!
//! `cargo run --release -p redctx-daemon --example cache_stats -- <copy of cache.redb>`
//! (open a copy: the daemon holds the lock on the live file).

use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};

const CONTENT: TableDefinition<&[u8], &[u8]> = TableDefinition::new("content");
const FILES: TableDefinition<&[u8], &[u8]> = TableDefinition::new("files");

fn main() {
    let path = std::env::args_os()
        .nth(1)
        .expect("usage: cache_stats <cache.redb>");
    let file_len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let mut db = Database::open(&path).expect("open");
    if std::env::var("COMPACT").is_ok() {
        let t = std::time::Instant::now();
        while db.compact().expect("compact") {}
        println!("compacted in {:.2}s", t.elapsed().as_secs_f64());
    }
    let file_len = std::fs::metadata(&path)
        .map(|m| m.len())
        .unwrap_or(file_len);
    let w = db.begin_write().expect("write txn");
    let s = w.stats().expect("stats");
    println!(
        "file {:.1} MB; allocated {} pages of {} B = {:.1} MB; stored {:.1} MB, metadata {:.1} MB, fragmented {:.1} MB",
        file_len as f64 / 1e6,
        s.allocated_pages(),
        s.page_size(),
        (s.allocated_pages() * s.page_size() as u64) as f64 / 1e6,
        s.stored_bytes() as f64 / 1e6,
        s.metadata_bytes() as f64 / 1e6,
        s.fragmented_bytes() as f64 / 1e6
    );
    drop(w);
    let r = db.begin_read().expect("read txn");
    for (name, def) in [("content", CONTENT), ("files", FILES)] {
        let t = r.open_table(def).expect("table");
        let st = t.stats().expect("table stats");
        let (mut n, mut keys, mut values, mut raw) = (0u64, 0u64, 0u64, 0u64);
        let mut big = 0u64;
        for item in t.iter().expect("iter") {
            let (k, v) = item.expect("item");
            n += 1;
            keys += k.value().len() as u64;
            let len = v.value().len() as u64;
            values += len;
            if len > 4096 {
                big += len;
            }
            // The first chunk of a content value (chunk number 0) carries its header:
            // format byte, stored length, decoded length.
            if name == "content" && k.value().ends_with(&[0, 0, 0, 0]) && v.value().len() > 9 {
                raw += u32::from_le_bytes(v.value()[5..9].try_into().unwrap()) as u64;
            }
        }
        println!(
            "{name}: {n} entries, keys {:.1} MB, values {:.1} MB (values > 4 KiB: {:.1} MB), \
             uncompressed bodies {:.1} MB; leaf pages {} branch pages {} stored {:.1} MB \
             metadata {:.1} MB fragmented {:.1} MB",
            keys as f64 / 1e6,
            values as f64 / 1e6,
            big as f64 / 1e6,
            raw as f64 / 1e6,
            st.leaf_pages(),
            st.branch_pages(),
            st.stored_bytes() as f64 / 1e6,
            st.metadata_bytes() as f64 / 1e6,
            st.fragmented_bytes() as f64 / 1e6,
        );
    }
}

//! The rehydration map asks the search index which files can show a wanted placeholder
//! and reads only those; that changes how long a submission takes, never its map: the
//! first raw spelling in walk order still wins when a later file spells the same
//! (aliased) value differently, and rehydrating with the index equals rehydrating
//! without it, through edits made after the index was built.

use redctx_daemon::cache::Cache;
use redctx_daemon::cancel::Stop;
use redctx_daemon::engine::{AliasGroup, Category, Engine, Mode, Policy};
use redctx_daemon::index::IndexOptions;
use redctx_daemon::root::{RootOptions, ServedRoot};
use redctx_daemon::view::RootView;
use redctx_daemon::writes::rehydrate_texts;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn policy() -> Policy {
    Policy {
        salt: "writes-map-index-salt".into(),
        mode: Mode::Balanced,
        clients: strs(&["Globex"]),
        people: strs(&["Taylor Reed", "Taylor", "Jordan Vale"]),
        alias_groups: vec![AliasGroup {
            canonical: "Taylor Reed".into(),
            category: Category::PERSON,
            aliases: strs(&["Taylor"]),
        }],
        ..Policy::default()
    }
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, content).unwrap();
}

fn serve(root: &Path, cache: &Arc<Cache>) -> ServedRoot {
    let engine = Arc::new(Engine::new(Arc::new(policy())).unwrap());
    let opts = RootOptions {
        index: IndexOptions {
            gitignore: true,
            threads: 2,
            // Every record settled at once, so the search index covers every file.
            racy_window_ns: 0,
        },
        ..RootOptions::default()
    };
    let view = ServedRoot::open(root, engine, Some(cache.clone()), opts).unwrap();
    view.index_all();
    view.refresh_search_index();
    assert!(view.search_index().is_some(), "a search index was built");
    view
}

/// The placeholders `text` redacts to (content, balanced mode), in order.
fn placeholders(view: &ServedRoot, text: &str) -> Vec<String> {
    let re = regex::Regex::new(r"\[[A-Z_]+_[0-9a-f]{32}(?:\.[0-9a-f]{8})?\]").unwrap();
    let redacted = view
        .engine()
        .redact(
            text,
            redctx_daemon::engine::RedactOptions {
                preserve_line_count: false,
                prose: true,
                path: "x.md",
            },
        )
        .unwrap()
        .text;
    re.find_iter(&redacted)
        .map(|m| m.as_str().to_owned())
        .collect()
}

/// Rehydrates `texts` with the index in use and with none, asserts both agree, and
/// returns the answer and how many files the index ruled out.
fn rehydrate_both(view: &ServedRoot, texts: &[String]) -> (Vec<String>, u64) {
    let before = view.counters().screened_out.load(Ordering::Relaxed);
    let with_index = rehydrate_texts(view, texts, &Stop::never()).unwrap();
    let ruled_out = view.counters().screened_out.load(Ordering::Relaxed) - before;
    let index = view.search_index();
    view.set_search_index(None);
    let scanned = rehydrate_texts(view, texts, &Stop::never()).unwrap();
    view.set_search_index(index);
    assert_eq!(with_index, scanned, "the index changed the map");
    (with_index, ruled_out)
}

#[test]
fn the_first_spelling_in_walk_order_wins_when_the_index_narrows_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    // Filler before the two spellings in walk order, past the files the map reads
    // before it asks the index; the later spelling is written first, so neither
    // creation order nor inode order decides.
    for i in 0..100 {
        write(
            &root,
            &format!("0filler/{i:03}.md"),
            "nothing to see here\n",
        );
    }
    write(&root, "b/second.md", "Taylor signed off.\n");
    write(&root, "a/first.md", "TAYLOR signed off.\n");
    write(&root, "c/jordan.md", "JORDAN VALE and Globex.\n");
    write(&root, "d/jordan.md", "Jordan Vale and GLOBEX.\n");
    let view = serve(&root, &cache);

    // The alias's own form, one placeholder for every spelling of it.
    let linked = placeholders(&view, "Taylor");
    assert_eq!(linked.len(), 1);
    assert!(linked[0].contains('.'), "{linked:?}");
    assert_eq!(placeholders(&view, "TAYLOR"), linked, "one aliased value");
    let jordan = placeholders(&view, "Jordan Vale");
    let globex = placeholders(&view, "Globex");
    let note = format!("By {} with {} for {}.\n", linked[0], jordan[0], globex[0]);
    let (out, ruled_out) = rehydrate_both(&view, &[note]);
    assert_eq!(out, ["By TAYLOR with JORDAN VALE for Globex.\n"]);
    assert!(
        ruled_out >= 60,
        "the index ruled out only {ruled_out} files"
    );

    // A file edited after the index was built is read again: its new spelling wins
    // when it now comes first. (Sizes differ at each edit, so the stat tells even
    // within one timestamp tick.)
    write(&root, "a/first.md", "TaYlOr signed off!\n\n");
    view.upsert("a/first.md");
    let (out, _) = rehydrate_both(&view, &[format!("By {}.\n", linked[0])]);
    assert_eq!(out, ["By TaYlOr.\n"]);

    // Gone from the earlier file: the later spelling is the first one now.
    write(&root, "a/first.md", "nobody signed off.\n");
    view.upsert("a/first.md");
    let (out, _) = rehydrate_both(&view, &[format!("By {}.\n", linked[0])]);
    assert_eq!(out, ["By Taylor.\n"]);
}

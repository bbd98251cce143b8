//! Behaviour of a served root a user would notice: containment and symlink refusals,
//! never-serve rules, listing order, freshness, the persistent cache and `.gitignore`.

use redctx_daemon::cache::{Cache, CacheError};
use redctx_daemon::engine::{Engine, Policy, RedactOptions};
use redctx_daemon::index::IndexOptions;
use redctx_daemon::root::{RootOptions, ServedRoot};
use redctx_daemon::view::{EntryKind, RootView, ViewError};
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;

fn engine_with(policy: Policy) -> Arc<Engine> {
    Arc::new(Engine::new(Arc::new(policy)).unwrap())
}

fn engine() -> Arc<Engine> {
    engine_with(Policy {
        salt: "served-root-test-salt".into(),
        ..Policy::default()
    })
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn opts(gitignore: bool, racy_window_ns: i64) -> RootOptions {
    RootOptions {
        index: IndexOptions {
            gitignore,
            threads: 2,
            racy_window_ns,
        },
        ..RootOptions::default()
    }
}

fn serve(root: &Path) -> ServedRoot {
    ServedRoot::open(root, engine(), None, opts(true, 2_000_000_000)).unwrap()
}

fn names(view: &ServedRoot, rel: &str) -> Vec<String> {
    let dir = view.resolve(rel).unwrap();
    view.children(&dir)
        .unwrap()
        .iter()
        .map(|e| e.name().to_owned())
        .collect()
}

fn expected(view: &ServedRoot, raw: &str, rel: &str, preserve: bool) -> String {
    let prose = redctx_daemon::fs::is_prose_path(rel);
    view.engine()
        .redact(
            raw,
            RedactOptions {
                preserve_line_count: preserve,
                prose,
                path: "",
            },
        )
        .unwrap()
        .text
}

#[test]
fn paths_outside_the_root_and_unknown_ids_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "docs/a.txt", "alpha\n");
    write(dir.path(), "outside.txt", "outside secret\n");
    let view = serve(&root);
    assert_eq!(view.resolve("../outside.txt"), Err(ViewError::OutsideRoot));
    assert_eq!(
        view.resolve("docs/../../outside.txt"),
        Err(ViewError::OutsideRoot)
    );
    let abs_outside = dir.path().join("outside.txt").canonicalize().unwrap();
    assert_eq!(
        view.resolve(abs_outside.to_str().unwrap()),
        Err(ViewError::OutsideRoot)
    );
    assert_eq!(
        view.resolve("@p_deadbeefdead"),
        Err(ViewError::UnknownId("@p_deadbeefdead".into()))
    );
    assert_eq!(view.resolve("docs/missing.txt"), Err(ViewError::Missing));
    let abs_inside = view.root().join("docs/a.txt");
    assert_eq!(
        view.resolve(abs_inside.to_str().unwrap())
            .unwrap()
            .rel
            .as_ref(),
        "docs/a.txt"
    );
}

#[test]
fn walk_and_resolution_skip_and_refuse_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "real/a.txt", "alpha\n");
    write(dir.path(), "outside/secret.txt", "outside secret\n");
    symlink(dir.path().join("outside/secret.txt"), root.join("link.txt")).unwrap();
    symlink(dir.path().join("outside"), root.join("linkdir")).unwrap();
    symlink(root.join("nowhere"), root.join("broken")).unwrap();
    let view = serve(&root);
    assert_eq!(names(&view, "."), vec!["real"]);
    for rel in ["link.txt", "linkdir", "linkdir/secret.txt", "broken"] {
        assert_eq!(view.resolve(rel), Err(ViewError::Unsafe), "{rel}");
    }
}

#[test]
fn a_file_swapped_for_a_symlink_after_listing_is_refused_by_id_path_and_entry() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "notes.txt", "harmless\n");
    write(dir.path(), "outside.txt", "outside secret\n");
    let view = serve(&root);
    let entry = view.resolve("notes.txt").unwrap();
    let id = view.path("notes.txt").id.to_string();
    assert_eq!(
        view.content(&entry, true).unwrap().text.as_ref(),
        expected(&view, "harmless\n", "notes.txt", true)
    );

    std::fs::remove_file(root.join("notes.txt")).unwrap();
    symlink(dir.path().join("outside.txt"), root.join("notes.txt")).unwrap();

    assert_eq!(view.content(&entry, true), Err(ViewError::Unsafe));
    assert_eq!(view.resolve("notes.txt"), Err(ViewError::Unsafe));
    let by_id = view.resolve(&id);
    assert!(
        matches!(by_id, Err(ViewError::UnknownId(_)) | Err(ViewError::Unsafe)),
        "{by_id:?}"
    );
    assert!(names(&view, ".").is_empty());
}

#[test]
fn never_serve_files_stay_hidden_with_include_private() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let secrets = [
        ".env",
        ".ENV",
        ".env.local",
        "server.key",
        "server.pem",
        "server.PEM",
        "SERVER.Key",
        "host.CRT",
        ".Agent-Context-Redactor.toml",
        "terms/people.txt",
        "myconfig.toml",
        "rules/deep/r.yaml",
    ];
    for rel in secrets {
        write(&root, rel, "raw secret\n");
    }
    write(&root, "normal.md", "fine\n");
    write(&root, "personal/diary.md", "private\n");
    let policy = Policy {
        salt: "s".into(),
        term_files: vec!["terms/people.txt".into()],
        protected_paths: vec!["myconfig.toml".into(), "rules".into()],
        ..Policy::default()
    };
    let options = RootOptions {
        include_private: true,
        ..opts(true, 2_000_000_000)
    };
    let view = ServedRoot::open(&root, engine_with(policy), None, options).unwrap();
    for rel in secrets {
        assert_eq!(view.resolve(rel), Err(ViewError::Excluded), "{rel}");
    }
    assert_eq!(names(&view, "."), vec!["personal", "terms", "normal.md"]);
    assert!(names(&view, "terms").is_empty());
    assert!(view.resolve("personal/diary.md").is_ok());
    assert!(view.resolve("normal.md").is_ok());
}

#[test]
fn default_exclusions_are_never_walked_or_resolved() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "node_modules/pkg/index.js", "x\n");
    write(&root, "src/node_modules/y.js", "x\n");
    write(&root, "personal/secret.md", "Raw secret\n");
    write(&root, "img/logo.png", "png\n");
    write(&root, ".github/workflows/ci.yml", "on: push\n");
    write(&root, "src/main.py", "print(1)\n");
    let view = serve(&root);
    // `img` stays listed (only its file is excluded), as in the reference.
    assert_eq!(names(&view, "."), vec![".github", "img", "src"]);
    assert!(names(&view, "img").is_empty());
    assert_eq!(names(&view, "src"), vec!["main.py"]);
    assert_eq!(view.resolve("personal/secret.md"), Err(ViewError::Excluded));
    assert_eq!(view.resolve("img/logo.png"), Err(ViewError::Excluded));
    assert_eq!(view.index().counts(), (2, 4));
    let mut dirs = view.index().dirs();
    dirs.sort();
    assert_eq!(
        dirs,
        vec![".", ".github", ".github/workflows", "img", "src"]
    );
}

#[test]
fn children_come_directories_first_then_files_by_casefolded_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    for rel in [
        "b.txt",
        "A.txt",
        "_x",
        "e.txt",
        "Éa.txt",
        "Straße.txt",
        "strasse1.txt",
    ] {
        write(&root, rel, "x\n");
    }
    std::fs::create_dir_all(root.join("Zdir")).unwrap();
    std::fs::create_dir_all(root.join("adir")).unwrap();
    let view = serve(&root);
    // Python: sorted(key=(is_file, name.casefold())); "straße" folds to "strasse".
    assert_eq!(
        names(&view, "."),
        vec![
            "adir",
            "Zdir",
            "_x",
            "A.txt",
            "b.txt",
            "e.txt",
            "Straße.txt",
            "strasse1.txt",
            "Éa.txt"
        ]
    );
}

/// Sets a directory's mtime an hour back, so that the next change to its entries moves
/// its stat whatever the filesystem's timestamp granularity.
fn age(path: &Path) {
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::open(path)
        .unwrap()
        .set_modified(past)
        .unwrap();
}

/// The depth-3 tree a user expects for `rows` (rel, is_dir) in pre-order, from the
/// view's own path ids and name redaction.
fn expected_tree(view: &ServedRoot, rows: &[(&str, bool)]) -> String {
    let mut out = format!("{} ./\n", view.path(".").id);
    for (rel, is_dir) in rows {
        let depth = rel.matches('/').count() + 1;
        let name = rel.rsplit('/').next().unwrap();
        out.push_str(&format!(
            "{}{} {}{}\n",
            "  ".repeat(depth),
            view.path(rel).id,
            view.name(name).text,
            if *is_dir { "/" } else { "" }
        ));
    }
    out
}

#[test]
fn tree_answers_are_fresh_without_restating_each_file_and_never_show_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "docs/a.txt", "a\n");
    write(&root, "docs/b.txt", "b\n");
    write(dir.path(), "outside.txt", "outside secret\n");
    age(&root);
    age(&root.join("docs"));
    // Listings are trusted as soon as they are read (no racy window), the case where a
    // missed change would show.
    let view = ServedRoot::open(&root, engine(), None, opts(true, 0)).unwrap();
    let tree = || {
        redctx_daemon::tools::tree(
            &view,
            &redctx_daemon::tools::TreeArgs::default(),
            &redctx_daemon::cancel::Stop::never(),
        )
    };
    let initial = expected_tree(
        &view,
        &[("docs", true), ("docs/a.txt", false), ("docs/b.txt", false)],
    );
    assert_eq!(tree().text, initial);
    // A rewrite in place leaves the directory alone; the tree shows no sizes.
    std::fs::write(root.join("docs/a.txt"), "a much longer text than before\n").unwrap();
    assert_eq!(tree().text, initial);

    // A file swapped for a symlink to a file outside the root disappears.
    std::fs::remove_file(root.join("docs/b.txt")).unwrap();
    symlink(dir.path().join("outside.txt"), root.join("docs/b.txt")).unwrap();
    assert_eq!(
        tree().text,
        expected_tree(&view, &[("docs", true), ("docs/a.txt", false)])
    );

    // A file replaced by a directory is shown, and expanded, as one; a new file appears.
    age(&root.join("docs"));
    assert_eq!(
        tree().text,
        expected_tree(&view, &[("docs", true), ("docs/a.txt", false)])
    );
    std::fs::remove_file(root.join("docs/a.txt")).unwrap();
    write(&root, "docs/a.txt/inner.txt", "inner\n");
    write(&root, "docs/c.txt", "c\n");
    assert_eq!(
        tree().text,
        expected_tree(
            &view,
            &[
                ("docs", true),
                ("docs/a.txt", true),
                ("docs/a.txt/inner.txt", false),
                ("docs/c.txt", false)
            ]
        )
    );

    // A directory swapped for a symlink to a directory is neither shown nor entered.
    age(&root);
    assert!(tree().text.contains(" docs/\n"));
    std::fs::rename(root.join("docs"), dir.path().join("moved")).unwrap();
    symlink(dir.path().join("moved"), root.join("docs")).unwrap();
    assert_eq!(tree().text, expected_tree(&view, &[]));
}

#[test]
fn a_rewrite_with_the_same_size_and_mtime_is_still_seen() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "a.txt", "one\n");
    let state = dir.path().join("state");
    let cache = Arc::new(Cache::open(&state).unwrap());
    let view = ServedRoot::open(&root, engine(), Some(cache), opts(true, 2_000_000_000)).unwrap();
    let entry = view.resolve("a.txt").unwrap();
    assert_eq!(
        view.content(&entry, true).unwrap().text.as_ref(),
        expected(&view, "one\n", "a.txt", true)
    );
    let mtime = std::fs::metadata(root.join("a.txt"))
        .unwrap()
        .modified()
        .unwrap();

    std::fs::write(root.join("a.txt"), "two\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(root.join("a.txt"))
        .unwrap()
        .set_modified(mtime)
        .unwrap();

    assert_eq!(
        view.content(&entry, true).unwrap().text.as_ref(),
        expected(&view, "two\n", "a.txt", true)
    );
    assert_eq!(
        view.content(&entry, false).unwrap().text.as_ref(),
        expected(&view, "two\n", "a.txt", false)
    );
}

#[test]
fn files_created_after_the_walk_are_visible_without_refresh() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "docs/old.md", "old\n");
    let view = serve(&root);
    assert_eq!(names(&view, "docs"), vec!["old.md"]);

    write(&root, "docs/new.md", "new\n");
    write(&root, "fresh/deep/x.txt", "deep\n");
    assert_eq!(names(&view, "docs"), vec!["new.md", "old.md"]);
    assert_eq!(names(&view, "."), vec!["docs", "fresh"]);
    let id = view.path("fresh/deep/x.txt").id.to_string();
    // A file in a directory nobody listed yet: the path resolves, then its id does.
    let by_path = view.resolve("fresh/deep/x.txt").unwrap();
    assert_eq!(by_path.kind, EntryKind::File);
    assert_eq!(view.resolve(&id).unwrap().rel.as_ref(), "fresh/deep/x.txt");
    assert_eq!(
        view.content(&by_path, true).unwrap().text.as_ref(),
        expected(&view, "deep\n", "fresh/deep/x.txt", true)
    );

    std::fs::remove_file(root.join("docs/old.md")).unwrap();
    assert_eq!(names(&view, "docs"), vec!["new.md"]);
    std::fs::write(root.join("docs/new.md"), "grown content\n").unwrap();
    let listed = view.children(&view.resolve("docs").unwrap()).unwrap();
    assert_eq!(listed[0].size, "grown content\n".len() as u64);
}

#[test]
fn watcher_calls_keep_the_index_current() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "a.txt", "a\n");
    let view = serve(&root);
    let index = view.index();
    write(&root, "b.txt", "b\n");
    view.upsert("b.txt");
    assert!(index.contains("b.txt"));
    write(&root, "newdir/one.txt", "1\n");
    write(&root, "newdir/sub/two.txt", "2\n");
    write(&root, "newdir/node_modules/skip.js", "x\n");
    view.rescan_dir("newdir");
    assert!(index.contains("newdir/sub/two.txt"));
    assert!(!index.contains("newdir/node_modules"));
    std::fs::remove_file(root.join("a.txt")).unwrap();
    view.remove("a.txt");
    assert!(!index.contains("a.txt"));
    std::fs::remove_dir_all(root.join("newdir")).unwrap();
    view.upsert("newdir");
    assert!(!index.contains("newdir/one.txt"));
    assert_eq!(index.counts(), (1, 0));
}

#[test]
fn identical_files_are_redacted_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "one.py", "value = 1\n");
    write(&root, "two.py", "value = 1\n");
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let view = ServedRoot::open(&root, engine(), Some(cache), opts(true, 0)).unwrap();
    for rel in ["one.py", "two.py"] {
        view.content(&view.resolve(rel).unwrap(), true).unwrap();
    }
    let c = view.counters();
    assert_eq!(
        c.content_reads.load(std::sync::atomic::Ordering::Relaxed),
        2
    );
    assert_eq!(c.redactions.load(std::sync::atomic::Ordering::Relaxed), 1);
}

#[test]
fn a_restart_reuses_the_cache_without_reading_content() {
    use std::sync::atomic::Ordering::Relaxed;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let state = dir.path().join("state");
    for i in 0..20 {
        write(
            &root,
            &format!("src/m{i}.py"),
            &format!("value_{i} = {i}\n"),
        );
    }
    write(&root, "bin/blob.dat", "\u{0}\u{1}binary");
    {
        let cache = Arc::new(Cache::open(&state).unwrap());
        let view = ServedRoot::open(&root, engine(), Some(cache.clone()), opts(true, 0)).unwrap();
        view.index_all();
        let p = view.progress();
        assert_eq!(
            (
                p.files_seen,
                p.files_indexed,
                p.files_read,
                p.files_skipped,
                p.files_pending
            ),
            (21, 20, 20, 1, 0)
        );
        assert!(p.finished && !p.running);
        cache.flush();
    }
    let cache = Arc::new(Cache::open(&state).unwrap());
    let view = ServedRoot::open(&root, engine(), Some(cache), opts(true, 0)).unwrap();
    view.index_all();
    let p = view.progress();
    assert_eq!((p.files_indexed, p.files_read, p.files_skipped), (20, 0, 1));
    let entry = view.resolve("src/m7.py").unwrap();
    assert_eq!(
        view.content(&entry, true).unwrap().text.as_ref(),
        expected(&view, "value_7 = 7\n", "src/m7.py", true)
    );
    assert_eq!(view.stat_line_count(&entry), Ok(1));
    assert_eq!(
        view.content(&view.resolve("bin/blob.dat").unwrap(), true),
        Err(ViewError::NotText)
    );
    assert_eq!(view.counters().content_reads.load(Relaxed), 0);
    // The restart left each reused file's text decision in the index: the first
    // whole-root call lists them decided instead of looking each up in the cache.
    let index = view.index();
    for (rel, text) in [("src/m7.py", true), ("bin/blob.dat", false)] {
        let stat = index.indexed_stat(rel).unwrap();
        assert_eq!(index.text_flag(rel, &stat), Some(text), "{rel}");
    }
}

#[test]
fn a_pass_over_more_files_than_the_read_ahead_window_reads_each_exactly_once() {
    use std::sync::atomic::Ordering::Relaxed;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    // More files than the prefetcher's window, across directories, mixed with files the
    // pass never reads (binary, over the per-file limit).
    let texts: u64 = 1_500;
    for i in 0..texts {
        write(
            &root,
            &format!("pkg{}/m{i}.py", i % 37),
            &format!("api_key_{i} = {i}\n"),
        );
    }
    write(&root, "pkg3/blob.bin", "\u{0}\u{1}binary");
    let big = "x".repeat(2_000);
    write(&root, "pkg4/big.txt", &big);
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let mut options = opts(true, 0);
    options.limits.max_raw_bytes_per_file = 1_000;
    let view = ServedRoot::open(&root, engine(), Some(cache), options).unwrap();
    view.index_all();
    let p = view.progress();
    assert_eq!(
        (p.files_seen, p.files_indexed, p.files_read, p.files_skipped),
        (texts + 2, texts, texts, 2)
    );
    // Each file was read once: none twice, none left for the first call (the small
    // binary is read whole and refused on its bytes; the one over the limit not at all).
    assert_eq!(view.counters().content_reads.load(Relaxed), texts + 1);
    let entry = view.resolve("pkg19/m1499.py").unwrap();
    assert_eq!(
        view.content(&entry, true).unwrap().text.as_ref(),
        expected(&view, "api_key_1499 = 1499\n", "pkg19/m1499.py", true)
    );
    assert_eq!(view.counters().content_reads.load(Relaxed), texts + 1);
}

#[test]
fn a_policy_change_does_not_reuse_cached_text() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "a.py", "value = 1\n");
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let first = ServedRoot::open(&root, engine(), Some(cache.clone()), opts(true, 0)).unwrap();
    first.index_all();
    let policy = Policy {
        salt: "another-salt".into(),
        terms: vec!["value".into()],
        ..Policy::default()
    };
    let second = ServedRoot::open(&root, engine_with(policy), Some(cache), opts(true, 0)).unwrap();
    second.index_all();
    assert_eq!(second.progress().files_read, 1);
}

#[test]
fn edits_and_a_policy_change_leave_one_content_record_per_file_and_reads_stay_hits() {
    use std::sync::atomic::Ordering::Relaxed;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    for i in 0..4 {
        write(
            &root,
            &format!("src/m{i}.py"),
            &format!("value_{i} = {i}\n"),
        );
    }
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let first = ServedRoot::open(&root, engine(), Some(cache.clone()), opts(true, 0)).unwrap();
    first.index_all();
    // Every edit stores new content and leaves the old behind until a sweep.
    for n in 0..5 {
        write(
            &root,
            "src/m0.py",
            &format!("value_0 = {}\n", "9".repeat(n + 2)),
        );
        let entry = first.resolve("src/m0.py").unwrap();
        first.content(&entry, true).unwrap();
    }
    cache.flush();
    assert_eq!(cache.content_records(), Some(9));

    // Same salt (same content hashes), another term: another policy.
    let policy = Policy {
        salt: "served-root-test-salt".into(),
        terms: vec!["value".into()],
        ..Policy::default()
    };
    let second = ServedRoot::open(
        &root,
        engine_with(policy),
        Some(cache.clone()),
        opts(true, 0),
    )
    .unwrap();
    second.index_all();
    assert_eq!(second.progress().files_read, 4);
    // The pass asked for a sweep before it ended; `flush` waits for it. The first policy
    // still serves the root, so what it serves now stays; its older versions go.
    cache.flush();
    assert_eq!(cache.stats().swept_records.load(Relaxed), 5);
    assert_eq!(cache.content_records(), Some(8));
    // Dropping the first policy's snapshot sweeps what was kept for it.
    drop(first);
    cache.flush();
    assert_eq!(cache.stats().swept_records.load(Relaxed), 9);
    assert_eq!(cache.content_records(), Some(4));
    let reads = second.counters().content_reads.load(Relaxed);
    for i in 0..4 {
        let entry = second.resolve(&format!("src/m{i}.py")).unwrap();
        assert!(
            !second
                .content(&entry, true)
                .unwrap()
                .text
                .contains("value_")
        );
    }
    assert_eq!(
        second.counters().content_reads.load(Relaxed),
        reads,
        "all hits"
    );
}

/// A root of three files, a shared cache, and a way to serve the root, indexed, under
/// the test's default policy (`false`) or under [`other_policy`] (`true`).
fn two_policy_root() -> (tempfile::TempDir, Arc<Cache>, impl Fn(bool) -> ServedRoot) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    for i in 0..3 {
        write(&root, &format!("m{i}.py"), &format!("value_{i} = {i}\n"));
    }
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let shared = cache.clone();
    let open = move |other: bool| {
        let engine = if other {
            engine_with(other_policy())
        } else {
            engine()
        };
        let view = ServedRoot::open(&root, engine, Some(shared.clone()), opts(true, 0)).unwrap();
        view.index_all();
        view
    };
    (dir, cache, open)
}

/// A second option set for the root of [`two_policy_root`]: `value` is a term.
fn other_policy() -> Policy {
    Policy {
        salt: "served-root-test-salt".into(),
        terms: vec!["value".into()],
        ..Policy::default()
    }
}

#[test]
fn a_policy_changed_back_reuses_its_content_and_the_sweep_keeps_it() {
    use std::sync::atomic::Ordering::Relaxed;
    let (_dir, cache, open) = two_policy_root();
    let first = open(false);
    // Another option set of the same root rewrites the records; the first still serves.
    let second = open(true);
    cache.flush();
    assert_eq!(cache.content_records(), Some(6));
    drop(second);
    // Back to the first policy: its content is reused, its records re-stored naming it,
    // and the pass's sweep takes the other policy's content only.
    let third = open(false);
    drop(first);
    cache.flush();
    assert_eq!(third.progress().files_read, 0);
    assert_eq!(cache.stats().swept_records.load(Relaxed), 3);
    assert_eq!(cache.content_records(), Some(3));
    for i in 0..3 {
        let entry = third.resolve(&format!("m{i}.py")).unwrap();
        assert!(third.content(&entry, true).unwrap().text.contains("value_"));
    }
    assert_eq!(third.counters().content_reads.load(Relaxed), 0, "all hits");
}

#[test]
fn two_option_sets_served_at_once_restart_without_rewriting_each_others_records() {
    use std::sync::atomic::Ordering::Relaxed;
    let (_dir, cache, open) = two_policy_root();
    let first = open(false);
    let second = open(true);
    cache.flush();
    let ops = cache.stats().committed_ops.load(Relaxed);
    // Each option set restarts while the other one still serves the root.
    let third = open(false);
    drop(first);
    let fourth = open(true);
    drop(second);
    cache.flush();
    assert_eq!(
        (third.progress().files_read, fourth.progress().files_read),
        (0, 0)
    );
    assert_eq!(
        cache.stats().committed_ops.load(Relaxed),
        ops,
        "no file record rewritten"
    );
    assert_eq!(cache.content_records(), Some(6));
    for view in [&third, &fourth] {
        for i in 0..3 {
            let entry = view.resolve(&format!("m{i}.py")).unwrap();
            view.content(&entry, true).unwrap();
        }
        assert_eq!(view.counters().content_reads.load(Relaxed), 0, "all hits");
    }
}

#[test]
fn a_corrupt_cache_file_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::write(
        state.join("cache.redb"),
        b"this is not a redb database at all, just garbage bytes",
    )
    .unwrap();
    let cache = Cache::open(&state).unwrap();
    assert!(
        cache
            .stats()
            .rebuilt_on_open
            .load(std::sync::atomic::Ordering::Relaxed)
    );
    drop(cache);

    // A valid database cut in half is rebuilt as well.
    let root = dir.path().join("root");
    write(&root, "a.py", "value = 1\n");
    {
        let cache = Arc::new(Cache::open(&state).unwrap());
        let view = ServedRoot::open(&root, engine(), Some(cache.clone()), opts(true, 0)).unwrap();
        view.index_all();
        cache.flush();
    }
    let len = std::fs::metadata(state.join("cache.redb")).unwrap().len();
    std::fs::File::options()
        .write(true)
        .open(state.join("cache.redb"))
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let cache = Arc::new(Cache::open(&state).unwrap());
    let view = ServedRoot::open(&root, engine(), Some(cache), opts(true, 0)).unwrap();
    let entry = view.resolve("a.py").unwrap();
    assert_eq!(
        view.content(&entry, true).unwrap().text.as_ref(),
        expected(&view, "value = 1\n", "a.py", true)
    );
}

#[test]
fn a_second_cache_on_the_same_state_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _first = Cache::open(dir.path()).unwrap();
    assert!(matches!(
        Cache::open(dir.path()),
        Err(CacheError::AlreadyOpen)
    ));
}

#[test]
fn the_state_dir_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("a/state");
    let _cache = Cache::open(&state).unwrap();
    assert_eq!(
        std::fs::metadata(&state).unwrap().permissions().mode() & 0o777,
        0o700
    );
}

#[test]
fn gitignore_is_honoured_by_default_and_can_be_switched_off() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, ".gitignore", "build/\n*.log\n!keep.log\n");
    write(&root, "build/out.txt", "x\n");
    write(&root, "a.log", "x\n");
    write(&root, "keep.log", "x\n");
    write(&root, "sub/.gitignore", "x.txt\n");
    write(&root, "sub/x.txt", "x\n");
    write(&root, "sub/y.txt", "y\n");
    let on = serve(&root);
    assert_eq!(names(&on, "."), vec!["sub", ".gitignore", "keep.log"]);
    assert_eq!(names(&on, "sub"), vec![".gitignore", "y.txt"]);
    assert_eq!(on.resolve("build/out.txt"), Err(ViewError::Excluded));
    assert_eq!(on.resolve("sub/x.txt"), Err(ViewError::Excluded));

    let off = ServedRoot::open(&root, engine(), None, opts(false, 2_000_000_000)).unwrap();
    assert_eq!(
        names(&off, "."),
        vec!["build", "sub", ".gitignore", "a.log", "keep.log"]
    );
    assert!(off.resolve("sub/x.txt").is_ok());
}

#[test]
fn gitignore_matching_agrees_with_the_ignore_crates_walker() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(
        &root,
        ".gitignore",
        "/target\n*.tmp\ndocs/**/draft*\n!docs/keep/draft-ok.md\nlogs/\n",
    );
    for rel in [
        "target/debug/x",
        "sub/target/y.rs",
        "a.tmp",
        "sub/b.tmp",
        "docs/a/draft1.md",
        "docs/keep/draft-ok.md",
        "docs/keep/draft-no.md",
        "logs/today.txt",
        "src/logs",
        "src/lib.rs",
        "nested/.gitignore",
        "nested/z.rs",
    ] {
        write(&root, rel, "x\n");
    }
    std::fs::write(root.join("nested/.gitignore"), "*.rs\n").unwrap();
    let view = serve(&root);
    let mut ours: Vec<String> = view
        .index()
        .files()
        .into_iter()
        .map(|(rel, _)| rel)
        .collect();
    ours.sort();
    let canonical = root.canonicalize().unwrap();
    let mut theirs: Vec<String> = ignore::WalkBuilder::new(&canonical)
        .hidden(false)
        .git_ignore(true)
        .require_git(false)
        .parents(false)
        .git_global(false)
        .git_exclude(false)
        .ignore(false)
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| {
            e.path()
                .strip_prefix(&canonical)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    theirs.sort();
    assert_eq!(ours, theirs);
}

#[test]
fn oversized_and_binary_files_are_metadata_only() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "big.txt", "0123456789abcdefghij0123456789\n");
    write(&root, "nul.txt", "text\u{0}with nul\n");
    write(&root, "blob.dat", "\u{0}\u{0}\u{0}");
    write(&root, "script", "#!/bin/sh\necho hi\n");
    let mut options = opts(true, 0);
    options.limits.max_raw_bytes_per_file = 20;
    let view = ServedRoot::open(&root, engine(), None, options).unwrap();
    let big = view.resolve("big.txt").unwrap();
    assert_eq!(big.size, 31);
    assert!(view.is_text(&big));
    assert_eq!(view.content(&big, true), Err(ViewError::FileByteLimit));
    assert_eq!(view.stat_line_count(&big), Err(ViewError::FileByteLimit));
    let nul = view.resolve("nul.txt").unwrap();
    assert!(view.is_text(&nul));
    assert_eq!(view.content(&nul, true), Err(ViewError::NotText));
    assert!(!view.is_text(&view.resolve("blob.dat").unwrap()));
    assert!(view.is_text(&view.resolve("script").unwrap()));
    assert_eq!(
        view.content(&view.resolve(".").unwrap(), true),
        Err(ViewError::NotAFile)
    );
}

#[test]
fn the_indexing_pass_reads_each_file_once_without_following_a_symlink_or_waiting_on_a_fifo() {
    use std::sync::atomic::Ordering::Relaxed;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(
        &root,
        "notes.txt",
        "password = \"Hunter2-Very-Secret-99\"\n",
    );
    write(&root, "src/code.rs", "let token = \"abc\";\n");
    write(&root, "small.bin", "\u{0}\u{1}binary\u{0}");
    // Larger than the pass reads before sniffing: refused from its first page.
    let mut large = vec![0u8; 300 << 10];
    large[..4].copy_from_slice(b"\x7fELF");
    std::fs::write(root.join("large.bin"), &large).unwrap();
    write(&root, "swapped.rs", "fn main() {}\n");
    write(&root, "pipe.txt", "listed as a file\n");
    std::fs::write(dir.path().join("outside.rs"), "OUTSIDE-RAW-CONTENT\n").unwrap();
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let view =
        Arc::new(ServedRoot::open(&root, engine(), Some(cache.clone()), opts(true, 0)).unwrap());
    // Listed as files, then replaced before the pass: by a symlink out of the root, and
    // by a FIFO nobody writes to (opening it for reading must not wait for a writer).
    std::fs::remove_file(root.join("swapped.rs")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside.rs"), root.join("swapped.rs")).unwrap();
    std::fs::remove_file(root.join("pipe.txt")).unwrap();
    let fifo = std::ffi::CString::new(root.join("pipe.txt").into_os_string().into_encoded_bytes())
        .unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let (done, finished) = std::sync::mpsc::channel();
    let pass = view.clone();
    std::thread::spawn(move || {
        pass.index_all();
        let _ = done.send(());
    });
    finished
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the pass finishes");
    cache.flush();
    let p = view.progress();
    assert_eq!((p.files_read, p.files_skipped, p.files_failed), (2, 3, 1));
    // The two texts and the small binary were read whole; the large binary only sniffed.
    assert_eq!(view.counters().content_reads.load(Relaxed), 3);
    let key = redctx_daemon::cache::root_key(view.root());
    for rel in ["small.bin", "large.bin"] {
        let rec = cache.get_file(&key, rel).expect("binary recorded");
        assert!(rec.text.is_none(), "{rel} recorded as not text");
    }
    assert!(cache.get_file(&key, "swapped.rs").is_none());
    // What the pass stored is served without reading again, and redacted.
    let notes = view
        .content(&view.resolve("notes.txt").unwrap(), true)
        .unwrap()
        .text;
    assert!(!notes.contains("Hunter2"), "{notes}");
    assert_eq!(view.counters().content_reads.load(Relaxed), 3);
}

#[test]
fn removing_a_directory_drops_the_cache_records_of_everything_below_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "gone/a.py", "a = 1\n");
    write(&root, "gone/sub/b.py", "b = 2\n");
    write(&root, "gone2/c.py", "c = 3\n");
    write(&root, "kept.py", "k = 4\n");
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let view = ServedRoot::open(&root, engine(), Some(cache.clone()), opts(true, 0)).unwrap();
    view.index_all();
    cache.flush();
    let key = redctx_daemon::cache::root_key(view.root());
    for rel in ["gone/a.py", "gone/sub/b.py", "gone2/c.py", "kept.py"] {
        assert!(cache.get_file(&key, rel).is_some(), "{rel} indexed");
    }

    std::fs::remove_dir_all(root.join("gone")).unwrap();
    view.remove("gone");
    cache.flush();
    assert!(!view.index().contains("gone/sub/b.py"));
    assert!(cache.get_file(&key, "gone/a.py").is_none());
    assert!(cache.get_file(&key, "gone/sub/b.py").is_none());
    // A sibling whose name merely starts the same is kept.
    assert!(cache.get_file(&key, "gone2/c.py").is_some());
    assert!(cache.get_file(&key, "kept.py").is_some());
}

#[test]
fn a_restart_drops_the_records_of_files_deleted_while_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let state = dir.path().join("state");
    write(&root, "old/a.py", "a = 1\n");
    write(&root, "kept.py", "k = 4\n");
    {
        let cache = Arc::new(Cache::open(&state).unwrap());
        let view = ServedRoot::open(&root, engine(), Some(cache.clone()), opts(true, 0)).unwrap();
        view.index_all();
        cache.flush();
    }
    std::fs::remove_dir_all(root.join("old")).unwrap();
    let cache = Arc::new(Cache::open(&state).unwrap());
    let view = ServedRoot::open(&root, engine(), Some(cache.clone()), opts(true, 0)).unwrap();
    view.index_all();
    cache.flush();
    let key = redctx_daemon::cache::root_key(view.root());
    assert!(cache.get_file(&key, "old/a.py").is_none());
    assert!(cache.get_file(&key, "kept.py").is_some());
    assert_eq!(view.progress().files_read, 0);
}

#[test]
fn tool_calls_answer_while_the_background_pass_is_still_running() {
    use redctx_daemon::tools;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    for i in 0..40 {
        write(
            &root,
            &format!("src/m{i:02}.py"),
            &format!("value_{i} = {i}\n"),
        );
    }
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let options = RootOptions {
        pause_indexing_after: Some(3),
        ..opts(true, 0)
    };
    let view = Arc::new(ServedRoot::open(&root, engine(), Some(cache), options).unwrap());
    let pass = view.spawn_indexing();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while view.progress().files_indexed < 3 {
        assert!(
            std::time::Instant::now() < deadline,
            "the pass never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // The pass is held: whatever answers now did not wait for it.
    let list = tools::list(
        &*view,
        &tools::ListArgs {
            path: "src".into(),
            recursive: false,
            max_depth: None,
        },
        &redctx_daemon::cancel::Stop::never(),
    );
    assert!(!list.is_error);
    assert_eq!(list.text.lines().filter(|l| l.contains(".py")).count(), 40);
    let stat = tools::stat(&*view, "src/m39.py");
    assert!(!stat.is_error, "{}", stat.text);
    let entry = view.resolve("src/m39.py").unwrap();
    assert_eq!(
        view.content(&entry, true).unwrap().text.as_ref(),
        expected(&view, "value_39 = 39\n", "src/m39.py", true)
    );
    let p = view.progress();
    assert!(p.running && !p.finished && p.files_pending > 0, "{p:?}");
    // `status --wait` sleeps on the pass: held, it times out; let go, it wakes at the end.
    let short = std::time::Duration::from_millis(50);
    assert!(!view.wait_finished(short));

    let waiter = {
        let view = view.clone();
        std::thread::spawn(move || view.wait_finished(std::time::Duration::from_secs(60)))
    };
    view.resume_indexing();
    assert!(waiter.join().unwrap());
    pass.join().unwrap();
    assert!(view.wait_finished(std::time::Duration::ZERO));
    let p = view.progress();
    assert!(p.finished && !p.running);
    assert_eq!((p.files_indexed, p.files_pending), (40, 0));
}

#[test]
fn shutdown_commits_and_closes_the_cache_while_roots_still_hold_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let state = dir.path().join("state");
    write(&root, "a.py", "a = 1\n");
    let cache = Arc::new(Cache::open(&state).unwrap());
    let view = ServedRoot::open(&root, engine(), Some(cache.clone()), opts(true, 0)).unwrap();
    view.index_all();
    // The root (as a background thread would) still holds the cache.
    cache.shutdown();
    assert!(
        cache
            .get_file(&redctx_daemon::cache::root_key(view.root()), "a.py")
            .is_none()
    );
    // The database is closed: it opens again at once, with what was queued committed.
    let reopened = Arc::new(Cache::open(&state).unwrap());
    let again = ServedRoot::open(&root, engine(), Some(reopened), opts(true, 0)).unwrap();
    again.index_all();
    assert_eq!(again.progress().files_read, 0);
}

/// `stat` answers its line count from the file record when the record matches the file,
/// and never from a record the file has moved past: an edit is counted on the next stat.
#[test]
fn stat_line_counts_come_from_the_record_and_follow_edits() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let state = dir.path().join("state");
    write(&root, "a.py", "x = 1\ny = 2\n");
    {
        let cache = Arc::new(Cache::open(&state).unwrap());
        let view = ServedRoot::open(&root, engine(), Some(cache.clone()), opts(true, 0)).unwrap();
        view.index_all();
        cache.flush();
    }
    let cache = Arc::new(Cache::open(&state).unwrap());
    let view = ServedRoot::open(&root, engine(), Some(cache), opts(true, 0)).unwrap();
    view.index_all();
    let entry = view.resolve("a.py").unwrap();
    assert_eq!(view.stat_line_count(&entry), Ok(2));
    assert_eq!(
        view.counters()
            .content_reads
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    // Same size, new content and line count: only the stat (mtime/ctime) tells.
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(&root, "a.py", "x=1\ny=2\nz=3\n");
    assert_eq!(view.stat_line_count(&entry), Ok(3));
}

/// `text` as UTF-16LE, with a byte-order mark when `bom`.
fn utf16le(text: &str, bom: bool) -> Vec<u8> {
    let mut out = if bom { vec![0xff, 0xfe] } else { Vec::new() };
    text.encode_utf16()
        .for_each(|u| out.extend(u.to_le_bytes()));
    out
}

/// UTF-16 with a byte-order mark is text in code mode only (issue 33). One cache serves
/// the root in strict and code mode, cold then warm, and neither mode gets the other's
/// verdict or redacted text: strict refuses the file as the reference does and counts
/// its raw lines, code mode reads, searches and counts the decoded text.
#[test]
fn wide_text_is_read_in_code_mode_and_refused_in_strict_through_one_cache() {
    use redctx_daemon::engine::Mode;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let text = "owner = \"jordan.vale@northwind-labs.io\"\r\nnaïve \u{a0a}\r\n";
    std::fs::create_dir_all(root.join("win")).unwrap();
    std::fs::write(root.join("win/notes.txt"), utf16le(text, true)).unwrap();
    std::fs::write(root.join("win/Program.cs"), utf16le(text, true)).unwrap();
    std::fs::write(root.join("win/raw.txt"), utf16le(text, false)).unwrap();
    // The reference's count of the raw bytes: four `\n` bytes (two line ends, the two
    // halves of U+0A0A), and no `\n` as the last byte.
    let raw_lines = 5;
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let serve_as = |mode: Mode| {
        let policy = Policy {
            salt: "served-root-test-salt".into(),
            mode,
            ..Policy::default()
        };
        let view = ServedRoot::open(
            &root,
            engine_with(policy),
            Some(cache.clone()),
            opts(true, 0),
        )
        .unwrap();
        view.index_all();
        view
    };
    for round in ["cold", "warm"] {
        for mode in [Mode::Strict, Mode::Code, Mode::Strict] {
            let view = serve_as(mode);
            let reads = view
                .counters()
                .content_reads
                .load(std::sync::atomic::Ordering::Relaxed);
            let notes = view.resolve("win/notes.txt").unwrap();
            let cs = view.resolve("win/Program.cs").unwrap();
            let raw = view.resolve("win/raw.txt").unwrap();
            assert!(view.is_text(&notes), "{round} {mode:?}: named like text");
            assert_eq!(view.content(&raw, true), Err(ViewError::NotText));
            if mode == Mode::Code {
                assert!(view.is_text(&cs), "{round}");
                for (file, rel) in [(&notes, "win/notes.txt"), (&cs, "win/Program.cs")] {
                    let doc = view.content(file, true).unwrap();
                    assert_eq!(
                        doc.text.as_ref(),
                        expected(&view, text, rel, true),
                        "{round}"
                    );
                    assert!(
                        !doc.text.contains("jordan.vale@northwind-labs.io"),
                        "{round}"
                    );
                    assert_eq!(view.stat_line_count(file), Ok(2), "{round}");
                }
            } else {
                assert!(!view.is_text(&cs), "{round}");
                assert_eq!(
                    view.content(&notes, true),
                    Err(ViewError::NotText),
                    "{round}"
                );
                assert_eq!(view.content(&cs, true), Err(ViewError::NotText), "{round}");
                assert_eq!(view.stat_line_count(&notes), Ok(raw_lines), "{round}");
            }
            if round == "warm" {
                // Every verdict came from the records the first round left.
                let now = view
                    .counters()
                    .content_reads
                    .load(std::sync::atomic::Ordering::Relaxed);
                assert_eq!(now, reads, "{mode:?} re-read content");
                assert_eq!(view.progress().files_read, 0, "{mode:?}");
            }
        }
    }
}

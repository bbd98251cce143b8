//! The watcher keeps a served root's index in step with the disk without any refresh
//! call: new, deleted and renamed files and directories, files written right after their
//! directory, changed files re-redacted in the background, excluded trees never watched,
//! overflow rescans, degraded polling and policy file changes.
//!
//! Each test polls for the expected state with a generous deadline (slow CI) and asserts
//! no timing. `index().contains` is checked before any `resolve` (which would insert the
//! entry itself) so the watcher is what is proven.

use notify::event::{EventKind, Flag};
use redctx_daemon::engine::{Engine, Mode, Policy, RedactOptions};
use redctx_daemon::index::IndexOptions;
use redctx_daemon::root::{RootOptions, ServedRoot};
use redctx_daemon::view::RootView;
use redctx_daemon::watch::{WatchOptions, Watcher, read_watch_limit};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(10);

fn engine() -> Arc<Engine> {
    let policy = Policy {
        salt: "t".into(),
        mode: Mode::Balanced,
        ..Default::default()
    };
    Arc::new(Engine::new(Arc::new(policy)).unwrap())
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn serve(root: &Path) -> Arc<ServedRoot> {
    let opts = RootOptions {
        index: IndexOptions {
            threads: 2,
            ..IndexOptions::default()
        },
        ..RootOptions::default()
    };
    Arc::new(ServedRoot::open(root, engine(), None, opts).unwrap())
}

/// A temp dir holding `root/` with `files` written, served; `root` is canonical.
fn fixture(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf, Arc<ServedRoot>) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    for (rel, content) in files {
        write(&root, rel, content);
    }
    let root = root.canonicalize().unwrap();
    let served = serve(&root);
    (dir, root, served)
}

fn watch(served: &Arc<ServedRoot>) -> Watcher {
    Watcher::start(served.clone(), Vec::new(), || {}).unwrap()
}

fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < DEADLINE, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn child_names(served: &ServedRoot, rel: &str) -> Vec<String> {
    let dir = served.resolve(rel).unwrap();
    served
        .children(&dir)
        .unwrap()
        .iter()
        .map(|e| e.name().to_owned())
        .collect()
}

fn redacted(served: &ServedRoot, text: &str) -> String {
    served
        .engine()
        .redact(
            text,
            RedactOptions {
                preserve_line_count: true,
                prose: false,
                path: "",
            },
        )
        .unwrap()
        .text
}

#[test]
fn every_indexed_directory_is_watched_and_nothing_else() {
    let (_dir, root, served) = fixture(&[
        ("src/lib/a.rs", "fn a() {}\n"),
        ("docs/readme.md", "hello\n"),
        ("node_modules/pkg/index.js", "x\n"),
        ("node_modules/pkg/deep/more.js", "x\n"),
        (".git/HEAD", "ref\n"),
    ]);
    let watcher = watch(&served);
    let mut expected: Vec<PathBuf> = served
        .index()
        .dirs()
        .iter()
        .map(|rel| {
            if rel == "." {
                root.clone()
            } else {
                root.join(rel)
            }
        })
        .collect();
    expected.sort();
    assert_eq!(watcher.watched_dirs(), expected);
    assert!(expected.contains(&root.join("src/lib")));
    assert!(
        !expected
            .iter()
            .any(|p| p.starts_with(root.join("node_modules")) || p.starts_with(root.join(".git")))
    );
    let stats = watcher.stats();
    assert_eq!(stats.watches_used, expected.len() as u64);
    assert_eq!(stats.watch_limit, read_watch_limit());
    assert!(!stats.degraded);
}

#[test]
fn a_created_file_is_indexed_and_listed() {
    let (_dir, root, served) = fixture(&[("src/a.txt", "alpha\n")]);
    let _watcher = watch(&served);
    write(&root, "src/b.txt", "beta\n");
    write(&root, "top.txt", "top\n");
    eventually("src/b.txt is indexed", || {
        served.index().contains("src/b.txt")
    });
    eventually("top.txt is indexed", || served.index().contains("top.txt"));
    assert_eq!(child_names(&served, "src"), ["a.txt", "b.txt"]);
    assert!(child_names(&served, ".").contains(&"top.txt".to_owned()));
    let entry = served.resolve("src/b.txt").unwrap();
    assert_eq!(
        &*served.content(&entry, true).unwrap().text,
        redacted(&served, "beta\n")
    );
}

#[test]
fn a_spawned_watcher_returns_at_once_and_files_made_before_its_watches_are_found() {
    let files: Vec<(String, String)> = (0..40)
        .map(|i| (format!("d{i}/sub/f.txt"), format!("file {i}\n")))
        .collect();
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(r, c)| (r.as_str(), c.as_str()))
        .collect();
    let (_dir, root, served) = fixture(&borrowed);
    served.spawn_indexing();
    let watcher =
        Watcher::spawn(served.clone(), Vec::new(), WatchOptions::default(), || {}).unwrap();
    // Right away, whether or not the watches are in place yet: a file in an existing
    // directory and one in a new directory tree.
    write(&root, "d7/sub/early.txt", "early\n");
    write(&root, "fresh/deep/x.txt", "x\n");
    // Answers never wait for the watcher: a listing and a read see a new file at once.
    write(&root, "d9/sub/now.txt", "now\n");
    assert_eq!(child_names(&served, "d9/sub"), ["f.txt", "now.txt"]);
    let entry = served.resolve("d9/sub/now.txt").unwrap();
    assert_eq!(
        &*served.content(&entry, true).unwrap().text,
        redacted(&served, "now\n")
    );
    // The watcher (events or its start reconcile) indexes the others by itself.
    eventually("the early files are indexed", || {
        served.index().contains("d7/sub/early.txt") && served.index().contains("fresh/deep/x.txt")
    });
    eventually("the watcher has started", || watcher.stats().started);
    assert!(watcher.watched_dirs().contains(&root.join("fresh/deep")));
    assert!(watcher.watched_dirs().contains(&root.join("d39/sub")));
    write(&root, "fresh/deep/later.txt", "later\n");
    eventually("a later file arrives by its own event", || {
        served.index().contains("fresh/deep/later.txt")
    });
}

#[test]
fn files_written_right_after_mkdir_p_are_indexed_and_their_directories_watched() {
    let (_dir, root, served) = fixture(&[("keep.txt", "k\n")]);
    let watcher = watch(&served);
    for i in 0..5 {
        let rel = format!("n{i}/b/c/x.txt");
        std::fs::create_dir_all(root.join(format!("n{i}/b/c"))).unwrap();
        std::fs::write(root.join(&rel), "x\n").unwrap();
        eventually("the file in the new directory is indexed", || {
            served.index().contains(&rel)
        });
        eventually("the new directories are watched", || {
            watcher
                .watched_dirs()
                .contains(&root.join(format!("n{i}/b/c")))
        });
        // A later file in the deepest new directory arrives by its own event.
        let later = format!("n{i}/b/c/later.txt");
        std::fs::write(root.join(&later), "later\n").unwrap();
        eventually("a later file there is indexed", || {
            served.index().contains(&later)
        });
    }
    assert_eq!(child_names(&served, "n4/b/c"), ["later.txt", "x.txt"]);
}

#[test]
fn deleted_files_and_directories_leave_the_index_and_their_watches_go() {
    let (_dir, root, served) = fixture(&[
        ("a.txt", "a\n"),
        ("gone/one.txt", "1\n"),
        ("gone/sub/two.txt", "2\n"),
        ("stay/three.txt", "3\n"),
    ]);
    let watcher = watch(&served);
    assert!(watcher.watched_dirs().contains(&root.join("gone/sub")));
    std::fs::remove_file(root.join("a.txt")).unwrap();
    std::fs::remove_dir_all(root.join("gone")).unwrap();
    eventually("a.txt is gone", || !served.index().contains("a.txt"));
    eventually("the directory is gone", || {
        !served.index().contains("gone") && !served.index().contains("gone/sub/two.txt")
    });
    eventually("its watches are dropped", || {
        !watcher
            .watched_dirs()
            .iter()
            .any(|p| p.starts_with(root.join("gone")))
    });
    assert_eq!(child_names(&served, "."), ["stay"]);
    assert!(served.resolve("a.txt").is_err());
}

#[test]
fn a_renamed_directory_moves_in_the_index_and_stays_watched() {
    let (_dir, root, served) = fixture(&[
        ("old/one.txt", "1\n"),
        ("old/sub/two.txt", "2\n"),
        ("file.txt", "f\n"),
    ]);
    let watcher = watch(&served);
    std::fs::rename(root.join("old"), root.join("new")).unwrap();
    std::fs::rename(root.join("file.txt"), root.join("renamed.txt")).unwrap();
    eventually("old paths are gone and new ones indexed", || {
        let index = served.index();
        !index.contains("old")
            && !index.contains("old/sub/two.txt")
            && index.contains("new/one.txt")
            && index.contains("new/sub/two.txt")
            && !index.contains("file.txt")
            && index.contains("renamed.txt")
    });
    eventually("watches follow the rename", || {
        let dirs = watcher.watched_dirs();
        dirs.contains(&root.join("new/sub"))
            && !dirs.iter().any(|p| p.starts_with(root.join("old")))
    });
    // Events inside the renamed tree carry the new path.
    write(&root, "new/sub/three.txt", "3\n");
    eventually("a file created in the renamed tree is indexed", || {
        served.index().contains("new/sub/three.txt")
    });
    assert!(!served.index().contains("old/sub/three.txt"));
    assert_eq!(child_names(&served, "new/sub"), ["three.txt", "two.txt"]);
    // Renamed back: watched again under the first name.
    std::fs::rename(root.join("new"), root.join("old")).unwrap();
    eventually("renamed back", || {
        served.index().contains("old/sub/three.txt") && !served.index().contains("new")
    });
    write(&root, "old/sub/four.txt", "4\n");
    eventually("a file created after renaming back is indexed", || {
        served.index().contains("old/sub/four.txt")
    });
}

#[test]
fn a_modified_file_is_re_redacted_in_the_background() {
    let (_dir, root, served) = fixture(&[("notes.txt", "first version\n")]);
    let watcher = watch(&served);
    let entry = served.resolve("notes.txt").unwrap();
    assert_eq!(
        &*served.content(&entry, true).unwrap().text,
        redacted(&served, "first version\n")
    );
    let before = watcher.stats().reindexed;
    let redactions = served.counters().redactions.load(Ordering::Relaxed);
    write(&root, "notes.txt", "second version, longer\n");
    eventually("the change is re-redacted", || {
        watcher.stats().reindexed > before
            && served.counters().redactions.load(Ordering::Relaxed) > redactions
    });
    let entry = served.resolve("notes.txt").unwrap();
    assert_eq!(
        &*served.content(&entry, true).unwrap().text,
        redacted(&served, "second version, longer\n")
    );
}

#[test]
fn excluded_trees_are_never_watched_nor_indexed() {
    // `node_modules` is excluded by policy; `target/` only by `.gitignore`.
    let (_dir, root, served) = fixture(&[
        ("src/a.txt", "a\n"),
        ("node_modules/p/i.js", "x\n"),
        (".gitignore", "target/\n"),
    ]);
    let watcher = watch(&served);
    std::fs::create_dir_all(root.join("node_modules/q/deep")).unwrap();
    write(&root, "node_modules/q/deep/new.js", "x\n");
    write(&root, "target/debug/out.txt", "x\n");
    // Events are applied in order: once this marker is in, the ones before were seen.
    write(&root, "src/marker.txt", "m\n");
    eventually("the marker is indexed", || {
        served.index().contains("src/marker.txt")
    });
    assert!(
        !watcher
            .watched_dirs()
            .iter()
            .any(|p| p.starts_with(root.join("node_modules")) || p.starts_with(root.join("target")))
    );
    assert!(!served.index().contains("node_modules/q"));
    assert!(!served.index().contains("node_modules/q/deep/new.js"));
    assert!(!served.index().contains("target"));
}

#[test]
fn an_overflow_rescans_the_whole_root() {
    let (_dir, root, served) = fixture(&[("early.txt", "e\n"), ("d/x.txt", "x\n")]);
    // Changes made while nothing watched: only a rescan can find them.
    std::fs::remove_file(root.join("early.txt")).unwrap();
    write(&root, "late.txt", "l\n");
    write(&root, "fresh/dir/y.txt", "y\n");
    assert!(served.index().contains("early.txt"));
    let fired = Arc::new(AtomicUsize::new(0));
    let count = fired.clone();
    let watcher = Watcher::start_with(
        served.clone(),
        Vec::new(),
        WatchOptions {
            reconcile_on_start: false,
            ..WatchOptions::default()
        },
        move || {
            count.fetch_add(1, Ordering::SeqCst);
        },
    )
    .unwrap();
    assert!(served.index().contains("early.txt"));
    assert!(!served.index().contains("late.txt"));
    watcher.inject(notify::Event::new(EventKind::Other).set_flag(Flag::Rescan));
    eventually("the rescan found every change", || {
        let index = served.index();
        !index.contains("early.txt")
            && index.contains("late.txt")
            && index.contains("fresh/dir/y.txt")
    });
    eventually("the new directories are watched", || {
        watcher.watched_dirs().contains(&root.join("fresh/dir"))
    });
    let stats = watcher.stats();
    assert_eq!(stats.overflows, 1);
    assert!(stats.rescans >= 1);
    // An overflow may have hidden a policy edit: the owner is told to re-check.
    eventually("the policy callback ran", || {
        fired.load(Ordering::SeqCst) >= 1
    });
    write(&root, "fresh/dir/z.txt", "z\n");
    eventually("events still flow after the rescan", || {
        served.index().contains("fresh/dir/z.txt")
    });
}

#[test]
fn the_reconcile_at_start_catches_changes_made_before_the_watches() {
    let (_dir, root, served) = fixture(&[("early.txt", "e\n")]);
    std::fs::remove_file(root.join("early.txt")).unwrap();
    write(&root, "pre/late.txt", "l\n");
    let watcher = watch(&served);
    eventually("the start reconcile ran", || {
        !served.index().contains("early.txt") && served.index().contains("pre/late.txt")
    });
    eventually("the directory made before the watches is watched", || {
        watcher.watched_dirs().contains(&root.join("pre"))
    });
    assert!(watcher.stats().rescans >= 1);
}

#[test]
fn past_the_watch_limit_it_degrades_to_periodic_rescans() {
    let (_dir, root, served) = fixture(&[("a/x.txt", "x\n"), ("b/y.txt", "y\n")]);
    let watcher = Watcher::start_with(
        served.clone(),
        Vec::new(),
        WatchOptions {
            watch_budget: Some(1),
            poll_interval: Duration::from_millis(100),
            ..WatchOptions::default()
        },
        || {},
    )
    .unwrap();
    let stats = watcher.stats();
    assert!(stats.degraded);
    assert_eq!(stats.watches_used, 1);
    assert_eq!(watcher.watched_dirs(), vec![root.clone()]);
    // `a` is not watched: only the periodic rescan can see this.
    write(&root, "a/new.txt", "n\n");
    std::fs::remove_file(root.join("b/y.txt")).unwrap();
    eventually("a periodic rescan picked the changes up", || {
        served.index().contains("a/new.txt") && !served.index().contains("b/y.txt")
    });
    // The root itself is still watched.
    write(&root, "top.txt", "t\n");
    eventually("events on watched directories still apply", || {
        served.index().contains("top.txt")
    });
    assert!(watcher.stats().degraded);
}

#[test]
fn policy_file_changes_call_back() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "src/a.txt", "a\n");
    let outside = dir.path().join("conf");
    std::fs::create_dir_all(&outside).unwrap();
    let root = root.canonicalize().unwrap();
    let served = serve(&root);
    let fired = Arc::new(AtomicUsize::new(0));
    let count = fired.clone();
    let policy = vec![
        PathBuf::from(".agent-context-redactor.toml"),
        root.join("private/terms.txt"),
        outside.join("explicit.toml"),
    ];
    let watcher = Watcher::start_with(
        served.clone(),
        policy,
        WatchOptions {
            reconcile_on_start: false,
            ..WatchOptions::default()
        },
        move || {
            count.fetch_add(1, Ordering::SeqCst);
        },
    )
    .unwrap();
    let calls = || fired.load(Ordering::SeqCst);
    assert_eq!(calls(), 0);

    write(&root, ".agent-context-redactor.toml", "[redaction]\n");
    eventually("the config change is reported", || calls() >= 1);

    // The term file's directory does not exist yet; creating both is still seen, and
    // the new directory is watched for later edits.
    let n = calls();
    write(&root, "private/terms.txt", "Acme\n");
    eventually("the new term file is reported", || calls() > n);
    eventually("its directory is watched", || {
        watcher.watched_dirs().contains(&root.join("private"))
    });
    let n = calls();
    write(&root, "private/terms.txt", "Acme\nGlobex\n");
    eventually("the term file edit is reported", || calls() > n);

    let n = calls();
    write(&outside, "explicit.toml", "[redaction]\n");
    eventually("a config outside the root is reported", || calls() > n);

    // Ordinary files do not call back.
    let n = calls();
    write(&root, "src/b.txt", "b\n");
    eventually("the ordinary file is indexed", || {
        served.index().contains("src/b.txt")
    });
    assert_eq!(calls(), n);
}

#[test]
fn dropping_the_watcher_from_its_own_callback_does_not_hang() {
    let (_dir, root, served) = fixture(&[("a.txt", "a\n")]);
    let slot: Arc<std::sync::Mutex<Option<Watcher>>> = Arc::default();
    let inner = slot.clone();
    let done = Arc::new(AtomicUsize::new(0));
    let done_in = done.clone();
    let watcher = Watcher::start(served.clone(), vec![root.join("policy.toml")], move || {
        // A policy reload that replaces the root drops the old watcher right here.
        drop(inner.lock().unwrap().take());
        done_in.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    *slot.lock().unwrap() = Some(watcher);
    write(&root, "policy.toml", "x\n");
    eventually("the callback dropped the watcher", || {
        done.load(Ordering::SeqCst) >= 1 && slot.lock().unwrap().is_none()
    });
}

/// Every admitted file on disk, by a plain walk (what the index must hold).
fn disk_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for dent in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = dent.path();
            if dent.file_type().unwrap().is_dir() {
                stack.push(path);
            } else {
                out.push(
                    path.strip_prefix(root)
                        .unwrap()
                        .to_str()
                        .unwrap()
                        .to_owned(),
                );
            }
        }
    }
    out.sort();
    out
}

fn indexed_files(served: &ServedRoot) -> Vec<String> {
    let mut out: Vec<String> = served.index().files().into_iter().map(|(r, _)| r).collect();
    out.sort();
    out
}

#[test]
fn a_checkout_sized_burst_ends_with_the_index_equal_to_the_disk() {
    let files: Vec<(String, String)> = (0..300)
        .map(|i| (format!("old/m{}/f{i}.txt", i % 30), format!("old {i}\n")))
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let (_dir, root, served) = fixture(&refs);
    let watcher = watch(&served);
    // Like a branch switch: a tree disappears, another appears, files are rewritten.
    std::fs::remove_dir_all(root.join("old/m3")).unwrap();
    for i in 0..2000 {
        write(
            &root,
            &format!("new/d{}/e{}/g{i}.txt", i % 40, i % 7),
            "new\n",
        );
    }
    for i in (0..300).step_by(3) {
        let rel = format!("old/m{}/f{i}.txt", i % 30);
        if root.join(&rel).exists() {
            write(&root, &rel, "rewritten\n");
        }
    }
    std::fs::rename(root.join("old/m4"), root.join("new/moved")).unwrap();
    let expected = disk_files(&root);
    eventually("the index equals the disk", || {
        indexed_files(&served) == expected
    });
    eventually("every indexed directory is watched", || {
        let mut want: Vec<PathBuf> = served
            .index()
            .dirs()
            .iter()
            .map(|rel| {
                if rel == "." {
                    root.clone()
                } else {
                    root.join(rel)
                }
            })
            .collect();
        want.sort();
        watcher.watched_dirs() == want
    });
    assert!(!watcher.stats().degraded);
}

#[test]
fn un_ignoring_a_tree_in_gitignore_indexes_and_watches_it() {
    let (_dir, root, served) = fixture(&[
        (".gitignore", "build/\n"),
        ("build/out/a.txt", "a\n"),
        ("src/b.txt", "b\n"),
    ]);
    let watcher = watch(&served);
    assert!(!served.index().contains("build"));
    write(&root, ".gitignore", "# nothing ignored\n");
    eventually("the un-ignored tree is indexed and watched", || {
        served.index().contains("build/out/a.txt")
            && watcher.watched_dirs().contains(&root.join("build/out"))
    });
    write(&root, "build/out/c.txt", "c\n");
    eventually("files created there are indexed", || {
        served.index().contains("build/out/c.txt")
    });
    write(&root, ".gitignore", "build/\n");
    eventually("ignored again: out of the index and unwatched", || {
        !served.index().contains("build")
            && !watcher
                .watched_dirs()
                .iter()
                .any(|p| p.starts_with(root.join("build")))
    });
}

#[test]
fn the_watcher_can_be_shared_between_threads() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Watcher>();
}

//! Watcher-synced walks (`watch::sync`): a whole-root search that lists the index
//! without `lstat`ing each file must still see every change made before it was asked,
//! with no pause in between: edits, new files in new directories, deletions, renames.
//! The ground truth is a root opened afresh on the same directory (a full walk of the
//! disk, no watcher, no index).

use redctx_daemon::cache::Cache;
use redctx_daemon::cancel::Stop;
use redctx_daemon::engine::{Engine, Mode, Policy};
use redctx_daemon::index::IndexOptions;
use redctx_daemon::root::{RootOptions, ServedRoot};
use redctx_daemon::tools::{SearchArgs, search};
use redctx_daemon::watch::Watcher;
use redctx_test_support::Rng;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn engine() -> Arc<Engine> {
    let policy = Policy {
        salt: "sync-salt".into(),
        mode: Mode::Balanced,
        clients: vec!["Globex".into()],
        ..Policy::default()
    };
    Arc::new(Engine::new(Arc::new(policy)).unwrap())
}

fn options() -> RootOptions {
    RootOptions {
        index: IndexOptions {
            gitignore: true,
            threads: 2,
            // Records trusted at once, so the search index rules files out and a stale
            // stat would show as a wrong answer rather than as a re-read.
            racy_window_ns: 0,
        },
        ..RootOptions::default()
    }
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, content).unwrap();
}

/// A served root with its search index and a watcher that vouches for it.
fn serve_watched(root: &Path, state: &Path) -> (Arc<ServedRoot>, Watcher) {
    let cache = Arc::new(Cache::open(state).unwrap());
    let served = ServedRoot::open(root, engine(), Some(cache), options()).unwrap();
    served.index_all();
    served.refresh_search_index();
    let served = Arc::new(served);
    let watcher = Watcher::start(served.clone(), Vec::new(), || {}).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !watcher.stats().synced_walks {
        assert!(
            Instant::now() < deadline,
            "watcher never vouched for the index"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    (served, watcher)
}

/// The answer of a root opened now: every directory read and every file stat'ed.
fn fresh_answer(root: &Path, args: &SearchArgs) -> String {
    let fresh = ServedRoot::open(root, engine(), None, options()).unwrap();
    search(&fresh, args, &Stop::never()).text
}

fn needle_search() -> SearchArgs {
    SearchArgs {
        query: "needle".into(),
        ..SearchArgs::default()
    }
}

#[test]
fn synced_searches_see_every_change_made_just_before_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let mut rng = Rng(11);
    let dirs = ["src", "src/deep", "docs", "Globex"];
    let mut files: Vec<String> = Vec::new();
    for i in 0..60 {
        let rel = format!("{}/f{i}.txt", rng.pick(&dirs));
        let text = if rng.below(4) == 0 {
            format!("line {i} with a needle\n")
        } else {
            format!("line {i} plain\n")
        };
        write(&root, &rel, &text);
        files.push(rel);
    }
    // Files whose name does not say whether they are text: the text check is the
    // index's, and a regex search counts the ones that are not.
    for i in 0..4 {
        write(&root, &format!("data/blob{i}.dat"), "a needle in data\n");
    }
    let (served, _watcher) = serve_watched(&root, &dir.path().join("state"));
    let literal = needle_search();
    let regex = SearchArgs {
        query: "ne+dle".into(),
        regex: true,
        ..SearchArgs::default()
    };
    let mut ruled_out = 0;
    for round in 0..40 {
        // One change, then the search at once: no sleep lets the watcher catch up.
        let what = rng.below(6);
        match what {
            0 => {
                // In-place edit (the file grows: a same-size rewrite within one clock
                // tick is the racy window's business, not the watcher's).
                let rel = rng.pick(&files).clone();
                let mut file = std::fs::OpenOptions::new()
                    .append(true)
                    .open(root.join(&rel))
                    .unwrap();
                writeln!(file, "round {round} adds a needle").unwrap();
            }
            1 => {
                // A new file in a new directory (no event of its own for the file).
                let rel = format!("new{round}/inner/n{round}.txt");
                write(&root, &rel, &format!("fresh needle {round}\n"));
                files.push(rel);
            }
            2 if files.len() > 10 => {
                let at = rng.below(files.len());
                let rel = files.swap_remove(at);
                std::fs::remove_file(root.join(rel)).unwrap();
            }
            3 => {
                let at = rng.below(files.len());
                let to = format!("docs/renamed{round}.txt");
                std::fs::rename(root.join(&files[at]), root.join(&to)).unwrap();
                files[at] = to;
            }
            4 => {
                // Text becomes binary or back, in place.
                let rel = format!("data/blob{}.dat", rng.below(4));
                let binary = std::fs::read(root.join(&rel)).unwrap().contains(&0);
                let next: &[u8] = if binary {
                    b"a needle again\n"
                } else {
                    b"\0\x01binary needle\0"
                };
                std::fs::write(root.join(&rel), next).unwrap();
            }
            _ => {
                // A needle removed: the file must stop matching.
                let rel = rng.pick(&files).clone();
                std::fs::write(root.join(&rel), format!("round {round} no match\n")).unwrap();
            }
        }
        for args in [&literal, &regex] {
            let walks = served.counters().synced_walks.load(Ordering::Relaxed);
            let screened = served.counters().screened_out.load(Ordering::Relaxed);
            let synced = search(&*served, args, &Stop::never()).text;
            assert_eq!(
                served.counters().synced_walks.load(Ordering::Relaxed),
                walks + 1,
                "round {round}: the search did not walk after a sync"
            );
            ruled_out += served.counters().screened_out.load(Ordering::Relaxed) - screened;
            assert_eq!(synced, fresh_answer(&root, args), "round {round} ({what})");
        }
    }
    assert!(ruled_out > 0, "the search index was never used");
}

#[test]
fn files_with_a_second_link_outside_the_root_are_checked_on_disk() {
    // A write through a hard link outside the root raises no event in the root's
    // directories: the watcher cannot vouch for such a file, so its directory is
    // listed with an `lstat` per file.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "shared/linked.txt", "nothing yet\n");
    write(&root, "shared/other.txt", "plain\n");
    write(&root, "solo/alone.txt", "plain\n");
    let outside = dir.path().join("outside.txt");
    std::fs::hard_link(root.join("shared/linked.txt"), &outside).unwrap();
    let (served, _watcher) = serve_watched(&root, &dir.path().join("state"));
    let args = needle_search();
    assert_eq!(
        search(&*served, &args, &Stop::never()).text,
        "No matches.\n"
    );
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&outside)
        .unwrap();
    writeln!(file, "a needle written through the other link").unwrap();
    drop(file);
    let out = search(&*served, &args, &Stop::never()).text;
    assert_eq!(out, fresh_answer(&root, &args));
    assert!(
        out.contains("a needle written through the other link"),
        "{out}"
    );
}

#[test]
fn a_stopped_watcher_vouches_for_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "a.txt", "plain\n");
    let (served, watcher) = serve_watched(&root, &dir.path().join("state"));
    drop(watcher);
    // Changes now raise no event anyone reads: the walk must stat files again.
    write(&root, "b/c.txt", "a needle after the watcher stopped\n");
    std::fs::write(root.join("a.txt"), "needle in place\n").unwrap();
    let walks = served.counters().synced_walks.load(Ordering::Relaxed);
    let args = needle_search();
    let out = search(&*served, &args, &Stop::never()).text;
    assert_eq!(
        served.counters().synced_walks.load(Ordering::Relaxed),
        walks
    );
    assert_eq!(out, fresh_answer(&root, &args));
    assert_eq!(out.lines().count(), 2, "{out}");
}

#[test]
fn edits_made_before_the_watches_were_in_place_are_seen() {
    // Between the root's walk and its watches, an in-place edit raises no event and
    // leaves its directory's stat alone; the watcher re-stats every file before it
    // vouches for the index.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    write(&root, "src/a.txt", "plain\n");
    write(&root, "src/b.txt", "plain too\n");
    let cache = Arc::new(Cache::open(&dir.path().join("state")).unwrap());
    let served = ServedRoot::open(&root, engine(), Some(cache), options()).unwrap();
    served.index_all();
    served.refresh_search_index();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(root.join("src/a.txt"))
        .unwrap();
    writeln!(file, "a needle before the watches").unwrap();
    drop(file);
    let served = Arc::new(served);
    let watcher = Watcher::start(served.clone(), Vec::new(), || {}).unwrap();
    while !watcher.stats().synced_walks {
        std::thread::sleep(Duration::from_millis(5));
    }
    let args = needle_search();
    let walks = served.counters().synced_walks.load(Ordering::Relaxed);
    let out = search(&*served, &args, &Stop::never()).text;
    assert_eq!(
        served.counters().synced_walks.load(Ordering::Relaxed),
        walks + 1
    );
    assert!(out.contains("a needle before the watches"), "{out}");
}

//! A real `redctxd` killed with SIGKILL while its background pass is in flight, files
//! changed while it is down, then restarted: every answer must equal what a daemon
//! with an empty cache gives for the same tree (the cache is used correctly or
//! rebuilt, never served stale). While the pass is held, metadata and content calls
//! answer without waiting for it.
//!
//! The pass is held at a fixed point with the daemon's test-only
//! `REDCTX_TEST_PAUSE_INDEX_AFTER` so the kill always lands mid-index.
//!
//! A warm restart answers before its file watches are in place: files created right
//! after the first answer and right after "ready" are seen by the very next answers.

mod support;

use std::path::Path;
use std::time::Duration;
use support::{Env, poll};

const FILES: usize = 120;
const HOLD_AFTER: u64 = 30;

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn file_text(i: usize) -> String {
    format!(
        "# module {i}\nAWS_KEY = \"AKIAQ{i:015}\"\nowner = \"dev{i}@example.com\"\nvalue_{i} = {i}\n"
    )
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// (state, files indexed) of the first root `redctx status` shows.
fn status(env: &Env) -> Option<(String, u64)> {
    let (code, out, _) = env.run(&["status"]);
    if code != 0 {
        return None;
    }
    let state = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("state: "))?
        .to_owned();
    let indexed = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("files: "))
        .and_then(|l| l.split(", ").nth(1))
        .and_then(|s| s.strip_suffix(" indexed"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    Some((state, indexed))
}

/// What an agent sees of the whole tree: the recursive listing, every file's text, and
/// a search across all of it.
fn everything(env: &Env, root: &Path) -> Vec<String> {
    vec![
        env.ok_on(root, &["ls", "-r", "."]),
        env.bundle_all(root),
        env.ok_on(root, &["grep", "value_"]),
    ]
}

#[test]
fn kill_9_during_indexing_then_restart_answers_as_an_empty_cache_would() {
    let env = Env::new();
    let root = env.root_dir("crash", "svc");
    for i in 0..FILES {
        write(&root, &format!("src/d{}/m{i:03}.py", i % 6), &file_text(i));
    }

    // A daemon whose background pass holds after HOLD_AFTER files.
    let mut start = env.redctx(&["daemon", "start"]);
    start.env("REDCTX_TEST_PAUSE_INDEX_AFTER", HOLD_AFTER.to_string());
    let st = start.status().unwrap();
    assert!(st.success());
    env.ok_on(&root, &["stat", "."]);
    poll("the pass to hold", Duration::from_secs(60), || {
        status(&env).filter(|(state, n)| state == "indexing" && *n >= HOLD_AFTER)
    });

    // Held mid-pass: listing, stat and content still answer, and the pass is still held.
    let listing = env.ok_on(&root, &["ls", "src/d5"]);
    assert_eq!(listing.lines().count(), FILES / 6, "{listing}");
    env.ok_on(&root, &["stat", "src/d5/m119.py"]);
    let text = env.ok_on(&root, &["cat", "src/d5/m119.py"]);
    assert!(text.contains("value_119 = 119"), "{text}");
    assert!(!text.contains("AKIAQ"), "{text}");
    let (state, _) = status(&env).unwrap();
    assert_eq!(state, "indexing");

    let pid = env.daemon_pid().expect("daemon running");
    // SAFETY: kill(2) of the daemon this test started (its own state dir).
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    env.wait_daemon_gone();

    // Changes while no daemon watches: an edit that keeps the size, a deleted
    // directory, a new file.
    let changed = file_text(7).replace("value_7 = 7", "value_7 = 8");
    write(&root, "src/d1/m007.py", &changed);
    std::fs::remove_dir_all(root.join("src/d2")).unwrap();
    write(
        &root,
        "src/d0/new.py",
        "value_new = 1\nowner = \"late@example.com\"\n",
    );

    // Restart on the crashed state dir; it reaches ready.
    env.ok_on(&root, &["stat", "."]);
    poll("ready after the restart", Duration::from_secs(60), || {
        status(&env).filter(|(state, _)| state == "ready")
    });
    let after = everything(&env, &root);
    assert!(after[1].contains("value_7 = 8"), "the edit is served");
    assert!(
        !after[0].contains("src/d2"),
        "the deleted directory is gone"
    );
    assert!(after[2].contains("value_new"), "the new file is searched");

    // The same tree through a daemon with an empty cache (same vault, so same salt).
    let fresh = Env::new();
    copy_tree(&env.vault(), &fresh.vault());
    let expected = everything(&fresh, &root);
    assert_eq!(after, expected);
}

#[test]
fn files_created_right_after_a_warm_restart_are_visible_at_once() {
    let env = Env::new();
    let root = env.root_dir("warm", "svc");
    for i in 0..FILES {
        write(&root, &format!("src/d{}/m{i:03}.py", i % 6), &file_text(i));
    }
    // Index once, persist, stop.
    env.ok_on(&root, &["stat", "."]);
    poll("the first pass", Duration::from_secs(60), || {
        status(&env).filter(|(state, _)| state == "ready")
    });
    let (code, _, err) = env.run(&["daemon", "stop"]);
    assert_eq!(code, 0, "daemon stop: {err}");
    env.wait_daemon_gone();

    // Warm restart: right after the first answer, before the watches can be in place.
    env.ok_on(&root, &["stat", "."]);
    write(&root, "src/d3/early.py", "value_early = 1\n");
    write(&root, "src/brand/new/deep.py", "value_deep = 2\n");
    let listing = env.ok_on(&root, &["ls", "src/d3"]);
    assert!(listing.contains("early.py"), "{listing}");
    let text = env.ok_on(&root, &["cat", "src/brand/new/deep.py"]);
    assert!(text.contains("value_deep = 2"), "{text}");

    // Right after "ready": created and edited files are seen by the very next answers.
    poll("ready after the restart", Duration::from_secs(60), || {
        status(&env).filter(|(state, _)| state == "ready")
    });
    write(&root, "src/d4/after_ready.py", "value_after_ready = 3\n");
    write(&root, "src/d5/m011.py", "value_11 = 111\n");
    write(&root, "src/other/after.py", "value_other = 4\n");
    let tree = env.ok_on(&root, &["ls", "-r", "."]);
    for name in ["after_ready.py", "after.py", "early.py", "deep.py"] {
        assert!(tree.contains(name), "{name} missing from\n{tree}");
    }
    let hits = env.ok_on(&root, &["grep", "value_"]);
    for needle in [
        "value_after_ready = 3",
        "value_other = 4",
        "value_early",
        "value_deep",
        "value_11 = 111",
    ] {
        assert!(hits.contains(needle), "{needle} missing from\n{hits}");
    }
    let text = env.ok_on(&root, &["cat", "src/d5/m011.py"]);
    assert!(text.contains("value_11 = 111"), "{text}");
}

/// The cookie directories of a daemon's watchers (`<state>/sync/*`).
fn cookie_dirs(env: &Env) -> Vec<std::path::PathBuf> {
    match std::fs::read_dir(env.state().join("sync")) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

#[test]
fn a_restart_clears_the_sync_cookies_a_killed_daemon_left_behind() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let root = env.root_dir("cookies", "svc");
    write(&root, "a.py", &file_text(1));
    env.ok_on(&root, &["stat", "."]);
    // The watcher makes its cookie directory once its watches are in place.
    let first = poll(
        "the watcher's cookie directory",
        Duration::from_secs(60),
        || {
            let dirs = cookie_dirs(&env);
            (dirs.len() == 1).then(|| dirs[0].clone())
        },
    );
    let mode = std::fs::metadata(&first).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "private to the user: {mode:o}");

    let pid = env.daemon_pid().expect("daemon running");
    // SAFETY: kill(2) of the daemon this test started (its own state dir).
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    env.wait_daemon_gone();
    assert!(first.exists(), "a killed daemon cannot clean up");

    env.ok_on(&root, &["stat", "."]);
    let second = poll(
        "the new watcher's cookie directory",
        Duration::from_secs(60),
        || {
            let dirs = cookie_dirs(&env);
            (dirs.len() == 1 && dirs[0] != first).then(|| dirs[0].clone())
        },
    );
    assert!(!first.exists());

    // A daemon stopped normally removes its own.
    let (code, _, err) = env.run(&["daemon", "stop"]);
    assert_eq!(code, 0, "{err}");
    env.wait_daemon_gone();
    assert!(!second.exists(), "{}", second.display());
}

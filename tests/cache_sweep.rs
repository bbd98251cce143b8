//! The cache does not grow without bound: a real `redctxd` serving a root whose file is
//! edited many times, restarted, and whose policy changes once keeps about one content
//! record per live file. Each edit leaves the previous version's redacted text behind and
//! the policy change a copy of every file's; the sweeps at the end of the warm restart's
//! pass and of the new policy's pass remove them.
//!
//! The record count is read from the database after `redctx daemon stop` (the daemon
//! holds its lock while running; stopping commits everything queued, the sweep the pass
//! asked for included). Waits poll `redctx status` with a deadline.

mod support;

use redctx_daemon::cache::Cache;
use std::path::Path;
use std::time::Duration;
use support::{Env, poll};

const FILES: u64 = 12;
const EDITS: u64 = 25;
const CONFIG: &str = ".agent-context-redactor.toml";

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// Replaces a file in one step (the daemon never sees it half written).
fn replace(env: &Env, root: &Path, rel: &str, content: &str) {
    let tmp = env.dir.path().join("replace.tmp");
    std::fs::write(&tmp, content).unwrap();
    std::fs::rename(&tmp, root.join(rel)).unwrap();
}

fn wait_ready(env: &Env, what: &str) {
    poll(what, Duration::from_secs(60), || {
        let (code, out, _) = env.run(&["status"]);
        (code == 0 && out.lines().any(|l| l.trim() == "state: ready")).then_some(())
    });
}

/// Stops the daemon (which commits what is queued) and counts the content records.
fn stop_and_count(env: &Env) -> u64 {
    let (code, _, err) = env.run(&["daemon", "stop"]);
    assert_eq!(code, 0, "daemon stop: {err}");
    env.wait_daemon_gone();
    let cache = Cache::open(&env.state()).unwrap();
    let n = cache.content_records().unwrap();
    cache.shutdown();
    n
}

#[test]
fn edits_restarts_and_a_policy_change_leave_one_content_record_per_file() {
    let env = Env::new();
    let root = env.root_dir("sweep", "svc");
    write(
        &root,
        CONFIG,
        "[redaction]\nsalt = \"sweep-salt\"\nterms = [\"Project Meridian\"]\n",
    );
    for i in 0..FILES {
        write(
            &root,
            &format!("src/m{i:02}.py"),
            &format!("# Project Meridian module {i}\nvalue_{i} = {i}\n"),
        );
    }
    env.ok_on(&root, &["stat", "."]);
    wait_ready(&env, "the first pass");

    // Every edit is read (so its redaction is stored) before the next one.
    let edit = |n: u64| {
        let marker = format!("edit_{n}_{}", "x".repeat(n as usize));
        replace(&env, &root, "src/m00.py", &format!("{marker} = 1\n"));
        let text = env.ok_on(&root, &["cat", "src/m00.py"]);
        assert!(text.contains(&marker), "{text}");
    };
    for n in 0..EDITS {
        edit(n);
    }
    let grown = stop_and_count(&env);
    assert!(
        grown >= FILES + EDITS,
        "{grown} records after {EDITS} edits"
    );

    // A warm restart's pass sweeps what the edits left.
    env.ok_on(&root, &["stat", "."]);
    wait_ready(&env, "the warm restart");
    assert_eq!(stop_and_count(&env), FILES);

    // More edits, then a new policy: its pass redacts every file again and sweeps the
    // old policy's records with the edits' leftovers.
    env.ok_on(&root, &["stat", "."]);
    wait_ready(&env, "the second restart");
    for n in EDITS..EDITS + 10 {
        edit(n);
    }
    replace(
        &env,
        &root,
        CONFIG,
        "[redaction]\nsalt = \"sweep-salt\"\nterms = [\"Project Meridian\", \"value_3\"]\n",
    );
    let text = env.ok_on(&root, &["cat", "src/m03.py"]);
    assert!(!text.contains("value_3"), "the new policy applies: {text}");
    wait_ready(&env, "the new policy's pass");
    assert_eq!(stop_and_count(&env), FILES);

    // What is left is what is served: a fresh daemon answers every file.
    for i in 0..FILES {
        let text = env.ok_on(&root, &["cat", &format!("src/m{i:02}.py")]);
        assert!(!text.contains("Meridian"), "{text}");
    }
}

//! Defences against an agent that probes or stalls the daemon, on a real `redctxd`:
//! hard links to protected files, calls stopped by a disconnect or by `daemon stop`,
//! and whole-root scans while a file churns.

mod support;

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use support::fixtures::write;
use support::{Env, poll};

/// The CPU-measuring test and the churning one run one at a time: each would skew the
/// other's figures on a two-core machine.
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Every way the agent can reach a file's bytes or name, for one root: a recursive
/// listing, a bundle of everything, and searches for `needle` (literal and regex).
fn everything(env: &Env, root: &Path, needle: &str) -> String {
    let mut all = env.ok_on(root, &["ls", "-r", "."]);
    all += &env.bundle_all(root);
    for extra in [&[][..], &["-E"][..]] {
        let mut args = vec!["grep", "-i"];
        args.extend_from_slice(extra);
        args.push(needle);
        let (_, out, _) = env.run(&[&["--root", root.to_str().unwrap()][..], &args[..]].concat());
        all += &out;
    }
    all
}

#[test]
fn hard_links_to_protected_files_are_refused_under_any_name() {
    let env = Env::new();
    // Another root whose `.env` is linked into the first one.
    let other = env.root_dir("links", "other");
    write(&other, ".env", "OTHER_TOKEN=zq7otherrootsecretvalue\n");
    env.ok_on(&other, &["ls", "."]);

    let root = env.root_dir("links", "svc");
    write(&root, ".env", "API_TOKEN=zq7dotenvsecretvalue\n");
    write(
        &root,
        ".agent-context-redactor.toml",
        "[redaction]\nterm_files = [\"private/terms.txt\"]\n# zq7configmarker\n",
    );
    write(&root, "private/terms.txt", "zq7termfilemarker\n");
    write(&root, "plain.txt", "nothing to hide here\n");
    std::fs::hard_link(root.join(".env"), root.join("notes.txt")).unwrap();
    std::fs::hard_link(
        root.join(".agent-context-redactor.toml"),
        root.join("cfg.md"),
    )
    .unwrap();
    std::fs::hard_link(root.join("private/terms.txt"), root.join("words.txt")).unwrap();
    std::fs::hard_link(other.join(".env"), root.join("borrowed.txt")).unwrap();

    let check = |when: &str| {
        let seen = everything(&env, &root, "zq7");
        assert!(seen.contains("plain.txt"), "{when}: {seen}");
        for linked in [
            "notes.txt",
            "cfg.md",
            "words.txt",
            "borrowed.txt",
            "late.txt",
        ] {
            assert!(
                !seen.contains(linked),
                "{when}: {linked} listed or served:\n{seen}"
            );
            let (code, out, err) = env.run(&["--root", root.to_str().unwrap(), "cat", linked]);
            assert_ne!(code, 0, "{when}: cat {linked} answered {out}");
            assert!(!out.contains("zq7"), "{when}: {out}");
            assert!(!err.contains("zq7"), "{when}: {err}");
        }
        assert!(
            !seen.contains("zq7"),
            "{when}: a protected value came out:\n{seen}"
        );
    };
    // A link made while the daemon serves the root, after its walk.
    std::fs::hard_link(root.join(".env"), root.join("late.txt")).unwrap();
    check("first walk");
    // Made after the root is served, in a directory the walk already listed.
    std::fs::remove_file(root.join("late.txt")).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    std::fs::hard_link(root.join(".env"), root.join("late.txt")).unwrap();
    check("link made while served");
    // And after a restart, with whatever the cache kept.
    let (code, _, err) = env.run(&["daemon", "restart"]);
    assert_eq!(code, 0, "{err}");
    env.ok_on(&other, &["ls", "."]);
    check("after restart");
}

/// A root whose files make a regex search slow: about 40 MB of text with accented
/// words, where the lazy DFA gives up on Unicode `\b` and the slower engines run.
fn slow_root(env: &Env) -> std::path::PathBuf {
    let root = env.root_dir("slow", "big");
    let words = [
        "álpha", "béta", "gämma", "délta", "rïver", "stône", "mäple", "clöud",
    ];
    let mut state = 7u64;
    for f in 0..40 {
        let mut text = String::with_capacity(1_100_000);
        while text.len() < 1_000_000 {
            for w in 0..12 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                if w > 0 {
                    text.push(' ');
                }
                text.push_str(words[(state >> 33) as usize % words.len()]);
            }
            text.push('\n');
        }
        write(&root, &format!("f{f:02}.txt"), &text);
    }
    let (code, _, err) = env.run(&["status", "--root", root.to_str().unwrap(), "--wait"]);
    assert_eq!(code, 0, "{err}");
    root
}

const SLOW_REGEX: &str = r"(?i)\b\w{1,20}\b\s+\b\w{1,20}\b\s+\b\w{1,20}\b\s+\w*[qxz]";

/// A `redctx grep -E SLOW_REGEX` on `root`, running.
fn slow_search(env: &Env, root: &Path) -> Child {
    env.redctx(&[
        "--root",
        root.to_str().unwrap(),
        "grep",
        "-E",
        SLOW_REGEX,
        ".",
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap()
}

/// CPU time (user + system, in clock ticks) a process used so far.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[test]
fn a_disconnect_stops_the_work_and_daemon_stop_never_waits_for_a_call() {
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let env = Env::new();
    let root = slow_root(&env);
    let pid = env.daemon_pid().expect("daemon running");
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;

    // The search is busy: the daemon burns CPU.
    let mut search = slow_search(&env, &root);
    std::thread::sleep(Duration::from_millis(700));
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_millis(500));
    let busy = cpu_ticks(pid) - before;
    assert!(
        busy * 1000 / ticks_per_second >= 150,
        "the search should keep a core busy ({busy} ticks in 0.5 s); make the root slower"
    );
    // Its client goes away: the work stops within a unit of work.
    search.kill().unwrap();
    search.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_millis(700));
    let idle = cpu_ticks(pid) - before;
    assert!(
        idle * 1000 / ticks_per_second < 100,
        "the daemon kept working after its client left ({idle} ticks in 0.7 s)"
    );

    // `daemon stop` while a search runs: the daemon exits promptly.
    let mut search = slow_search(&env, &root);
    std::thread::sleep(Duration::from_millis(700));
    let started = Instant::now();
    let (code, out, err) = env.run(&["daemon", "stop"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("stopped"), "{out}");
    poll(
        "the daemon process to exit",
        Duration::from_secs(10),
        || {
            (!Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z ")))
            .then_some(())
        },
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "stopping took {:?}",
        started.elapsed()
    );
    let _ = search.kill();
    let _ = search.wait();
}

#[test]
fn whole_root_scans_never_fail_while_a_file_churns() {
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let env = Env::new();
    let root = env.root_dir("churn", "svc");
    for i in 0..60 {
        write(
            &root,
            &format!("d{}/f{i}.txt", i % 6),
            format!("line {i} needle\n"),
        );
    }
    write(&root, "d1/steady.txt", "steady needle\n");
    env.ok_on(&root, &["status", "--wait"]);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churner = {
        let stop = stop.clone();
        let root = root.clone();
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let path = root.join("d0/hot.txt");
                match n % 3 {
                    // Rewritten in place, replaced by rename, and deleted.
                    0 => std::fs::write(&path, format!("hot {n} needle\n").repeat(200)).unwrap(),
                    1 => {
                        let tmp = root.join("d0/.hot.tmp");
                        std::fs::write(&tmp, format!("hot {n} needle\n")).unwrap();
                        std::fs::rename(&tmp, &path).unwrap();
                    }
                    _ => {
                        let _ = std::fs::remove_file(&path);
                    }
                }
                // A second file only ever replaced whole (rename over it): a read of it
                // by name must always answer, re-reading once if it moved mid-read.
                let tmp = root.join("d1/.steady.tmp");
                std::fs::write(&tmp, format!("steady {n} needle\n").repeat(50)).unwrap();
                std::fs::rename(&tmp, root.join("d1/steady.txt")).unwrap();
                n += 1;
            }
            n
        })
    };
    let mut calls = 0;
    for round in 0..200 {
        for args in [
            &["grep", "needle"][..],
            &["grep", "-E", "ne+dle"][..],
            &["retrieve", "needle line"][..],
            &["bundle", "--max-files", "1000", "d0"][..],
            &["cat", "d1/steady.txt"][..],
        ] {
            let mut all = vec!["--root", root.to_str().unwrap()];
            all.extend_from_slice(args);
            let (code, out, err) = env.run(&all);
            assert_eq!(code, 0, "round {round} {args:?}: {err}{out}");
            assert!(out.contains("needle"), "round {round} {args:?}: {out}");
            calls += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let writes = churner.join().unwrap();
    assert_eq!(calls, 1000);
    assert!(writes > 100, "the file barely churned ({writes} writes)");
}

/// A path argument is an oracle on raw names if it is resolved on disk: an agent that
/// suspects a client could ask for `clients/Acme Corp` and learn from the answer. Paths
/// an agent was only shown redacted answer exactly like paths that do not exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_paths_the_agent_was_never_shown_answer_like_missing_ones() {
    let env = Env::new();
    let root = env.root_dir("named", "svc");
    write(
        &root,
        ".agent-context-redactor.toml",
        "[redaction]\npeople = [\"Taylor Reed\"]\nclients = [\"Acme Corp\"]\n",
    );
    write(&root, "docs/Taylor Reed notes.md", "met about the plan\n");
    write(&root, "docs/plan.md", "the plan\n");
    write(&root, "clients/Acme Corp/brief.md", "brief\n");
    let c = env.client(&root, &[]).await;
    let real_and_guessed = [
        ("docs/Taylor Reed notes.md", "docs/Taylor Reed plans.md"),
        ("clients/Acme Corp", "clients/Acme Corp/x"),
        ("clients/Acme Corp/brief.md", "clients/Acme Corp/brief.txt"),
    ];
    for (real, guessed) in real_and_guessed {
        for tool in ["redctx_stat", "redctx_read", "redctx_list", "redctx_tree"] {
            let hit = c.call(tool, serde_json::json!({ "path": real })).await;
            let miss = c.call(tool, serde_json::json!({ "path": guessed })).await;
            assert!(hit.is_error, "{tool} {real}: {}", hit.text);
            assert_eq!(hit.text, miss.text, "{tool} {real} vs {guessed}");
            assert_eq!(hit.text, "Path does not exist.");
        }
        for tool in ["redctx_search", "redctx_retrieve", "redctx_bundle"] {
            let args = |p: &str| match tool {
                "redctx_bundle" => serde_json::json!({ "paths": [p] }),
                _ => serde_json::json!({ "query": "plan brief", "paths": [p] }),
            };
            let hit = c.call(tool, args(real)).await;
            let miss = c.call(tool, args(guessed)).await;
            assert_eq!(hit.text, miss.text, "{tool} {real} vs {guessed}");
            assert_eq!(hit.text, "Path does not exist.");
        }
    }
    // What the agent was shown still works: plain names, and ids from a listing.
    let plain = c
        .call("redctx_read", serde_json::json!({"path": "docs/plan.md"}))
        .await;
    assert!(plain.ok().contains("the plan"));
    let listing = c
        .call(
            "redctx_list",
            serde_json::json!({"path": ".", "recursive": true}),
        )
        .await;
    let notes_line = listing
        .ok()
        .lines()
        .find(|l| l.contains("notes.md"))
        .expect("the notes file is listed")
        .to_owned();
    assert!(!notes_line.contains("Taylor"), "{notes_line}");
    let id = notes_line.split('\t').next().unwrap();
    let by_id = c
        .call("redctx_read", serde_json::json!({ "path": id }))
        .await;
    assert!(by_id.ok().contains("met about the plan"));
    // The operator's CLI names files as they are on disk.
    let out = env.ok_on(&root, &["cat", "docs/Taylor Reed notes.md"]);
    assert!(out.contains("met about the plan"), "{out}");
}

/// UTF-16LE bytes of `text`, after a byte-order mark when `bom`.
fn utf16le(text: &str, bom: bool) -> Vec<u8> {
    let mut out = if bom { vec![0xff, 0xfe] } else { Vec::new() };
    for unit in text.encode_utf16() {
        out.extend_from_slice(&unit.to_le_bytes());
    }
    out
}

/// One file that looks like text by its name but is not (UTF-16 without a byte-order
/// mark, a NUL byte) used to make every whole-root regex search fail; it is now left out
/// and counted. UTF-16 with a byte-order mark is text in code mode (issue 33, as ripgrep
/// reads it): read, searched, bundled and counted by `stat` in its decoded form; strict
/// refuses it as the reference does, and its scans leave it out.
#[test]
fn non_text_files_are_left_out_and_bom_utf16_is_text_in_code_mode_only() {
    let env = Env::new();
    let root = env.root_dir("utf16", "svc");
    write(&root, "src/a.txt", "the needle is here\n");
    let windows = "first line\r\nneedle in UTF-16, ask jordan.vale@northwind-labs.io\r\n";
    write(&root, "docs/windows.txt", utf16le(windows, true));
    write(
        &root,
        "docs/nobom.txt",
        utf16le("needle without a mark\n", false),
    );
    write(&root, "src/nul.js", b"var x = 1;\0needle\n");
    let r = root.to_str().unwrap();
    for (mode, skipped) in [("code", 2), ("strict", 3)] {
        let on = |args: &[&str]| {
            let mut all = vec!["--root", r, "--mode", mode];
            all.extend_from_slice(args);
            env.run(&all)
        };
        let note = format!("[SKIPPED: {skipped} files that are not text]\n");
        let (code, out, err) = on(&["grep", "-E", "ne+dle"]);
        assert_eq!(code, 0, "{mode}: {err}{out}");
        assert!(out.contains("the needle is here"), "{out}");
        assert_eq!(
            out.contains("needle in UTF-16"),
            mode == "code",
            "{mode}: {out}"
        );
        assert!(out.ends_with(&note), "{mode}: {out}");
        // Literal and unmatched: no match, exit 1, no error text.
        let (code, out, err) = on(&["grep", "needle_|needle"]);
        assert_eq!(code, 1, "{mode}: {err}{out}");
        assert!(err.is_empty(), "{err}");
        // A literal query (the reference's raw-byte screen) sees the decoded text too.
        let (code, out, err) = on(&["grep", "in UTF-16"]);
        assert_eq!(
            (code == 0, err.as_str()),
            (mode == "code", ""),
            "{mode}: {out}"
        );
        assert_eq!(
            out.contains("needle in UTF-16"),
            mode == "code",
            "{mode}: {out}"
        );
        let (code, out, err) = on(&["bundle", "."]);
        assert_eq!(code, 0, "{mode}: {err}");
        assert_eq!(
            out.contains("needle in UTF-16"),
            mode == "code",
            "{mode}: {out}"
        );
        assert!(out.ends_with(&note), "{mode}: {out}");
        let (code, out, err) = on(&["retrieve", "needle UTF-16"]);
        assert_eq!(code, 0, "{mode}: {err}");
        assert_eq!(
            out.contains("needle in UTF-16"),
            mode == "code",
            "{mode}: {out}"
        );
        let (code, out, err) = on(&["stat", "docs/windows.txt"]);
        assert_eq!(code, 0, "{mode}: {err}");
        // Code mode counts the decoded lines; strict the raw `\n` bytes, as the reference.
        let lines = if mode == "code" { 2 } else { 3 };
        assert!(out.ends_with(&format!("lines: {lines}\n")), "{mode}: {out}");
        let (code, out, err) = on(&["cat", "docs/windows.txt"]);
        if mode == "code" {
            assert_eq!(code, 0, "{err}");
            assert!(
                out.contains("first line\r\nneedle in UTF-16, ask "),
                "{out:?}"
            );
            assert!(!out.contains("jordan.vale@northwind-labs.io"), "{out}");
            let (code, out, err) = on(&["cat", "--start-line", "2", "docs/windows.txt"]);
            assert_eq!(code, 0, "{err}");
            assert!(
                out.contains("lines 2-2 ---\nneedle in UTF-16, ask [EMAIL_"),
                "{out:?}"
            );
        } else {
            // A direct read refuses, with the reference's message.
            assert_eq!(code, 1);
            assert_eq!(
                err.trim_end(),
                "Refusing to print non-text file. Use stat/list to inspect metadata."
            );
        }
        let (code, _, err) = on(&["cat", "docs/nobom.txt"]);
        assert_eq!(code, 1, "{mode}");
        assert!(err.starts_with("Refusing to print non-text file."), "{err}");
    }
}

#[test]
fn a_directory_too_deep_to_open_is_left_out_of_whole_root_calls() {
    let env = Env::new();
    let root = env.root_dir("deep", "svc");
    write(&root, "top.txt", "top here\n");
    // A chain of directories whose relative path passes PATH_MAX (4096 bytes) on
    // Linux, made one level at a time from the level above (a path that long cannot be
    // named whole).
    let name = c"d";
    let top = std::ffi::CString::new(root.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: plain directory syscalls on descriptors this test owns and closes.
    unsafe {
        let mut fd = libc::open(top.as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY);
        assert!(fd >= 0);
        for _ in 0..2100 {
            assert_eq!(libc::mkdirat(fd, name.as_ptr(), 0o755), 0);
            let next = libc::openat(fd, name.as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY);
            assert!(next >= 0);
            libc::close(fd);
            fd = next;
        }
        libc::close(fd);
    }
    let all = everything(&env, &root, "top");
    assert!(all.contains("top.txt:top here"), "{all}");
    assert!(!all.contains("Tool execution failed"), "{all}");
}

#[test]
fn a_configured_name_in_a_latin1_file_is_redacted_in_code_mode() {
    let env = Env::new();
    let root = env.root_dir("latin1", "kb");
    write(
        &root,
        ".agent-context-redactor.toml",
        "[redaction]\npeople = [\"Jörg Müllerstein\"]\n",
    );
    std::fs::write(root.join("owners.txt"), b"Owner: J\xf6rg M\xfcllerstein\n").unwrap();
    let text = env.ok_on(&root, &["cat", "owners.txt"]);
    assert!(text.contains("Owner: [PERSON_"), "{text}");
    assert!(!text.contains("llerstein") && !text.contains('J'), "{text}");
}

//! The human `redctx` CLI as a user runs it: the real binary, a real `redctxd` in a
//! private temporary state directory, and temporary roots.
//!
//! Two groups:
//! - against the fake backend (`REDCTX_FAKE_BACKEND=1`, which echoes each call as
//!   `tool=<tool> root=<root> args=<json>`): argument mapping, exit codes, where text is
//!   printed, daemon management, `status`, `roots`;
//! - differential, against the reference CLI (`redctx` of redacted-context-mcp 0.10.1,
//!   found by `redctx_test_support::Oracle`) on the same root: stdout and exit code of each command must be identical.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;

use common::{REDCTX, redctxd};

/// A private daemon (its own state dir and socket) and a directory for roots; the
/// daemon is stopped on drop.
struct Env {
    state: tempfile::TempDir,
    roots: tempfile::TempDir,
    fake: bool,
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8(o.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Env {
    fn new(fake: bool) -> Env {
        Env {
            state: tempfile::tempdir().unwrap(),
            roots: tempfile::tempdir().unwrap(),
            fake,
        }
    }

    /// A new root directory `name` (canonical path).
    fn root(&self, name: &str) -> PathBuf {
        let p = self.roots.path().join(name);
        std::fs::create_dir_all(&p).unwrap();
        p.canonicalize().unwrap()
    }

    fn command(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(REDCTX);
        c.args(args)
            .current_dir(cwd)
            .env("REDCTX_STATE_DIR", self.state.path())
            .env("REDCTX_SOCKET", self.state.path().join("d.sock"))
            .env("REDCTX_DAEMON", redctxd())
            .env("REDACTED_CONTEXT_SALT", "golden-salt")
            .env_remove("REDACTED_CONTEXT_DETECTOR_PROFILE")
            .env_remove("REDACTED_CONTEXT_TERMS")
            .stdin(Stdio::null());
        if self.fake {
            c.env("REDCTX_FAKE_BACKEND", "1");
        } else {
            c.env_remove("REDCTX_FAKE_BACKEND");
        }
        c
    }

    /// Run `redctx args…` in `cwd`.
    fn run_in(&self, cwd: &Path, args: &[&str]) -> Run {
        self.command(cwd, args).output().unwrap().into()
    }

    fn run(&self, args: &[&str]) -> Run {
        self.run_in(self.roots.path(), args)
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = self
            .command(self.roots.path(), &["daemon", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The fake backend's echo of one call.
fn echo(tool: &str, root: &Path, args: &str) -> String {
    format!("tool={tool} root={} args={args}\n", root.display())
}

#[test]
fn each_command_sends_its_tool_and_reference_defaults() {
    let env = Env::new(true);
    let r = env.root("alpha");
    let cases: &[(&[&str], &str, &str)] = &[
        (&["ls"], "redctx_list", r#"{"path":".","recursive":false}"#),
        (
            &["ls", "-r", "--max-depth", "2", "docs"],
            "redctx_list",
            r#"{"path":"docs","recursive":true,"max_depth":2}"#,
        ),
        (&["tree"], "redctx_tree", r#"{"path":".","max_depth":3}"#),
        (
            &["cat", "-n", "--start-line", "2", "a.md"],
            "redctx_read",
            r#"{"path":"a.md","start_line":2,"max_chars":120000,"line_numbers":true}"#,
        ),
        (
            &["read", "@p_0123456789ab"],
            "redctx_read",
            r#"{"path":"@p_0123456789ab","max_chars":120000,"line_numbers":false}"#,
        ),
        (
            &["head", "-n", "2", "a.md"],
            "redctx_read",
            r#"{"path":"a.md","head":2,"max_chars":120000,"line_numbers":false}"#,
        ),
        (
            &["tail", "a.md", "--line-numbers"],
            "redctx_read",
            r#"{"path":"a.md","tail":40,"max_chars":120000,"line_numbers":true}"#,
        ),
        (
            &["grep", "-C", "1", "needle", "docs"],
            "redctx_search",
            r#"{"query":"needle","paths":["docs"],"ignore_case":false,"regex":false,"context":1,"glob":[],"max_results":200}"#,
        ),
        (
            &["search", "-i", "-E", "--glob", "*.md", "a|b"],
            "redctx_search",
            r#"{"query":"a|b","paths":[],"ignore_case":true,"regex":true,"context":0,"glob":["*.md"],"max_results":200}"#,
        ),
        (
            &["retrieve", "backup plan", "--max-results", "3"],
            "redctx_retrieve",
            r#"{"query":"backup plan","paths":[],"glob":[],"max_results":3,"max_chars":12000}"#,
        ),
        (&["stat", "docs"], "redctx_stat", r#"{"path":"docs"}"#),
        (
            &["bundle", "--max-files", "2", "docs"],
            "redctx_bundle",
            r#"{"paths":["docs"],"glob":[],"max_files":2,"max_chars_per_file":30000,"max_total_chars":300000}"#,
        ),
        (&["doctor"], "redctx_doctor", "{}"),
        (
            &["audit", "--format", "json"],
            "redctx_audit",
            r#"{"format":"json"}"#,
        ),
    ];
    for (args, tool, json) in cases {
        let out = env.run_in(&r, args);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        assert_eq!(out.stdout, echo(tool, &r, json), "{args:?}");
        assert_eq!(out.stderr, "", "{args:?}");
    }
}

#[test]
fn global_options_select_the_root_before_the_command() {
    let env = Env::new(true);
    let beta = env.root("beta");
    let out = env.run(&[
        "--root",
        s(&beta),
        "--mode",
        "balanced",
        "--detector-profile",
        "extended",
        "--include-private",
        "--no-gitignore",
        "stat",
        "x",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, echo("redctx_stat", &beta, r#"{"path":"x"}"#));

    let missing = env.roots.path().join("nope");
    let out = env.run(&["--root", s(&missing), "ls"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (1, "", "Root must be an existing directory.\n")
    );
}

#[test]
fn failed_calls_print_their_message_on_stderr_and_exit_1() {
    let env = Env::new(true);
    let r = env.root("alpha");
    let out = env.run_in(&r, &["cat", "missing"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (1, "", "Path does not exist.\n")
    );
    let blocked = env.root("blocked");
    let out = env.run_in(&blocked, &["grep", "x"]);
    assert_eq!(out.code, 1);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "Context access is blocked until the operator repairs the local redaction configuration.\n"
    );
}

#[test]
fn max_seconds_gives_up_with_the_reference_deadline_message() {
    let env = Env::new(true);
    let r = env.root("alpha");
    // The fake backend's `slow` path runs until the call is cancelled.
    let out = env.run_in(&r, &["cat", "--max-seconds", "0.2", "slow"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (1, "", "Operation deadline exceeded.\n")
    );
}

#[test]
fn usage_errors_exit_2() {
    let env = Env::new(true);
    let r = env.root("alpha");
    for args in [
        &["cat"][..],
        &["--mode", "lenient", "ls"],
        &["audit", "--format", "xml"],
        &["head", "-n", "many", "a"],
        &["frobnicate"],
        &[],
        // Options before `mcp` would silently be ignored; refuse them.
        &["--root", "/", "mcp"],
    ] {
        let out = env.run_in(&r, args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(out.stdout, "", "{args:?}");
    }
}

#[test]
fn every_command_help_explains_itself_with_an_example() {
    let env = Env::new(true);
    for cmd in [
        "ls",
        "tree",
        "cat",
        "head",
        "tail",
        "grep",
        "retrieve",
        "stat",
        "bundle",
        "doctor",
        "audit",
        "benchmark",
        "status",
        "roots",
        "discover",
        "discover-update",
    ] {
        let out = env.run(&[cmd, "--help"]);
        assert_eq!(out.code, 0, "{cmd}");
        assert!(out.stdout.contains("Example"), "{cmd}: {}", out.stdout);
    }
    for sub in ["install", "logs"] {
        let out = env.run(&["daemon", sub, "--help"]);
        assert_eq!(out.code, 0, "{sub}");
        assert!(out.stdout.contains("Example"), "{sub}: {}", out.stdout);
    }
    let out = env.run(&["--help"]);
    assert!(out.stdout.contains("default: code"), "{}", out.stdout);
    // Human commands that print raw terms say so.
    for cmd in ["discover", "discover-update"] {
        let out = env.run(&[cmd, "--help"]);
        assert!(out.stdout.contains("raw"), "{cmd}: {}", out.stdout);
        assert!(
            out.stdout.contains("never run for"),
            "{cmd}: {}",
            out.stdout
        );
    }
    let out = env.run(&["grep", "--help"]);
    assert!(
        out.stdout.contains("Case-sensitive by default"),
        "{}",
        out.stdout
    );
}

#[test]
fn status_registers_a_root_and_roots_lists_and_forgets_it() {
    let env = Env::new(true);
    let r = env.root("alpha");

    let out = env.run(&["status"]);
    assert_eq!(out.code, 1, "no daemon yet: {}", out.stdout);
    assert!(out.stderr.contains("not running"), "{}", out.stderr);
    let out = env.run(&["roots"]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "no roots served (the redctx daemon is not running)\n")
    );

    let out = env.run(&["status", "--root", s(&r)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("redctx daemon "), "{}", out.stdout);
    assert!(
        out.stdout.contains(&format!(
            "\n{}\n  state: ready\n  files: unknown seen, unknown indexed, unknown pending (450 in the index)\n",
            r.display()
        )),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("  policy: unknown\n"), "{}", out.stdout);

    // Not a terminal: plain lines, ending with the ready line.
    let out = env.run_in(&r, &["status", "--wait"]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "ready: 450 files\n"),
        "{}",
        out.stderr
    );

    let out = env.run(&["roots"]);
    assert_eq!(out.stdout, format!("{}\tready\t450 files\n", r.display()));

    let out = env.run(&["roots", "forget", s(&r)]);
    assert_eq!(
        (out.code, out.stdout.clone()),
        (0, format!("forgot {}\n", r.display()))
    );
    let out = env.run(&["roots"]);
    assert_eq!(out.stdout, "no roots served\n");
    let out = env.run(&["roots", "forget", s(&r)]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("is not served"), "{}", out.stderr);
}

#[test]
fn daemon_logs_print_the_end_of_the_log() {
    let env = Env::new(true);
    let out = env.run(&["daemon", "logs"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("no daemon log"), "{}", out.stderr);

    let r = env.root("alpha");
    assert_eq!(env.run_in(&r, &["doctor"]).code, 0);
    let log = env.state.path().join("logs").join("redctxd.log");
    let full = std::fs::read_to_string(&log).unwrap();
    let out = env.run(&["daemon", "logs", "-n", "1"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let last = full.lines().last().unwrap();
    assert_eq!(out.stdout, format!("{last}\n"));
    let out = env.run(&["daemon", "logs"]);
    assert_eq!(out.stdout, full);
}

#[test]
fn daemon_install_writes_a_user_unit_or_says_systemd_is_missing() {
    let env = Env::new(true);
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| -> Run {
        env.command(env.roots.path(), args)
            .env("HOME", home.path())
            .env_remove("XDG_CONFIG_HOME")
            .output()
            .unwrap()
            .into()
    };
    let exe = redctxd().canonicalize().unwrap();
    let out = run(&["daemon", "install", "--print"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains(&format!("\nExecStart={}\n", exe.display())),
        "{}",
        out.stdout
    );
    let unit = home.path().join(".config/systemd/user/redctxd.service");
    let out = run(&["daemon", "install"]);
    if Path::new("/run/systemd/system").is_dir() {
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(
            out.stdout.contains(
                "systemctl --user daemon-reload && systemctl --user enable --now redctxd"
            ),
            "{}",
            out.stdout
        );
        let written = std::fs::read_to_string(&unit).unwrap();
        assert!(written.contains(&format!("\nExecStart={}\n", exe.display())));
    } else {
        assert_eq!(out.code, 1);
        assert!(
            out.stderr.contains("systemd is not running"),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains("--print"), "{}", out.stderr);
        assert!(!unit.exists());
    }
}

// ---------------------------------------------------------------------------------
// Differential tests against the reference CLI.

/// The reference `redctx`, or `None` when `REDCTX_SKIP_ORACLE=1`.
fn reference_cli() -> Option<PathBuf> {
    redctx_test_support::Oracle::find().program("redctx")
}

/// Fixture A's file (spec 14.2 / 17), and files with nothing to redact.
fn write_kb(kb: &Path) {
    let files: &[(&str, &str)] = &[
        (".agent-context-redactor.toml", "[redaction]\n"),
        (
            "context/Client Alpha - Taylor Reed notes.md",
            "# Client Alpha notes\n\nTaylor Reed met Jordan Vale from Riverton Partners.\n\
             Email taylor.reed@example.invalid and visit https://example.invalid/private.\n\
             Project Meridian depends on Azure and PostgreSQL policy controls.\n\
             password = superSecret1234\n\
             Call +1 415 555 0100 or ping @tay_reed. Host 10.12.30.4, db01.internal.example.\n\
             Attendees: Avery, Kim, Al\n",
        ),
        (
            "docs/readme.txt",
            "the quick brown fox\njumps over the lazy dog\nand then it rests\nby the river\n",
        ),
        ("docs/notes.md", "# notes\n\nsome plain words\nthe end\n"),
        (
            "src/main.rs",
            "fn main() {\n    let total = 1 + 2;\n    println!(\"{}\", total);\n}\n",
        ),
        ("empty/.keep", ""),
        // Excluded by default, served with --include-private.
        ("node_modules/pkg/index.js", "module.exports = 1;\n"),
    ];
    for (rel, text) in files {
        let p = kb.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

fn run_reference(cli: &Path, kb: &Path, state: &Path, args: &[&str]) -> Run {
    Command::new(cli)
        .args(["--root", s(kb), "--mode", "balanced"])
        .args(args)
        .current_dir(kb)
        .env("REDACTED_CONTEXT_SALT", "golden-salt")
        .env("REDACTED_CONTEXT_STATE_DIR", state)
        .env_remove("REDACTED_CONTEXT_DETECTOR_PROFILE")
        .env_remove("REDACTED_CONTEXT_TERMS")
        .stdin(Stdio::null())
        .output()
        .unwrap()
        .into()
}

/// Our `doctor` adds `key: value` lines of its own after every reference key
/// (`builtin_detectors`, see `tools::doctor`); everything before them must be identical.
fn same_doctor(ours: &str, reference: &str) -> bool {
    ours.strip_prefix(reference).is_some_and(|extra| {
        extra
            .lines()
            .all(|l| l.split_once(": ").is_some_and(|(k, _)| !k.contains(' ')))
    })
}

/// Run each command line on `kb` with both CLIs; describe every difference in stdout,
/// exit code, or (for a failed command) the stderr message.
fn differences(env: &Env, reference: &Path, kb: &Path, cases: &[&[&str]]) -> Vec<String> {
    let ref_state = tempfile::tempdir().unwrap();
    let mut diffs = Vec::new();
    for args in cases {
        let want = run_reference(reference, kb, ref_state.path(), args);
        let mut full = vec!["--root", s(kb), "--mode", "balanced"];
        full.extend_from_slice(args);
        let got = env.run(&full);
        let same_out = got.stdout == want.stdout
            || (args.contains(&"doctor") && same_doctor(&got.stdout, &want.stdout));
        if got.code != want.code || !same_out {
            diffs.push(format!(
                "redctx {args:?}\n  reference: exit {} stdout {:?} stderr {:?}\n  ours:      exit {} stdout {:?} stderr {:?}",
                want.code, want.stdout, want.stderr, got.code, got.stdout, got.stderr
            ));
        }
        // Failures say the same thing (the reference prints the bare message).
        if want.code == 1
            && want.stdout.is_empty()
            && !want.stderr.contains("Traceback")
            && got.stderr != want.stderr
        {
            diffs.push(format!(
                "redctx {args:?} stderr\n  reference: {:?}\n  ours:      {:?}",
                want.stderr, got.stderr
            ));
        }
    }
    diffs
}

#[test]
fn commands_print_what_the_reference_cli_prints() {
    let Some(reference) = reference_cli() else {
        return;
    };
    let env = Env::new(false);
    let kb = env.root("kb");
    write_kb(&kb);
    let readme = "docs/readme.txt";
    let fixture = "context/Client Alpha - Taylor Reed notes.md";
    let cases: &[&[&str]] = &[
        &["ls"],
        &["ls", "docs"],
        &["ls", "-r"],
        &["ls", "-r", "--max-depth", "1"],
        &["ls", "empty"],
        &["ls", readme],
        &["ls", "--max-entries", "1"],
        &["tree"],
        &["tree", "--max-depth", "1"],
        &["tree", readme],
        &["cat", "-n", readme],
        &["cat", fixture],
        &["read", "--start-line", "2", "--end-line", "3", readme],
        &["cat", "--start-line", "3", "--end-line", "2", readme],
        &["cat", "--start-line", "9", readme],
        &["cat", "--max-chars", "10", readme],
        &["head", "-n", "2", readme],
        &["head", "-n", "0", readme],
        &["tail", "-n", "2", readme],
        &["tail", "-n", "2", "--line-numbers", fixture],
        &["grep", "-C", "1", "lazy"],
        &["grep", "the", "docs"],
        &["grep", "-i", "THE", "--glob", "*.md"],
        &["grep", "--max-results", "1", "the"],
        &["grep", "-E", "r[aeiou]st", "docs"],
        &["grep", "-E", "("],
        &["grep", "no such text anywhere"],
        &["grep", "Lazy"],
        &["grep", "PostgreSQL"],
        &["stat", readme],
        &["stat", "docs"],
        &["stat", fixture],
        &["bundle"],
        &["bundle", "docs"],
        &["bundle", "--max-files", "1"],
        &["bundle", "--glob", "*.nothing"],
        &["retrieve", "quick brown fox"],
        &["retrieve", "zebra"],
        &["doctor"],
        &["--detector-profile", "extended", "doctor"],
        &["--include-private", "ls", "-r"],
        &["audit"],
        &["audit", "--format", "json"],
        &["cat", "docs/absent.txt"],
        &["cat", "docs"],
        &["cat", ".agent-context-redactor.toml"],
        &["stat", "../outside"],
    ];
    let diffs = differences(&env, &reference, &kb, cases);
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

#[test]
fn an_audit_fail_prints_the_report_and_exits_1_like_the_reference() {
    let Some(reference) = reference_cli() else {
        return;
    };
    let env = Env::new(false);
    let kb = env.root("linked/kb");
    write_kb(&kb);
    std::os::unix::fs::symlink("docs/readme.txt", kb.join("link.txt")).unwrap();
    let cases: &[&[&str]] = &[
        &["audit"],
        &["audit", "--format", "json"],
        &["ls"],
        &["cat", "link.txt"],
    ];
    let diffs = differences(&env, &reference, &kb, cases);
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

#[test]
fn status_wait_reports_plain_progress_until_ready() {
    let env = Env::new(false);
    let big = env.root("big");
    for d in 0..20 {
        let dir = big.join(format!("d{d:02}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..250 {
            std::fs::write(dir.join(format!("f{f:03}.txt")), format!("file {d} {f}\n")).unwrap();
        }
    }
    let out = env.run(&["status", "--wait", "--root", s(&big)]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    let (last, progress) = lines.split_last().unwrap();
    assert_eq!(*last, "ready: 5000 files");
    for l in progress {
        let ok = l.starts_with("indexing: ")
            && (l.ends_with("files so far") || (l.contains("/5000 files (") && l.ends_with("%)")));
        assert!(ok, "unexpected progress line {l:?}");
    }
    let out = env.run(&["status", "--root", s(&big)]);
    assert!(
        out.stdout.contains(&format!(
            "\n{}\n  state: ready\n  files: 5000 seen, 5000 indexed, 0 pending (5000 in the index)\n",
            big.display()
        )),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("\n  policy: ok\n"), "{}", out.stdout);

    // The same path under other options is another served root, and says so.
    let out = env.run(&["--root", s(&big), "--mode", "strict", "status"]);
    assert!(
        out.stdout
            .contains(&format!("\n{} (mode strict)\n", big.display())),
        "{}",
        out.stdout
    );
    let out = env.run(&["roots"]);
    assert!(
        out.stdout
            .contains(&format!("{}\tready\t5000 files\n", big.display())),
        "{}",
        out.stdout
    );
}

// ---------------------------------------------------------------------------------
// `redctx benchmark`: the daemon's figures in the reference's report.

/// A report line `key: value` split in two.
fn report_lines(text: &str) -> Vec<(&str, &str)> {
    text.lines()
        .map(|l| l.split_once(": ").unwrap_or((l, "")))
        .collect()
}

const TIMINGS: [&str; 4] = [
    "walk_and_text_detection",
    "read_all_text_files",
    "redact_each_file_as_one_chunk",
    "search_redacted_text",
];

/// A timing as the reference prints it: seconds with six decimals and an `s`.
fn is_seconds(v: &str) -> bool {
    v.strip_suffix('s')
        .and_then(|n| n.split_once('.'))
        .is_some_and(|(a, b)| {
            !a.is_empty()
                && a.bytes().all(|c| c.is_ascii_digit())
                && b.len() == 6
                && b.bytes().all(|c| c.is_ascii_digit())
        })
}

#[test]
fn benchmark_sends_its_options_and_prints_the_daemons_figures() {
    let env = Env::new(true);
    let r = env.root("alpha");
    // The fake daemon echoes max_files as `files`, max_entries as `visible_bytes`, the
    // query's length as `text_characters` and ignore_case as `matches`.
    let out = env.run_in(
        &r,
        &[
            "benchmark",
            "--query",
            "abcd",
            "--max-files",
            "3",
            "--max-entries",
            "7",
            "--no-ignore-case",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "root: .\ndirectories: 1\nfiles: 3\ntext_files: 0\nvisible_bytes: 7\ntext_characters: 4\n\
         redaction_read_bytes: 0\nmatches: 0\nwalk_and_text_detection: 0.001500s\n\
         read_all_text_files: 0.000001s\nredact_each_file_as_one_chunk: 2.000000s\n\
         search_redacted_text: 0.000000s\n"
    );
    // The reference's defaults: case-folded, its no-match query (29 characters).
    let out = env.run_in(&r, &["benchmark", "--format", "json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["matches"], 1);
    assert_eq!(v["text_characters"], "__redctx_no_match_benchmark__".len());
    assert_eq!(v["timings_seconds"]["redact_each_file_as_one_chunk"], 2.0);
    // The last of --ignore-case / --no-ignore-case wins, as with argparse.
    let out = env.run_in(&r, &["benchmark", "--no-ignore-case", "--ignore-case"]);
    assert!(out.stdout.contains("\nmatches: 1\n"), "{}", out.stdout);

    let out = env.run_in(
        &r,
        &["benchmark", "--query", "slow", "--max-seconds", "0.2"],
    );
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (1, "", "Operation deadline exceeded.\n")
    );
    let blocked = env.root("blocked");
    let out = env.run_in(&blocked, &["benchmark"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (
            1,
            "",
            "Context access is blocked until the operator repairs the local redaction configuration.\n"
        )
    );
}

#[test]
fn benchmark_prints_the_reference_report_shape_with_its_counts() {
    let Some(reference) = reference_cli() else {
        return;
    };
    let env = Env::new(false);
    let kb = env.root("kb");
    write_kb(&kb);
    let ref_state = tempfile::tempdir().unwrap();
    let ours = |args: &[&str]| {
        let mut full = vec!["--root", s(&kb), "--mode", "balanced"];
        full.extend_from_slice(args);
        env.run(&full)
    };
    let theirs = |args: &[&str]| run_reference(&reference, &kb, ref_state.path(), args);

    for args in [
        &["benchmark"][..],
        &["benchmark", "--query", "QUICK BROWN"],
        &["benchmark", "--query", "QUICK BROWN", "--no-ignore-case"],
        &["benchmark", "--query", "Taylor Reed"],
    ] {
        let (got, want) = (ours(args), theirs(args));
        assert_eq!(
            (got.code, want.code),
            (0, 0),
            "{args:?}: {} / {}",
            got.stderr,
            want.stderr
        );
        let (g, w) = (report_lines(&got.stdout), report_lines(&want.stdout));
        let keys = |l: &[(&str, &str)]| l.iter().map(|(k, _)| k.to_string()).collect::<Vec<_>>();
        assert_eq!(keys(&g), keys(&w), "{args:?}\n{}", got.stdout);
        for ((key, ours), (_, theirs)) in g.iter().zip(&w) {
            if TIMINGS.contains(key) {
                assert!(
                    is_seconds(ours) && is_seconds(theirs),
                    "{key}: {ours} / {theirs}"
                );
            } else {
                // Counts follow the reference's definitions on the same tree.
                assert_eq!(ours, theirs, "{args:?} {key}");
            }
        }
    }

    let (got, want) = (
        ours(&["benchmark", "--format", "json"]),
        theirs(&["benchmark", "--format", "json"]),
    );
    assert_eq!((got.code, want.code), (0, 0), "{}", got.stderr);
    let g: serde_json::Value = serde_json::from_str(&got.stdout).unwrap();
    let w: serde_json::Value = serde_json::from_str(&want.stdout).unwrap();
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&g), keys(&w));
    assert_eq!(keys(&g["timings_seconds"]), keys(&w["timings_seconds"]));
    for k in keys(&w) {
        if k != "timings_seconds" {
            assert_eq!(g[&k], w[&k], "{k}");
        }
    }
    for k in TIMINGS {
        assert!(
            g["timings_seconds"][k].as_f64().is_some_and(|x| x >= 0.0),
            "{k}"
        );
    }

    // Budgets stop the run with the reference's message and exit code.
    for args in [
        &["benchmark", "--max-entries", "2"][..],
        &["benchmark", "--max-files", "1"],
        &["benchmark", "--max-raw-bytes-per-file", "10"],
        &["benchmark", "--max-total-raw-bytes", "100"],
    ] {
        let (got, want) = (ours(args), theirs(args));
        assert_eq!(
            (got.code, got.stdout.as_str(), got.stderr.as_str()),
            (want.code, want.stdout.as_str(), want.stderr.as_str()),
            "{args:?}"
        );
    }

    // Usage errors: exit 2, nothing on stdout, and like argparse the command's usage plus
    // a line naming the offending argument.
    for (args, names) in [
        (&["benchmark", "--format", "xml"][..], "--format"),
        (&["benchmark", "--bogus"], "--bogus"),
        (&["benchmark", "--max-files", "many"], "--max-files"),
        (&["benchmark", "--query"], "--query"),
    ] {
        let (got, want) = (ours(args), theirs(args));
        assert_eq!((got.code, want.code), (2, 2), "{args:?}");
        assert_eq!(
            (got.stdout.as_str(), want.stdout.as_str()),
            ("", ""),
            "{args:?}"
        );
        for (who, err) in [("ours", &got.stderr), ("reference", &want.stderr)] {
            assert!(
                err.to_lowercase().contains("usage: redctx"),
                "{who} {args:?}: {err}"
            );
            assert!(
                err.contains("error:") && err.contains(names),
                "{who} {args:?}: {err}"
            );
        }
        assert!(
            got.stderr.contains("Usage: redctx benchmark"),
            "{args:?}: {}",
            got.stderr
        );
    }
}

#[test]
fn an_invalid_config_is_named_like_the_reference_cli_names_it() {
    let Some(reference) = reference_cli() else {
        return;
    };
    let env = Env::new(false);
    let kb = env.root("kb");
    write_kb(&kb);
    let bad = env.roots.path().join("bad.toml");
    std::fs::write(&bad, "[redaction]\nclients = 3\n").unwrap();
    let bad = s(&bad);
    let cases: &[&[&str]] = &[
        &["--config", bad, "ls"],
        &["--config", bad, "cat", "docs/readme.txt"],
        &["--config", bad, "benchmark"],
    ];
    let diffs = differences(&env, &reference, &kb, cases);
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));

    // `status --wait` says why and what to do.
    let out = env.run(&[
        "--root",
        s(&kb),
        "--mode",
        "balanced",
        "--config",
        bad,
        "status",
        "--wait",
    ]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.starts_with(
            "redctx: policy blocked (Expected string or list in redaction config, got int.); "
        ) && out.stderr.contains("repair its redaction config"),
        "{}",
        out.stderr
    );
    let out = env.run(&["status", "--root", "/nonexistent/dir"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "redctx: /nonexistent/dir is not an existing directory; give the directory to serve with --root DIR\n"
        )
    );
}

//! Random tool arguments straight into the daemon's backend: no panic, an answer for every
//! call in bounded time, and no raw secret or raw redacted name in any answer.
//!
//! The shim validates arguments against the tool schemas before the daemon sees them,
//! but the daemon must not rely on it (an older or foreign client, a bug in the
//! validation): here nothing is validated first. A fixed-seed generator keeps the run
//! deterministic; `REDCTX_FUZZ_CALLS` makes it longer.

use redctx_daemon::engine::config::EnvOverrides;
use redctx_daemon::server::{Backend, Cancel};
use redctx_daemon::service::Service;
use redctx_proto::{Caller, RootSpec};
use redctx_test_support::Rng;
use serde_json::{Map, Value, json};
use std::time::{Duration, Instant};

const SECRET: &str = "ghp_R4wS3cr3tV4lu3F0rTh3Fuzz3rX9yZ8wQ7vU6t";
const NAME: &str = "Quillon Marrowby";

/// Names the daemon is not asked to serve, beside the served ones.
const OTHER_TOOLS: &[&str] = &["redctx_github_repos", "no_such_tool", ""];

const KEYS: &[&str] = &[
    "path",
    "paths",
    "query",
    "glob",
    "regex",
    "ignore_case",
    "context",
    "max_results",
    "max_chars",
    "max_depth",
    "recursive",
    "start_line",
    "end_line",
    "line_numbers",
    "head",
    "tail",
    "max_files",
    "max_chars_per_file",
    "max_total_chars",
    "format",
    "cursor",
    "zzz",
];

fn string(rng: &mut Rng) -> String {
    let pieces = [
        ".",
        "..",
        "/",
        "../..",
        "/etc/passwd",
        "docs",
        "docs/",
        "notes.md",
        "@p_",
        "@p_0000",
        "@p_zzzzzzzzzzzz",
        "p_",
        "redctx://p_",
        "*",
        "**",
        "[",
        "]",
        "(",
        "a+",
        "(a+)+$",
        "\\",
        "\u{0}",
        "é",
        "ß",
        "İ",
        "\u{202e}",
        "\n",
        " ",
        "Quillon",
        "ghp_",
        "*Quill*",
        "docs/Q*",
        "[PERSON_",
        "needle",
        "%s",
        "\u{fffd}",
        "C:\\x",
        "~",
        "$HOME",
    ];
    let mut s = String::new();
    for _ in 0..rng.below(6) {
        let piece = *rng.pick(&pieces[..]);
        s.push_str(piece);
    }
    if rng.below(40) == 0 {
        s.push_str(&"x".repeat(rng.below(20_000)));
    }
    s
}

fn value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 2 { 7 } else { 9 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.below(2) == 0),
        2 => json!(*rng.pick(&[0i64, 1, -1, 2, 3, 200, 4096, i64::MAX, i64::MIN, 1 << 40])),
        3 => json!(*rng.pick(&[0.5f64, -2.5, 1e300, 3.0])),
        4 | 5 => Value::String(string(rng)),
        6 => json!(u64::MAX),
        7 => Value::Array((0..rng.below(4)).map(|_| value(rng, depth + 1)).collect()),
        _ => {
            let mut map = Map::new();
            for _ in 0..rng.below(3) {
                map.insert(string(rng), value(rng, depth + 1));
            }
            Value::Object(map)
        }
    }
}

fn arguments(rng: &mut Rng) -> String {
    if rng.below(30) == 0 {
        // Not an object at all, or not JSON: the daemon must still answer.
        return (*rng.pick(&["", "[]", "null", "{", "\"x\"", "{\"path\":"])).to_owned();
    }
    let mut map = Map::new();
    for _ in 0..rng.below(5) {
        map.insert((*rng.pick(KEYS)).to_owned(), value(rng, 0));
    }
    Value::Object(map).to_string()
}

#[test]
fn random_tool_arguments_always_get_a_safe_answer() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let vault = dir.path().join("vault");
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::create_dir_all(&vault).unwrap();
    std::fs::write(
        root.join(".agent-context-redactor.toml"),
        format!("[redaction]\npeople = [\"{NAME}\"]\n"),
    )
    .unwrap();
    std::fs::write(
        root.join("docs/notes.md"),
        format!("owner {NAME}\nneedle\n"),
    )
    .unwrap();
    std::fs::write(root.join(format!("docs/{NAME} plan.md")), "needle two\n").unwrap();
    std::fs::write(root.join("app.py"), format!("TOKEN = \"{SECRET}\"\n")).unwrap();
    let root = root.canonicalize().unwrap();
    let service = Service::new(
        None,
        EnvOverrides {
            state_dir: Some(vault),
            ..EnvOverrides::default()
        },
    );
    let spec = RootSpec {
        path: root,
        gitignore: true,
        ..RootSpec::default()
    };
    let calls: usize = std::env::var("REDCTX_FUZZ_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500);
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    let mut answered_ok = 0;
    for call in 0..calls {
        let tool = if rng.below(10) == 0 {
            *rng.pick(OTHER_TOOLS)
        } else {
            *rng.pick(&redctx_proto::tools::ALL)
        };
        let args = arguments(&mut rng);
        let t = Instant::now();
        let result = service.call_tool(&spec, tool, &args, Caller::Agent, &Cancel::new());
        slowest = slowest.max(t.elapsed());
        answered_ok += usize::from(!result.is_error);
        for raw in [SECRET, NAME, "Quillon", "Marrowby"] {
            assert!(
                !result.text.contains(raw) && !result.receipt_json.contains(raw),
                "call {call} {tool} {args}: raw {raw:?} in {}",
                result.text
            );
        }
        assert!(
            serde_json::from_str::<Value>(&result.receipt_json).is_ok(),
            "call {call}: receipt is not JSON"
        );
    }
    // The generator must reach the tools, not only their argument errors: a plain
    // `{}` is valid for most of them.
    assert!(
        answered_ok * 10 >= calls,
        "only {answered_ok} of {calls} calls succeeded"
    );
    assert!(
        slowest < Duration::from_secs(10),
        "slowest call took {slowest:?}"
    );
    eprintln!(
        "{calls} calls in {:?}, slowest {slowest:?}",
        started.elapsed()
    );
}

/// Bounds past what the daemon's own types hold answer as the largest bound, as the
/// reference's unbounded integers do: a depth past `u32::MAX` is no limit (it used to
/// wrap to 0 and show the root alone), a context past any file shows the whole file.
#[test]
fn bounds_past_the_native_types_answer_as_no_bound() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("a/b/c")).unwrap();
    std::fs::write(root.join("a/b/c/deep.txt"), "one\nneedle\nthree\n").unwrap();
    let spec = RootSpec {
        path: root.canonicalize().unwrap(),
        ..RootSpec::default()
    };
    let service = Service::new(
        None,
        EnvOverrides {
            state_dir: Some(dir.path().join("vault")),
            ..EnvOverrides::default()
        },
    );
    let call = |tool: &str, args: Value| {
        let result = service.call_tool(
            &spec,
            tool,
            &args.to_string(),
            Caller::Agent,
            &Cancel::new(),
        );
        assert!(!result.is_error, "{tool} {args}: {}", result.text);
        result.text
    };
    for huge in [json!(1u64 << 32), json!(u64::MAX)] {
        assert_eq!(
            call("redctx_tree", json!({"max_depth": huge})),
            call("redctx_tree", json!({"max_depth": 1000})),
        );
        assert_eq!(
            call("redctx_search", json!({"query": "needle", "context": huge})),
            call("redctx_search", json!({"query": "needle", "context": 1000})),
        );
    }
    assert!(call("redctx_tree", json!({"max_depth": u64::MAX})).contains("deep"));
}

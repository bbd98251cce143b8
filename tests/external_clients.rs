//! MCP clients we did not write, driving the real `redctx mcp` shim against a real daemon
//! on a temp root: the official Python SDK (`mcp`, in `.venv-clients/`) lists the tools
//! and calls every tool once (tests/external/python_sdk_client.py, once with the
//! `initialize` handshake and once with the SDK's default negotiation), and the MCP
//! Inspector CLI (npm, pinned in tests/external/node/) runs `tools/list` and two
//! `tools/call`s. Both check that the root's secret, email and person name come back as
//! placeholders and never raw.
//!
//! `scripts/setup-clients.sh` installs both clients (`scripts/test.sh` and `.ci/run` run
//! it). Without them these tests fail with that instruction; `REDCTX_SKIP_CLIENTS=1`
//! skips them explicitly (prints SKIPPED), for machines without network access.

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::fixtures::write;
use support::{Env, bins};

/// The raw values of the test root that must never reach a client.
const RAW: &[&str] = &[
    "superSecret1234",
    "alice.smith",
    "northwind-mail",
    "Taylor",
    "Reed",
];

/// Placeholder categories a read of `docs/notes.md` must show.
const CATEGORIES: &[&str] = &["SECRET", "EMAIL", "PERSON"];

/// The tools every client must see without `--enable-writes`, in order (the one list,
/// `redctx_proto::tools`, less the write tool).
fn tools() -> Vec<&'static str> {
    redctx_proto::tools::ALL
        .into_iter()
        .filter(|t| *t != redctx_proto::tools::SUBMIT_DOC)
        .collect()
}

/// How long one client run may take before it is killed and the test fails.
const CLIENT_DEADLINE: Duration = Duration::from_secs(180);

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn skipped(test: &str) -> bool {
    if std::env::var("REDCTX_SKIP_CLIENTS").as_deref() == Ok("1") {
        println!("SKIPPED {test}: REDCTX_SKIP_CLIENTS=1");
        return true;
    }
    false
}

/// `path` must exist, or the test fails saying how to install the external clients.
fn installed(path: PathBuf, what: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{what} is not installed ({} is missing): run `scripts/setup-clients.sh` \
         (or set REDCTX_SKIP_CLIENTS=1 to skip these tests locally)",
        path.display()
    );
    path
}

/// A small root in code mode (the default): a secret assignment, an email on a
/// non-documentation domain and a configured person, in a Markdown file, plus a code
/// file so listings and bundles have more than one entry.
fn make_root(env: &Env) -> PathBuf {
    let root = env.root_dir("ext", "kb");
    write(
        &root,
        ".agent-context-redactor.toml",
        "[redaction]\npeople = [\"Taylor Reed\"]\n",
    );
    write(
        &root,
        "docs/notes.md",
        "# Notes\n\npassword = superSecret1234\nContact: alice.smith@northwind-mail.io\nOwner: Taylor Reed\n",
    );
    write(
        &root,
        "src/main.rs",
        "fn main() {\n    println!(\"hello\");\n}\n",
    );
    root
}

/// Runs `cmd` to completion with a deadline: (success, stdout, stderr). A client that
/// hangs is killed and fails the test.
fn run_bounded(mut cmd: Command, what: &str) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("stdout");
    let err_path = dir.path().join("stderr");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {what}: {e}"));
    let deadline = Instant::now() + CLIENT_DEADLINE;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} did not finish within {CLIENT_DEADLINE:?}; stderr: {}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status.success(),
        std::fs::read_to_string(&out_path).unwrap_or_default(),
        std::fs::read_to_string(&err_path).unwrap_or_default(),
    )
}

#[test]
fn python_sdk_lists_tools_and_calls_each_tool_once() {
    if skipped("python_sdk_lists_tools_and_calls_each_tool_once") {
        return;
    }
    let python = installed(
        repo().join(".venv-clients/bin/python"),
        "The MCP Python SDK venv",
    );
    let env = Env::new();
    let root = make_root(&env);
    let mut c = Command::new(python);
    c.arg(repo().join("tests/external/python_sdk_client.py"));
    for raw in RAW {
        c.args(["--raw", raw]);
    }
    for cat in CATEGORIES {
        c.args(["--expect-placeholder", cat]);
    }
    c.arg("--")
        .arg(&bins().redctx)
        .args(["mcp", "--root"])
        .arg(&root);
    env.apply(&mut c);
    let (ok, out, err) = run_bounded(c, "the Python SDK client");
    assert!(ok, "Python SDK client failed:\n{out}\n{err}");
    print!("{out}");
    // One summary per session: the handshake and the SDK's default negotiation.
    assert_eq!(out.matches("11 calls ok").count(), 2, "{out}");
    assert!(
        out.contains("mode=legacy") && out.contains("mode=auto"),
        "{out}"
    );
}

/// An Inspector servers file naming `redctx mcp --root <root>` with this test's
/// environment (the file form keeps the shim's `--root` away from the Inspector's own
/// option parser).
fn inspector_config(env: &Env, root: &Path) -> PathBuf {
    let mut vars = serde_json::Map::new();
    for (k, v) in env.envs() {
        if let Some(v) = v {
            vars.insert(
                k.to_string_lossy().into_owned(),
                Value::String(v.to_string_lossy().into_owned()),
            );
        }
    }
    let config = json!({"mcpServers": {"redctx": {
        "command": bins().redctx,
        "args": ["mcp", "--root", root],
        "env": vars,
    }}});
    let path = env.dir.path().join("inspector.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    path
}

/// Runs the Inspector CLI with `method_args` and parses the JSON it prints.
fn inspector(env: &Env, config: &Path, method_args: &[&str]) -> Value {
    let cli = installed(
        repo().join(
            "tests/external/node/node_modules/@modelcontextprotocol/inspector/cli/build/cli.js",
        ),
        "The MCP Inspector CLI",
    );
    let mut c = Command::new("node");
    c.arg(cli)
        .arg("--cli")
        .arg("--config")
        .arg(config)
        .args(["--server", "redctx"])
        .args(method_args);
    env.apply(&mut c);
    let what = format!("the MCP Inspector CLI ({})", method_args.join(" "));
    let (ok, out, err) = run_bounded(c, &what);
    assert!(ok, "{what} failed:\n{out}\n{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{what} printed no JSON ({e}): {out}"))
}

/// Checks a `tools/call` result as the Inspector printed it: no error, the text repeated
/// in `structuredContent`, a placeholder of each of `categories`, no raw value anywhere.
#[track_caller]
fn check_content_answer<'a>(v: &'a Value, categories: &[&str]) -> &'a str {
    assert_eq!(v["isError"], json!(false), "{v:#}");
    let text = v["content"][0]["text"].as_str().expect("a text block");
    assert_eq!(v["content"].as_array().unwrap().len(), 1, "{v:#}");
    assert_eq!(v["structuredContent"]["text"].as_str(), Some(text));
    assert!(v["structuredContent"]["receipt"]["counts_by_category"].is_object());
    for cat in categories {
        let re = regex::Regex::new(&format!(r"\[{cat}_[0-9a-f]{{32}}\]")).unwrap();
        assert!(re.is_match(text), "no [{cat}_…] placeholder in {text}");
    }
    let all = v.to_string();
    for raw in RAW {
        assert!(
            !all.contains(raw),
            "a raw value reached the Inspector: {text}"
        );
    }
    text
}

#[test]
fn inspector_cli_lists_tools_and_calls_read_and_search() {
    if skipped("inspector_cli_lists_tools_and_calls_read_and_search") {
        return;
    }
    let env = Env::new();
    let root = make_root(&env);
    let config = inspector_config(&env, &root);

    let listed = inspector(&env, &config, &["--method", "tools/list"]);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools array")
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, tools());
    for t in listed["tools"].as_array().unwrap() {
        assert_eq!(
            t["inputSchema"]["additionalProperties"],
            json!(false),
            "{t}"
        );
        assert!(t["outputSchema"].is_object(), "{t}");
    }

    let read = inspector(
        &env,
        &config,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "redctx_read",
            "--tool-arg",
            "path=docs/notes.md",
        ],
    );
    let text = check_content_answer(&read, CATEGORIES);
    assert!(
        regex::Regex::new(r"^--- @p_[0-9a-f]{12} docs/notes\.md lines 1-5 ---\n")
            .unwrap()
            .is_match(text),
        "{text}"
    );

    // The Inspector sends every --tool-arg as a string, so this call uses string
    // arguments only.
    let search = inspector(
        &env,
        &config,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "redctx_search",
            "--tool-arg",
            "query=Owner",
        ],
    );
    let text = check_content_answer(&search, &["PERSON"]);
    assert!(
        regex::Regex::new(r"^@p_[0-9a-f]{12}:5:docs/notes\.md:Owner: \[PERSON_[0-9a-f]{32}\]\n$")
            .unwrap()
            .is_match(text),
        "{text}"
    );
}

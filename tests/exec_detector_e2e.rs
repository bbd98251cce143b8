//! End to end through `redctx mcp`, the CLI and a real daemon: an external detector
//! (`--detector exec=PROGRAM`, the test detector of `tests/detectors/`) redacts its finds
//! in every tool, receipts and `doctor` name it by its hello; a crash blocks the calls
//! that need it with `Detector failed.` and they recover once it is restarted; the
//! config's `plugged_detectors` list works (what a detector's hello protects is never
//! served), and the command line wins over it.

mod support;

use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::Env;
use support::fixtures::write;

fn program(dir: &Path, name: &str, args: &str) -> PathBuf {
    support::fixtures::test_detector(dir, name, args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_external_detector_redacts_in_every_tool_and_a_crash_fails_closed_then_recovers() {
    let env = Env::new();
    let root = env.root_dir("exec", "kb");
    write(
        &root,
        "notes/team.md",
        "Ask Zorblax Quux about EMP-4321 today.\nZorblax Quux agreed.\n",
    );
    write(&root, "src/app.py", "owner = 'EMP-4321'\n");
    let tools = tempfile::tempdir().unwrap();
    let flag = tools.path().join("crash");
    let prog = program(
        tools.path(),
        "ner",
        &format!(
            "--name test-ner --version 3 --crash-while {}",
            flag.display()
        ),
    );
    let spec = format!("exec={}", prog.display());
    let c = env.client(&root, &["--detector", &spec]).await;

    let read = c
        .call("redctx_read", json!({"path": "notes/team.md"}))
        .await;
    let text = read.ok();
    assert!(
        !text.contains("Zorblax") && !text.contains("EMP-4321"),
        "{text}"
    );
    assert_eq!(text.matches("[PERSON_").count(), 2, "{text}");
    assert_eq!(
        read.receipt["detectors"],
        json!([{"name": "test-ner", "version": "3", "nominated": 2, "positional": 0}])
    );
    let search = c.call("redctx_search", json!({"query": "agreed"})).await;
    assert!(search.ok().contains("[PERSON_"), "{}", search.text);
    assert!(!search.text.contains("Zorblax"));
    let bundle = c.call("redctx_bundle", json!({"paths": ["."]})).await;
    assert!(!bundle.ok().contains("EMP-4321"), "{}", bundle.text);
    let retrieve = c
        .call("redctx_retrieve", json!({"query": "owner agreed"}))
        .await;
    assert!(!retrieve.text.contains("EMP-4321") && !retrieve.text.contains("Zorblax"));
    let doctor = c.call("redctx_doctor", json!({})).await;
    assert!(
        doctor.ok().contains("\ndetectors: test-ner 3\n"),
        "{}",
        doctor.text
    );
    assert!(!doctor.text.contains(prog.to_str().unwrap()));
    let cat = env.ok_on(&root, &["--detector", &spec, "cat", "src/app.py"]);
    assert!(cat.contains("[ID_") && !cat.contains("EMP-4321"), "{cat}");

    // While the detector crashes on every text, a file it has not seen is refused
    // with the fixed sentence (never served with the built-in stages only).
    std::fs::write(&flag, "").unwrap();
    write(&root, "notes/new.md", "Zorblax Vorn joined.\n");
    let failed = c.call("redctx_read", json!({"path": "notes/new.md"})).await;
    assert_eq!(failed.err(), "Detector failed.");
    assert!(!failed.text.contains("Zorblax"));
    // Files it has seen are served from their findings.
    let seen = c
        .call("redctx_read", json!({"path": "notes/team.md"}))
        .await;
    assert!(!seen.ok().contains("Zorblax"));
    // Repaired: the restarted process answers (after its back-off).
    std::fs::remove_file(&flag).unwrap();
    let client = &c;
    let mut recovered = None;
    for _ in 0..400 {
        let r = client
            .call("redctx_read", json!({"path": "notes/new.md"}))
            .await;
        if !r.is_error {
            recovered = Some(r);
            break;
        }
        assert_eq!(r.err(), "Detector failed.");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let recovered = recovered.expect("the detector recovered");
    assert!(recovered.ok().contains("[PERSON_") && !recovered.text.contains("Zorblax"));
}

#[test]
fn the_config_list_is_used_unless_the_command_line_gives_detectors() {
    let env = Env::new();
    let root = env.root_dir("exec-config", "kb");
    write(&root, "a.md", "EMP-1111 and TICKET-22222.\n");
    let tools = root.join("detectors");
    std::fs::create_dir(&tools).unwrap();
    // The hello protects the model directory under the root.
    write(&root, "model/weights.txt", "EMP-9999 weights\n");
    program(
        &tools,
        "ner-program",
        &format!(
            "--name test-ner --version 1 --protect {}",
            root.join("model").display()
        ),
    );
    write(
        &root,
        "detectors/ids.toml",
        "[[patterns]]\ncategory = \"ID\"\nregex = 'TICKET-\\d{5}'\n",
    );
    // Relative arguments are resolved against the config file's directory.
    write(
        &root,
        ".agent-context-redactor.toml",
        "[redaction]\nplugged_detectors = [\"exec=detectors/ner-program\", \"patterns=detectors/ids.toml\"]\n",
    );
    let out = env.ok_on(&root, &["cat", "a.md"]);
    assert!(
        !out.contains("EMP-1111") && !out.contains("TICKET-22222"),
        "{out}"
    );
    let doctor = env.ok_on(&root, &["doctor"]);
    assert!(
        doctor.contains("detectors: test-ner 1, patterns 1"),
        "{doctor}"
    );
    // The detectors' files are never served.
    let tree = env.ok_on(&root, &["ls", "-r", "."]);
    assert!(
        !tree.contains("ids.toml") && !tree.contains("ner-program"),
        "{tree}"
    );
    assert!(!tree.contains("weights"), "{tree}");
    let (code, out, _) = env.run(&["--root", root.to_str().unwrap(), "cat", "model/weights.txt"]);
    assert!(code != 0 && !out.contains("weights"), "{out}");

    // The command line wins: only its detector runs.
    let rules = tempfile::tempdir().unwrap();
    let other = rules.path().join("other.toml");
    std::fs::write(
        &other,
        "[[patterns]]\ncategory = \"ID\"\nregex = 'EMP-\\d{4}'\n",
    )
    .unwrap();
    let flag = format!("patterns={}", other.display());
    let out = env.ok_on(&root, &["--detector", &flag, "cat", "a.md"]);
    assert!(
        !out.contains("EMP-1111") && out.contains("TICKET-22222"),
        "{out}"
    );

    // A bad entry blocks the root with a sentence that names no argument.
    write(
        &root,
        ".agent-context-redactor.toml",
        "[redaction]\nplugged_detectors = [\"gliner=/secret/model\"]\n",
    );
    let (code, _, err) = env.run(&["--root", root.to_str().unwrap(), "cat", "a.md"]);
    assert_ne!(code, 0);
    assert!(!err.contains("secret"), "{err}");
    let (_, status, _) = env.run(&["status", "--root", root.to_str().unwrap()]);
    assert!(
        status.contains("Unknown detector. Name: gliner. Available: exec, patterns."),
        "{status}"
    );
    assert!(!status.contains("secret"), "{status}");
}

/// The shipped Presidio adapter, run by the daemon as an external detector: what
/// Presidio's recognisers find (here an `example.org` address and a private IP, which the
/// built-in stages leave alone) is redacted in reads and searches, and the receipt names
/// Presidio by its hello.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_presidio_adapter_redacts_through_the_daemon() {
    let env = Env::new();
    let root = env.root_dir("presidio", "kb");
    let line = "Write to maria.santos@example.org, server 10.20.30.40.\n";
    write(&root, "notes/contact.md", line);
    let plain = env.ok_on(&root, &["cat", "notes/contact.md"]);
    assert!(plain.contains("maria.santos@example.org") && plain.contains("10.20.30.40"));

    let tools = tempfile::tempdir().unwrap();
    let Some(adapter) = support::presidio::adapter(tools.path()) else {
        return;
    };
    let spec = format!("exec={}", adapter.display());
    let c = env.client(&root, &["--detector", &spec]).await;
    let read = c
        .call("redctx_read", json!({"path": "notes/contact.md"}))
        .await;
    let text = read.ok();
    assert!(
        !text.contains("maria.santos") && !text.contains("10.20.30.40"),
        "{text}"
    );
    assert!(text.contains("[EMAIL_") && text.contains("[IP_"), "{text}");
    let detectors = read.receipt["detectors"].as_array().expect("detectors");
    assert_eq!(detectors.len(), 1, "{detectors:?}");
    assert_eq!(detectors[0]["name"], "presidio");
    let version = detectors[0]["version"].as_str().unwrap();
    assert!(version.starts_with("2.2.366/"), "{version}");
    let search = c.call("redctx_search", json!({"query": "server"})).await;
    assert!(search.ok().contains("[EMAIL_"), "{}", search.text);
    assert!(!search.text.contains("maria.santos"));
}

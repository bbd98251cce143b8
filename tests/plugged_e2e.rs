//! End to end through `redctx mcp` and the CLI: a root with a `patterns` rules file
//! (spec 5.12) redacts its ids in every tool, the receipt lists the detector, the rules
//! file is never served, start-up errors never echo an argument, and a broken rules
//! file blocks access until repaired.

mod support;

use serde_json::json;
use support::Env;
use support::fixtures::write;

const RULES: &str = "[[patterns]]\ncategory = \"ID\"\nregex = 'TICKET-\\d{5}'\n";
const BLOCKED_RELOAD: &str = "Redaction configuration could not be reloaded safely. Repair the local config and referenced term files, then retry. Context access is blocked.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patterns_file_redacts_ids_in_every_tool_and_is_never_served() {
    let env = Env::new();
    let root = env.root_dir("plugged", "kb");
    write(
        &root,
        "notes/todo.md",
        "Fix TICKET-12345 soon; see TICKET-12345.\n",
    );
    write(&root, "private-rules/ids.toml", RULES);
    let rules = root.join("private-rules/ids.toml");
    let flag = format!("patterns={}", rules.display());
    let c = env.client(&root, &["--detector", &flag]).await;

    let read = c
        .call("redctx_read", json!({"path": "notes/todo.md"}))
        .await;
    assert!(!read.ok().contains("TICKET-12345"), "{}", read.text);
    assert!(read.ok().contains("[ID_"), "{}", read.text);
    assert_eq!(
        read.receipt["detectors"],
        json!([{"name": "patterns", "version": "1", "nominated": 1, "positional": 0}])
    );
    assert_eq!(read.receipt["counts_by_category"]["ID"], 2);

    let search = c.call("redctx_search", json!({"query": "soon"})).await;
    assert!(search.ok().contains("[ID_"), "{}", search.text);
    assert!(!search.text.contains("TICKET-12345"));
    let bundle = c.call("redctx_bundle", json!({"paths": ["."]})).await;
    assert!(!bundle.ok().contains("TICKET-"), "{}", bundle.text);
    assert!(
        !bundle.text.contains("regex"),
        "rules served: {}",
        bundle.text
    );

    let doctor = c.call("redctx_doctor", json!({})).await;
    assert!(
        doctor.ok().contains("\ndetectors: patterns 1\n"),
        "{}",
        doctor.text
    );
    assert!(!doctor.text.contains("ids.toml"));
    let audit = c.call("redctx_audit", json!({"format": "json"})).await;
    assert!(
        audit
            .ok()
            .contains("1 active in addition to the built-in baseline"),
        "{}",
        audit.text
    );

    // The rules file: not listed, not readable, even by the operator.
    let list = c.call("redctx_list", json!({"path": "."})).await;
    assert!(!list.ok().contains("ids.toml"), "{}", list.text);
    let r = c
        .call("redctx_read", json!({"path": "private-rules/ids.toml"}))
        .await;
    assert!(!r.err().contains("TICKET"));
    let (code, out, _) = env.run(&[
        "--root",
        root.to_str().unwrap(),
        "--detector",
        &flag,
        "cat",
        "private-rules/ids.toml",
    ]);
    assert_ne!(code, 0);
    assert!(!out.contains("TICKET"));

    // A rules file broken after start blocks every call; repaired, access returns.
    std::fs::write(
        &rules,
        "[[patterns]]\ncategory = \"ID\"\nregex = '(TICKET)?'\n",
    )
    .unwrap();
    let blocked = c
        .call("redctx_read", json!({"path": "notes/todo.md"}))
        .await;
    assert_eq!(blocked.err(), BLOCKED_RELOAD);
    std::fs::write(&rules, RULES).unwrap();
    let again = c
        .call("redctx_read", json!({"path": "notes/todo.md"}))
        .await;
    assert!(again.ok().contains("[ID_") && !again.text.contains("TICKET-12345"));
}

#[test]
fn start_up_errors_name_the_detector_never_its_argument() {
    let env = Env::new();
    let root = env.root_dir("plugged-errors", "kb");
    write(&root, "../rules.toml", RULES);
    let first = format!("patterns={}", root.join("../rules.toml").display());
    let root = root.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--detector", "gliner=/private/secret-model"],
            "Unknown detector. Name: gliner. Available: exec, patterns.",
        ),
        (
            &[
                "--detector",
                &first,
                "--detector",
                "patterns=/private/b.toml",
            ],
            "Detector 'patterns' was given more than once.",
        ),
        (
            &["--detector", "patterns=/private/secret-rules.toml"],
            "The patterns detector rules file could not be read.",
        ),
        (
            &["--detector", "bad name=/private/x"],
            "Invalid --detector value; expected NAME or NAME=ARGUMENT.",
        ),
    ];
    for (flags, want) in cases {
        for command in [
            &["mcp", "--root", root][..],
            &["--root", root, "ls", "."][..],
        ] {
            let (mcp, rest) = if command[0] == "mcp" {
                (command.to_vec(), Vec::new())
            } else {
                (command[..2].to_vec(), command[2..].to_vec())
            };
            let args: Vec<&str> = mcp
                .iter()
                .chain(flags.iter())
                .chain(rest.iter())
                .copied()
                .collect();
            let (code, out, err) = env.run(&args);
            assert_eq!(code, 1, "{args:?}: {err}");
            assert!(err.contains(want), "{args:?}: {err}");
            assert!(
                !err.contains("/private") && !out.contains("/private"),
                "{err}"
            );
        }
    }
}
